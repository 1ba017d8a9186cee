import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Problem set 2 · Memory: the 16 bytes, ZeRO, activations, recompute")

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION, problem_ui, ui
    from labs.core.scenarios.problems_memory import CHAPTER

    LAB = CHAPTER.name


@app.cell(hide_code=True)
def _():
    problem_ui.header(CHAPTER)
    return


@app.cell
def _():
    student_input = ui.student_identity()
    student_input
    return (student_input,)


@app.cell
def _():
    pin_input = ui.student_pin()
    pin_input
    return (pin_input,)


@app.cell
def _(pin_input, student_input):
    identity = ui.identity(student_input.value, pin_input.value)
    return (identity,)


# Live lecture (labs.core.lecture): the instructor can hold a problem's answer.
@app.cell
def _():
    lecture_clock, held_now, set_held = ui.live_lecture(LAB)
    lecture_clock
    return held_now, lecture_clock, set_held


@app.cell
def _(held_now, lecture_clock, set_held):
    ui.poll_lecture(LAB, lecture_clock, held_now, set_held)
    return


# Your numbers are drawn from your id (labs.variants).
@app.cell
def _(student_input):
    variant = ui.lab_variant(LAB, student_input.value)
    return (variant,)


# Each problem's commitment as the ledger holds it, set by its commit cell only when it changes:
# the submit and the HUD read this state and re-run only when a commitment changes.
@app.cell
def _():
    get_commitments, set_commitments = mo.state({})
    publish = problem_ui.publisher(set_commitments)
    return get_commitments, publish


# Each problem is two cells: its heading, answer field and commit buttons; and its commit cell, which
# reads the answer through <problem>_answer, not the widget, so a click on an answer runs no cell (a
# commit or a skip does), and shows what the ledger holds and, once committed, the solution.


# Problem 1
@app.cell
def _(variant):
    state_bytes_question = problem_ui.widget(variant.questions["state_bytes"])
    state_bytes_answer = problem_ui.answer_of(state_bytes_question)
    state_bytes_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "state_bytes", state_bytes_question, state_bytes_commit_buttons)
    return state_bytes_answer, state_bytes_commit_buttons, state_bytes_question


@app.cell
def _(held_now, identity, state_bytes_answer, state_bytes_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "state_bytes", state_bytes_answer, state_bytes_commit_buttons.value, variant=variant, held=held_now())
    publish("state_bytes", _made)
    problem_ui.committed(CHAPTER, variant, "state_bytes", _row, _made)
    return


# Problem 2
@app.cell
def _(variant):
    zero_stage_question = problem_ui.widget(variant.questions["zero_stage"])
    zero_stage_answer = problem_ui.answer_of(zero_stage_question)
    zero_stage_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "zero_stage", zero_stage_question, zero_stage_commit_buttons)
    return zero_stage_answer, zero_stage_commit_buttons, zero_stage_question


@app.cell
def _(held_now, identity, zero_stage_answer, zero_stage_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "zero_stage", zero_stage_answer, zero_stage_commit_buttons.value, variant=variant, held=held_now())
    publish("zero_stage", _made)
    problem_ui.committed(CHAPTER, variant, "zero_stage", _row, _made)
    return


# Problem 3
@app.cell
def _(variant):
    fewest_gpus_question = problem_ui.widget(variant.questions["fewest_gpus"])
    fewest_gpus_answer = problem_ui.answer_of(fewest_gpus_question)
    fewest_gpus_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "fewest_gpus", fewest_gpus_question, fewest_gpus_commit_buttons)
    return fewest_gpus_answer, fewest_gpus_commit_buttons, fewest_gpus_question


@app.cell
def _(held_now, identity, fewest_gpus_answer, fewest_gpus_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "fewest_gpus", fewest_gpus_answer, fewest_gpus_commit_buttons.value, variant=variant, held=held_now())
    publish("fewest_gpus", _made)
    problem_ui.committed(CHAPTER, variant, "fewest_gpus", _row, _made)
    return


# Problem 4
@app.cell
def _(variant):
    activations_question = problem_ui.widget(variant.questions["activations"])
    activations_answer = problem_ui.answer_of(activations_question)
    activations_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "activations", activations_question, activations_commit_buttons)
    return activations_answer, activations_commit_buttons, activations_question


@app.cell
def _(held_now, identity, activations_answer, activations_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "activations", activations_answer, activations_commit_buttons.value, variant=variant, held=held_now())
    publish("activations", _made)
    problem_ui.committed(CHAPTER, variant, "activations", _row, _made)
    return


# Problem 5
@app.cell
def _(variant):
    cp_no_flash_question = problem_ui.widget(variant.questions["cp_no_flash"])
    cp_no_flash_answer = problem_ui.answer_of(cp_no_flash_question)
    cp_no_flash_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "cp_no_flash", cp_no_flash_question, cp_no_flash_commit_buttons)
    return cp_no_flash_answer, cp_no_flash_commit_buttons, cp_no_flash_question


@app.cell
def _(held_now, identity, cp_no_flash_answer, cp_no_flash_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "cp_no_flash", cp_no_flash_answer, cp_no_flash_commit_buttons.value, variant=variant, held=held_now())
    publish("cp_no_flash", _made)
    problem_ui.committed(CHAPTER, variant, "cp_no_flash", _row, _made)
    return


# Problem 6
@app.cell
def _(variant):
    segments_question = problem_ui.widget(variant.questions["segments"])
    segments_answer = problem_ui.answer_of(segments_question)
    segments_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "segments", segments_question, segments_commit_buttons)
    return segments_answer, segments_commit_buttons, segments_question


@app.cell
def _(held_now, identity, segments_answer, segments_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "segments", segments_answer, segments_commit_buttons.value, variant=variant, held=held_now())
    publish("segments", _made)
    problem_ui.committed(CHAPTER, variant, "segments", _row, _made)
    return


# Problem 7
@app.cell
def _(variant):
    sgd_saving_question = problem_ui.widget(variant.questions["sgd_saving"])
    sgd_saving_answer = problem_ui.answer_of(sgd_saving_question)
    sgd_saving_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "sgd_saving", sgd_saving_question, sgd_saving_commit_buttons)
    return sgd_saving_answer, sgd_saving_commit_buttons, sgd_saving_question


@app.cell
def _(held_now, identity, sgd_saving_answer, sgd_saving_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "sgd_saving", sgd_saving_answer, sgd_saving_commit_buttons.value, variant=variant, held=held_now())
    publish("sgd_saving", _made)
    problem_ui.committed(CHAPTER, variant, "sgd_saving", _row, _made)
    return


# Problem 8
@app.cell
def _(variant):
    zero_fit_question = problem_ui.widget(variant.questions["zero_fit"])
    zero_fit_answer = problem_ui.answer_of(zero_fit_question)
    zero_fit_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "zero_fit", zero_fit_question, zero_fit_commit_buttons)
    return zero_fit_answer, zero_fit_commit_buttons, zero_fit_question


@app.cell
def _(held_now, identity, zero_fit_answer, zero_fit_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "zero_fit", zero_fit_answer, zero_fit_commit_buttons.value, variant=variant, held=held_now())
    publish("zero_fit", _made)
    problem_ui.committed(CHAPTER, variant, "zero_fit", _row, _made)
    return


@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit my answers to the ledger")
    return (submit_button,)


@app.cell
def _(get_commitments, identity, submit_button, variant):
    committed = get_commitments()
    ui.gate(held=tuple(committed.values()))
    _pred = {_pid: _made.answer for _pid, _made in committed.items()}
    _view, submitted = ui.submit_to_ledger(identity, submit_button, lambda: [ui.ledger_step(LAB, "answers", {}, _pred, CHAPTER.outcomes, "the answers", variant)])
    mo.vstack([_view, ui.hud({"engine": ENGINE_VERSION, **problem_ui.progress(CHAPTER, committed), "ledger": "saved" if submitted else "not submitted"})])
    return committed, submitted


if __name__ == "__main__":
    app.run()

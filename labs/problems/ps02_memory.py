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


# Each problem: a cell with its heading, its answer field and its commit buttons; its commit cell,
# which reads the answer through <problem>_answer, not the widget, so a click on an answer runs no
# cell (a commit or a skip does); its solution, shown after the commit.


# Problem 1
@app.cell
def _(variant):
    state_bytes_question = problem_ui.widget(variant.questions["state_bytes"])
    state_bytes_answer = problem_ui.answer_of(state_bytes_question)
    state_bytes_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "state_bytes", state_bytes_question)
    return state_bytes_answer, state_bytes_commit_buttons, state_bytes_question


@app.cell
def _(held_now, identity, state_bytes_answer, state_bytes_commit_buttons, publish, variant):
    _row, state_bytes_committed = ui.commit_prediction(identity, LAB, "state_bytes", state_bytes_answer, state_bytes_commit_buttons, variant=variant, held=held_now())
    publish("state_bytes", state_bytes_committed)
    _row
    return (state_bytes_committed,)


@app.cell(hide_code=True)
def _(state_bytes_committed, variant):
    ui.gate(state_bytes_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "state_bytes", state_bytes_committed)
    return


# Problem 2
@app.cell
def _(variant):
    zero_stage_question = problem_ui.widget(variant.questions["zero_stage"])
    zero_stage_answer = problem_ui.answer_of(zero_stage_question)
    zero_stage_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "zero_stage", zero_stage_question)
    return zero_stage_answer, zero_stage_commit_buttons, zero_stage_question


@app.cell
def _(held_now, identity, zero_stage_answer, zero_stage_commit_buttons, publish, variant):
    _row, zero_stage_committed = ui.commit_prediction(identity, LAB, "zero_stage", zero_stage_answer, zero_stage_commit_buttons, variant=variant, held=held_now())
    publish("zero_stage", zero_stage_committed)
    _row
    return (zero_stage_committed,)


@app.cell(hide_code=True)
def _(zero_stage_committed, variant):
    ui.gate(zero_stage_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "zero_stage", zero_stage_committed)
    return


# Problem 3
@app.cell
def _(variant):
    fewest_gpus_question = problem_ui.widget(variant.questions["fewest_gpus"])
    fewest_gpus_answer = problem_ui.answer_of(fewest_gpus_question)
    fewest_gpus_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "fewest_gpus", fewest_gpus_question)
    return fewest_gpus_answer, fewest_gpus_commit_buttons, fewest_gpus_question


@app.cell
def _(held_now, identity, fewest_gpus_answer, fewest_gpus_commit_buttons, publish, variant):
    _row, fewest_gpus_committed = ui.commit_prediction(identity, LAB, "fewest_gpus", fewest_gpus_answer, fewest_gpus_commit_buttons, variant=variant, held=held_now())
    publish("fewest_gpus", fewest_gpus_committed)
    _row
    return (fewest_gpus_committed,)


@app.cell(hide_code=True)
def _(fewest_gpus_committed, variant):
    ui.gate(fewest_gpus_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "fewest_gpus", fewest_gpus_committed)
    return


# Problem 4
@app.cell
def _(variant):
    activations_question = problem_ui.widget(variant.questions["activations"])
    activations_answer = problem_ui.answer_of(activations_question)
    activations_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "activations", activations_question)
    return activations_answer, activations_commit_buttons, activations_question


@app.cell
def _(held_now, identity, activations_answer, activations_commit_buttons, publish, variant):
    _row, activations_committed = ui.commit_prediction(identity, LAB, "activations", activations_answer, activations_commit_buttons, variant=variant, held=held_now())
    publish("activations", activations_committed)
    _row
    return (activations_committed,)


@app.cell(hide_code=True)
def _(activations_committed, variant):
    ui.gate(activations_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "activations", activations_committed)
    return


# Problem 5
@app.cell
def _(variant):
    cp_no_flash_question = problem_ui.widget(variant.questions["cp_no_flash"])
    cp_no_flash_answer = problem_ui.answer_of(cp_no_flash_question)
    cp_no_flash_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "cp_no_flash", cp_no_flash_question)
    return cp_no_flash_answer, cp_no_flash_commit_buttons, cp_no_flash_question


@app.cell
def _(held_now, identity, cp_no_flash_answer, cp_no_flash_commit_buttons, publish, variant):
    _row, cp_no_flash_committed = ui.commit_prediction(identity, LAB, "cp_no_flash", cp_no_flash_answer, cp_no_flash_commit_buttons, variant=variant, held=held_now())
    publish("cp_no_flash", cp_no_flash_committed)
    _row
    return (cp_no_flash_committed,)


@app.cell(hide_code=True)
def _(cp_no_flash_committed, variant):
    ui.gate(cp_no_flash_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "cp_no_flash", cp_no_flash_committed)
    return


# Problem 6
@app.cell
def _(variant):
    segments_question = problem_ui.widget(variant.questions["segments"])
    segments_answer = problem_ui.answer_of(segments_question)
    segments_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "segments", segments_question)
    return segments_answer, segments_commit_buttons, segments_question


@app.cell
def _(held_now, identity, segments_answer, segments_commit_buttons, publish, variant):
    _row, segments_committed = ui.commit_prediction(identity, LAB, "segments", segments_answer, segments_commit_buttons, variant=variant, held=held_now())
    publish("segments", segments_committed)
    _row
    return (segments_committed,)


@app.cell(hide_code=True)
def _(segments_committed, variant):
    ui.gate(segments_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "segments", segments_committed)
    return


# Problem 7
@app.cell
def _(variant):
    sgd_saving_question = problem_ui.widget(variant.questions["sgd_saving"])
    sgd_saving_answer = problem_ui.answer_of(sgd_saving_question)
    sgd_saving_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "sgd_saving", sgd_saving_question)
    return sgd_saving_answer, sgd_saving_commit_buttons, sgd_saving_question


@app.cell
def _(held_now, identity, sgd_saving_answer, sgd_saving_commit_buttons, publish, variant):
    _row, sgd_saving_committed = ui.commit_prediction(identity, LAB, "sgd_saving", sgd_saving_answer, sgd_saving_commit_buttons, variant=variant, held=held_now())
    publish("sgd_saving", sgd_saving_committed)
    _row
    return (sgd_saving_committed,)


@app.cell(hide_code=True)
def _(sgd_saving_committed, variant):
    ui.gate(sgd_saving_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "sgd_saving", sgd_saving_committed)
    return


# Problem 8
@app.cell
def _(variant):
    zero_fit_question = problem_ui.widget(variant.questions["zero_fit"])
    zero_fit_answer = problem_ui.answer_of(zero_fit_question)
    zero_fit_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "zero_fit", zero_fit_question)
    return zero_fit_answer, zero_fit_commit_buttons, zero_fit_question


@app.cell
def _(held_now, identity, zero_fit_answer, zero_fit_commit_buttons, publish, variant):
    _row, zero_fit_committed = ui.commit_prediction(identity, LAB, "zero_fit", zero_fit_answer, zero_fit_commit_buttons, variant=variant, held=held_now())
    publish("zero_fit", zero_fit_committed)
    _row
    return (zero_fit_committed,)


@app.cell(hide_code=True)
def _(zero_fit_committed, variant):
    ui.gate(zero_fit_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "zero_fit", zero_fit_committed)
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
    _view
    return committed, submitted


@app.cell
def _(committed, submitted):
    ui.hud({"engine": ENGINE_VERSION, **problem_ui.progress(CHAPTER, committed), "ledger": "saved" if submitted else "not submitted"})
    return


if __name__ == "__main__":
    app.run()

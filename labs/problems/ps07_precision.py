import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Problem set 7 · Precision")

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION, problem_ui, ui
    from labs.core.scenarios.problems_precision import CHAPTER

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
    weight_bytes_question = problem_ui.widget(variant.questions["weight_bytes"])
    weight_bytes_answer = problem_ui.answer_of(weight_bytes_question)
    weight_bytes_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "weight_bytes", weight_bytes_question, weight_bytes_commit_buttons)
    return weight_bytes_answer, weight_bytes_commit_buttons, weight_bytes_question


@app.cell
def _(held_now, identity, weight_bytes_answer, weight_bytes_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "weight_bytes", weight_bytes_answer, weight_bytes_commit_buttons.value, variant=variant, held=held_now())
    publish("weight_bytes", _made)
    problem_ui.committed(CHAPTER, variant, "weight_bytes", _row, _made)
    return


# Problem 2
@app.cell
def _(variant):
    largest_question = problem_ui.widget(variant.questions["largest"])
    largest_answer = problem_ui.answer_of(largest_question)
    largest_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "largest", largest_question, largest_commit_buttons)
    return largest_answer, largest_commit_buttons, largest_question


@app.cell
def _(held_now, identity, largest_answer, largest_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "largest", largest_answer, largest_commit_buttons.value, variant=variant, held=held_now())
    publish("largest", _made)
    problem_ui.committed(CHAPTER, variant, "largest", _row, _made)
    return


# Problem 3
@app.cell
def _(variant):
    step_at_one_question = problem_ui.widget(variant.questions["step_at_one"])
    step_at_one_answer = problem_ui.answer_of(step_at_one_question)
    step_at_one_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "step_at_one", step_at_one_question, step_at_one_commit_buttons)
    return step_at_one_answer, step_at_one_commit_buttons, step_at_one_question


@app.cell
def _(held_now, identity, step_at_one_answer, step_at_one_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "step_at_one", step_at_one_answer, step_at_one_commit_buttons.value, variant=variant, held=held_now())
    publish("step_at_one", _made)
    problem_ui.committed(CHAPTER, variant, "step_at_one", _row, _made)
    return


# Problem 4
@app.cell
def _(variant):
    loss_scale_question = problem_ui.widget(variant.questions["loss_scale"])
    loss_scale_answer = problem_ui.answer_of(loss_scale_question)
    loss_scale_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "loss_scale", loss_scale_question, loss_scale_commit_buttons)
    return loss_scale_answer, loss_scale_commit_buttons, loss_scale_question


@app.cell
def _(held_now, identity, loss_scale_answer, loss_scale_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "loss_scale", loss_scale_answer, loss_scale_commit_buttons.value, variant=variant, held=held_now())
    publish("loss_scale", _made)
    problem_ui.committed(CHAPTER, variant, "loss_scale", _row, _made)
    return


# Problem 5
@app.cell
def _(variant):
    update_lost_question = problem_ui.widget(variant.questions["update_lost"])
    update_lost_answer = problem_ui.answer_of(update_lost_question)
    update_lost_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "update_lost", update_lost_question, update_lost_commit_buttons)
    return update_lost_answer, update_lost_commit_buttons, update_lost_question


@app.cell
def _(held_now, identity, update_lost_answer, update_lost_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "update_lost", update_lost_answer, update_lost_commit_buttons.value, variant=variant, held=held_now())
    publish("update_lost", _made)
    problem_ui.committed(CHAPTER, variant, "update_lost", _row, _made)
    return


# Problem 6
@app.cell
def _(variant):
    block_bytes_question = problem_ui.widget(variant.questions["block_bytes"])
    block_bytes_answer = problem_ui.answer_of(block_bytes_question)
    block_bytes_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "block_bytes", block_bytes_question, block_bytes_commit_buttons)
    return block_bytes_answer, block_bytes_commit_buttons, block_bytes_question


@app.cell
def _(held_now, identity, block_bytes_answer, block_bytes_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "block_bytes", block_bytes_answer, block_bytes_commit_buttons.value, variant=variant, held=held_now())
    publish("block_bytes", _made)
    problem_ui.committed(CHAPTER, variant, "block_bytes", _row, _made)
    return


# Problem 7
@app.cell
def _(variant):
    fp8_cache_question = problem_ui.widget(variant.questions["fp8_cache"])
    fp8_cache_answer = problem_ui.answer_of(fp8_cache_question)
    fp8_cache_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "fp8_cache", fp8_cache_question, fp8_cache_commit_buttons)
    return fp8_cache_answer, fp8_cache_commit_buttons, fp8_cache_question


@app.cell
def _(held_now, identity, fp8_cache_answer, fp8_cache_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "fp8_cache", fp8_cache_answer, fp8_cache_commit_buttons.value, variant=variant, held=held_now())
    publish("fp8_cache", _made)
    problem_ui.committed(CHAPTER, variant, "fp8_cache", _row, _made)
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

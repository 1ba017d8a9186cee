import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Problem set 4 · Tensor and sequence parallelism")

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION, problem_ui, ui
    from labs.core.scenarios.problems_tensorparallel import CHAPTER

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
    tp_bytes_question = problem_ui.widget(variant.questions["tp_bytes"])
    tp_bytes_answer = problem_ui.answer_of(tp_bytes_question)
    tp_bytes_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "tp_bytes", tp_bytes_question, tp_bytes_commit_buttons)
    return tp_bytes_answer, tp_bytes_commit_buttons, tp_bytes_question


@app.cell
def _(held_now, identity, tp_bytes_answer, tp_bytes_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "tp_bytes", tp_bytes_answer, tp_bytes_commit_buttons.value, variant=variant, held=held_now())
    publish("tp_bytes", _made)
    problem_ui.committed(CHAPTER, variant, "tp_bytes", _row, _made)
    return


# Problem 2
@app.cell
def _(variant):
    sp_regather_question = problem_ui.widget(variant.questions["sp_regather"])
    sp_regather_answer = problem_ui.answer_of(sp_regather_question)
    sp_regather_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "sp_regather", sp_regather_question, sp_regather_commit_buttons)
    return sp_regather_answer, sp_regather_commit_buttons, sp_regather_question


@app.cell
def _(held_now, identity, sp_regather_answer, sp_regather_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "sp_regather", sp_regather_answer, sp_regather_commit_buttons.value, variant=variant, held=held_now())
    publish("sp_regather", _made)
    problem_ui.committed(CHAPTER, variant, "sp_regather", _row, _made)
    return


# Problem 3
@app.cell
def _(variant):
    sp_time_question = problem_ui.widget(variant.questions["sp_time"])
    sp_time_answer = problem_ui.answer_of(sp_time_question)
    sp_time_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "sp_time", sp_time_question, sp_time_commit_buttons)
    return sp_time_answer, sp_time_commit_buttons, sp_time_question


@app.cell
def _(held_now, identity, sp_time_answer, sp_time_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "sp_time", sp_time_answer, sp_time_commit_buttons.value, variant=variant, held=held_now())
    publish("sp_time", _made)
    problem_ui.committed(CHAPTER, variant, "sp_time", _row, _made)
    return


# Problem 4
@app.cell
def _(variant):
    tp_hiding_question = problem_ui.widget(variant.questions["tp_hiding"])
    tp_hiding_answer = problem_ui.answer_of(tp_hiding_question)
    tp_hiding_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "tp_hiding", tp_hiding_question, tp_hiding_commit_buttons)
    return tp_hiding_answer, tp_hiding_commit_buttons, tp_hiding_question


@app.cell
def _(held_now, identity, tp_hiding_answer, tp_hiding_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "tp_hiding", tp_hiding_answer, tp_hiding_commit_buttons.value, variant=variant, held=held_now())
    publish("tp_hiding", _made)
    problem_ui.committed(CHAPTER, variant, "tp_hiding", _row, _made)
    return


# Problem 5
@app.cell
def _(variant):
    tp_across_question = problem_ui.widget(variant.questions["tp_across"])
    tp_across_answer = problem_ui.answer_of(tp_across_question)
    tp_across_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "tp_across", tp_across_question, tp_across_commit_buttons)
    return tp_across_answer, tp_across_commit_buttons, tp_across_question


@app.cell
def _(held_now, identity, tp_across_answer, tp_across_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "tp_across", tp_across_answer, tp_across_commit_buttons.value, variant=variant, held=held_now())
    publish("tp_across", _made)
    problem_ui.committed(CHAPTER, variant, "tp_across", _row, _made)
    return


# Problem 6
@app.cell
def _(variant):
    sp_saving_question = problem_ui.widget(variant.questions["sp_saving"])
    sp_saving_answer = problem_ui.answer_of(sp_saving_question)
    sp_saving_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "sp_saving", sp_saving_question, sp_saving_commit_buttons)
    return sp_saving_answer, sp_saving_commit_buttons, sp_saving_question


@app.cell
def _(held_now, identity, sp_saving_answer, sp_saving_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "sp_saving", sp_saving_answer, sp_saving_commit_buttons.value, variant=variant, held=held_now())
    publish("sp_saving", _made)
    problem_ui.committed(CHAPTER, variant, "sp_saving", _row, _made)
    return


# Problem 7
@app.cell
def _(variant):
    fit_question = problem_ui.widget(variant.questions["fit"])
    fit_answer = problem_ui.answer_of(fit_question)
    fit_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "fit", fit_question, fit_commit_buttons)
    return fit_answer, fit_commit_buttons, fit_question


@app.cell
def _(held_now, identity, fit_answer, fit_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "fit", fit_answer, fit_commit_buttons.value, variant=variant, held=held_now())
    publish("fit", _made)
    problem_ui.committed(CHAPTER, variant, "fit", _row, _made)
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

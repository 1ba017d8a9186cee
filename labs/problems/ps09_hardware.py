import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Problem set 9 · Hardware: rooflines, NVLink domains, NICs")

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION, problem_ui, ui
    from labs.core.scenarios.problems_hardware import CHAPTER

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
    intensity_question = problem_ui.widget(variant.questions["intensity"])
    intensity_answer = problem_ui.answer_of(intensity_question)
    intensity_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "intensity", intensity_question, intensity_commit_buttons)
    return intensity_answer, intensity_commit_buttons, intensity_question


@app.cell
def _(held_now, identity, intensity_answer, intensity_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "intensity", intensity_answer, intensity_commit_buttons.value, variant=variant, held=held_now())
    publish("intensity", _made)
    problem_ui.committed(CHAPTER, variant, "intensity", _row, _made)
    return


# Problem 2
@app.cell
def _(variant):
    ridge_question = problem_ui.widget(variant.questions["ridge"])
    ridge_answer = problem_ui.answer_of(ridge_question)
    ridge_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "ridge", ridge_question, ridge_commit_buttons)
    return ridge_answer, ridge_commit_buttons, ridge_question


@app.cell
def _(held_now, identity, ridge_answer, ridge_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "ridge", ridge_answer, ridge_commit_buttons.value, variant=variant, held=held_now())
    publish("ridge", _made)
    problem_ui.committed(CHAPTER, variant, "ridge", _row, _made)
    return


# Problem 3
@app.cell
def _(variant):
    bound_question = problem_ui.widget(variant.questions["bound"])
    bound_answer = problem_ui.answer_of(bound_question)
    bound_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "bound", bound_question, bound_commit_buttons)
    return bound_answer, bound_commit_buttons, bound_question


@app.cell
def _(held_now, identity, bound_answer, bound_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "bound", bound_answer, bound_commit_buttons.value, variant=variant, held=held_now())
    publish("bound", _made)
    problem_ui.committed(CHAPTER, variant, "bound", _row, _made)
    return


# Problem 4
@app.cell
def _(variant):
    tp16_question = problem_ui.widget(variant.questions["tp16"])
    tp16_answer = problem_ui.answer_of(tp16_question)
    tp16_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "tp16", tp16_question, tp16_commit_buttons)
    return tp16_answer, tp16_commit_buttons, tp16_question


@app.cell
def _(held_now, identity, tp16_answer, tp16_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "tp16", tp16_answer, tp16_commit_buttons.value, variant=variant, held=held_now())
    publish("tp16", _made)
    problem_ui.committed(CHAPTER, variant, "tp16", _row, _made)
    return


# Problem 5
@app.cell
def _(variant):
    rails_question = problem_ui.widget(variant.questions["rails"])
    rails_answer = problem_ui.answer_of(rails_question)
    rails_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "rails", rails_question, rails_commit_buttons)
    return rails_answer, rails_commit_buttons, rails_question


@app.cell
def _(held_now, identity, rails_answer, rails_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "rails", rails_answer, rails_commit_buttons.value, variant=variant, held=held_now())
    publish("rails", _made)
    problem_ui.committed(CHAPTER, variant, "rails", _row, _made)
    return


# Problem 6
@app.cell
def _(variant):
    ib_vs_nvlink_question = problem_ui.widget(variant.questions["ib_vs_nvlink"])
    ib_vs_nvlink_answer = problem_ui.answer_of(ib_vs_nvlink_question)
    ib_vs_nvlink_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "ib_vs_nvlink", ib_vs_nvlink_question, ib_vs_nvlink_commit_buttons)
    return ib_vs_nvlink_answer, ib_vs_nvlink_commit_buttons, ib_vs_nvlink_question


@app.cell
def _(held_now, identity, ib_vs_nvlink_answer, ib_vs_nvlink_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "ib_vs_nvlink", ib_vs_nvlink_answer, ib_vs_nvlink_commit_buttons.value, variant=variant, held=held_now())
    publish("ib_vs_nvlink", _made)
    problem_ui.committed(CHAPTER, variant, "ib_vs_nvlink", _row, _made)
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

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Problem set 8 · Failures and checkpoints")

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION, problem_ui, ui
    from labs.core.scenarios.problems_failures import CHAPTER

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
    llama3_mtbf_question = problem_ui.widget(variant.questions["llama3_mtbf"])
    llama3_mtbf_answer = problem_ui.answer_of(llama3_mtbf_question)
    llama3_mtbf_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "llama3_mtbf", llama3_mtbf_question, llama3_mtbf_commit_buttons)
    return llama3_mtbf_answer, llama3_mtbf_commit_buttons, llama3_mtbf_question


@app.cell
def _(held_now, identity, llama3_mtbf_answer, llama3_mtbf_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "llama3_mtbf", llama3_mtbf_answer, llama3_mtbf_commit_buttons.value, variant=variant, held=held_now())
    publish("llama3_mtbf", _made)
    problem_ui.committed(CHAPTER, variant, "llama3_mtbf", _row, _made)
    return


# Problem 2
@app.cell
def _(variant):
    components_question = problem_ui.widget(variant.questions["components"])
    components_answer = problem_ui.answer_of(components_question)
    components_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "components", components_question, components_commit_buttons)
    return components_answer, components_commit_buttons, components_question


@app.cell
def _(held_now, identity, components_answer, components_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "components", components_answer, components_commit_buttons.value, variant=variant, held=held_now())
    publish("components", _made)
    problem_ui.committed(CHAPTER, variant, "components", _row, _made)
    return


# Problem 3
@app.cell
def _(variant):
    interruptions_question = problem_ui.widget(variant.questions["interruptions"])
    interruptions_answer = problem_ui.answer_of(interruptions_question)
    interruptions_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "interruptions", interruptions_question, interruptions_commit_buttons)
    return interruptions_answer, interruptions_commit_buttons, interruptions_question


@app.cell
def _(held_now, identity, interruptions_answer, interruptions_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "interruptions", interruptions_answer, interruptions_commit_buttons.value, variant=variant, held=held_now())
    publish("interruptions", _made)
    problem_ui.committed(CHAPTER, variant, "interruptions", _row, _made)
    return


# Problem 4
@app.cell
def _(variant):
    checkpoint_question = problem_ui.widget(variant.questions["checkpoint"])
    checkpoint_answer = problem_ui.answer_of(checkpoint_question)
    checkpoint_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "checkpoint", checkpoint_question, checkpoint_commit_buttons)
    return checkpoint_answer, checkpoint_commit_buttons, checkpoint_question


@app.cell
def _(held_now, identity, checkpoint_answer, checkpoint_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "checkpoint", checkpoint_answer, checkpoint_commit_buttons.value, variant=variant, held=held_now())
    publish("checkpoint", _made)
    problem_ui.committed(CHAPTER, variant, "checkpoint", _row, _made)
    return


# Problem 5
@app.cell
def _(variant):
    young_question = problem_ui.widget(variant.questions["young"])
    young_answer = problem_ui.answer_of(young_question)
    young_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "young", young_question, young_commit_buttons)
    return young_answer, young_commit_buttons, young_question


@app.cell
def _(held_now, identity, young_answer, young_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "young", young_answer, young_commit_buttons.value, variant=variant, held=held_now())
    publish("young", _made)
    problem_ui.committed(CHAPTER, variant, "young", _row, _made)
    return


# Problem 6
@app.cell
def _(variant):
    lost_question = problem_ui.widget(variant.questions["lost"])
    lost_answer = problem_ui.answer_of(lost_question)
    lost_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "lost", lost_question, lost_commit_buttons)
    return lost_answer, lost_commit_buttons, lost_question


@app.cell
def _(held_now, identity, lost_answer, lost_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "lost", lost_answer, lost_commit_buttons.value, variant=variant, held=held_now())
    publish("lost", _made)
    problem_ui.committed(CHAPTER, variant, "lost", _row, _made)
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

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
# the submit and the HUD read this state, so a click on an answer re-runs only that problem's cells.
@app.cell
def _():
    get_commitments, set_commitments = mo.state({})
    publish = problem_ui.publisher(set_commitments)
    return get_commitments, publish

@app.cell(hide_code=True)
def _():
    problem_ui.heading(CHAPTER, "llama3_mtbf")
    return


@app.cell
def _(variant):
    llama3_mtbf_question = problem_ui.widget(variant.questions["llama3_mtbf"])
    llama3_mtbf_question
    return (llama3_mtbf_question,)


@app.cell
def _():
    llama3_mtbf_commit_buttons = ui.commit_buttons()
    return (llama3_mtbf_commit_buttons,)


@app.cell
def _(held_now, identity, llama3_mtbf_commit_buttons, llama3_mtbf_question, publish, variant):
    _row, llama3_mtbf_committed = ui.commit_prediction(identity, LAB, "llama3_mtbf", llama3_mtbf_question, llama3_mtbf_commit_buttons, variant=variant, held=held_now())
    publish("llama3_mtbf", llama3_mtbf_committed)
    _row
    return (llama3_mtbf_committed,)


@app.cell(hide_code=True)
def _(llama3_mtbf_committed, variant):
    ui.gate(llama3_mtbf_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "llama3_mtbf", llama3_mtbf_committed)
    return

@app.cell(hide_code=True)
def _():
    problem_ui.heading(CHAPTER, "components")
    return


@app.cell
def _(variant):
    components_question = problem_ui.widget(variant.questions["components"])
    components_question
    return (components_question,)


@app.cell
def _():
    components_commit_buttons = ui.commit_buttons()
    return (components_commit_buttons,)


@app.cell
def _(held_now, identity, components_commit_buttons, components_question, publish, variant):
    _row, components_committed = ui.commit_prediction(identity, LAB, "components", components_question, components_commit_buttons, variant=variant, held=held_now())
    publish("components", components_committed)
    _row
    return (components_committed,)


@app.cell(hide_code=True)
def _(components_committed, variant):
    ui.gate(components_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "components", components_committed)
    return

@app.cell(hide_code=True)
def _():
    problem_ui.heading(CHAPTER, "interruptions")
    return


@app.cell
def _(variant):
    interruptions_question = problem_ui.widget(variant.questions["interruptions"])
    interruptions_question
    return (interruptions_question,)


@app.cell
def _():
    interruptions_commit_buttons = ui.commit_buttons()
    return (interruptions_commit_buttons,)


@app.cell
def _(held_now, identity, interruptions_commit_buttons, interruptions_question, publish, variant):
    _row, interruptions_committed = ui.commit_prediction(identity, LAB, "interruptions", interruptions_question, interruptions_commit_buttons, variant=variant, held=held_now())
    publish("interruptions", interruptions_committed)
    _row
    return (interruptions_committed,)


@app.cell(hide_code=True)
def _(interruptions_committed, variant):
    ui.gate(interruptions_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "interruptions", interruptions_committed)
    return

@app.cell(hide_code=True)
def _():
    problem_ui.heading(CHAPTER, "checkpoint")
    return


@app.cell
def _(variant):
    checkpoint_question = problem_ui.widget(variant.questions["checkpoint"])
    checkpoint_question
    return (checkpoint_question,)


@app.cell
def _():
    checkpoint_commit_buttons = ui.commit_buttons()
    return (checkpoint_commit_buttons,)


@app.cell
def _(held_now, identity, checkpoint_commit_buttons, checkpoint_question, publish, variant):
    _row, checkpoint_committed = ui.commit_prediction(identity, LAB, "checkpoint", checkpoint_question, checkpoint_commit_buttons, variant=variant, held=held_now())
    publish("checkpoint", checkpoint_committed)
    _row
    return (checkpoint_committed,)


@app.cell(hide_code=True)
def _(checkpoint_committed, variant):
    ui.gate(checkpoint_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "checkpoint", checkpoint_committed)
    return

@app.cell(hide_code=True)
def _():
    problem_ui.heading(CHAPTER, "young")
    return


@app.cell
def _(variant):
    young_question = problem_ui.widget(variant.questions["young"])
    young_question
    return (young_question,)


@app.cell
def _():
    young_commit_buttons = ui.commit_buttons()
    return (young_commit_buttons,)


@app.cell
def _(held_now, identity, young_commit_buttons, young_question, publish, variant):
    _row, young_committed = ui.commit_prediction(identity, LAB, "young", young_question, young_commit_buttons, variant=variant, held=held_now())
    publish("young", young_committed)
    _row
    return (young_committed,)


@app.cell(hide_code=True)
def _(young_committed, variant):
    ui.gate(young_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "young", young_committed)
    return

@app.cell(hide_code=True)
def _():
    problem_ui.heading(CHAPTER, "lost")
    return


@app.cell
def _(variant):
    lost_question = problem_ui.widget(variant.questions["lost"])
    lost_question
    return (lost_question,)


@app.cell
def _():
    lost_commit_buttons = ui.commit_buttons()
    return (lost_commit_buttons,)


@app.cell
def _(held_now, identity, lost_commit_buttons, lost_question, publish, variant):
    _row, lost_committed = ui.commit_prediction(identity, LAB, "lost", lost_question, lost_commit_buttons, variant=variant, held=held_now())
    publish("lost", lost_committed)
    _row
    return (lost_committed,)


@app.cell(hide_code=True)
def _(lost_committed, variant):
    ui.gate(lost_committed, held_note=True)
    problem_ui.solution(CHAPTER, variant, "lost", lost_committed)
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

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Problem set 3 · Data parallelism and the critical batch")

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION, problem_ui, ui
    from labs.core.scenarios.problems_dataparallel import CHAPTER

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
    ring_bytes_question = problem_ui.widget(variant.questions["ring_bytes"])
    ring_bytes_answer = problem_ui.answer_of(ring_bytes_question)
    ring_bytes_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "ring_bytes", ring_bytes_question, ring_bytes_commit_buttons)
    return ring_bytes_answer, ring_bytes_commit_buttons, ring_bytes_question


@app.cell
def _(held_now, identity, ring_bytes_answer, ring_bytes_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "ring_bytes", ring_bytes_answer, ring_bytes_commit_buttons.value, variant=variant, held=held_now())
    publish("ring_bytes", _made)
    problem_ui.committed(CHAPTER, variant, "ring_bytes", _row, _made)
    return


# Problem 2
@app.cell
def _(variant):
    ring_time_question = problem_ui.widget(variant.questions["ring_time"])
    ring_time_answer = problem_ui.answer_of(ring_time_question)
    ring_time_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "ring_time", ring_time_question, ring_time_commit_buttons)
    return ring_time_answer, ring_time_commit_buttons, ring_time_question


@app.cell
def _(held_now, identity, ring_time_answer, ring_time_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "ring_time", ring_time_answer, ring_time_commit_buttons.value, variant=variant, held=held_now())
    publish("ring_time", _made)
    problem_ui.committed(CHAPTER, variant, "ring_time", _row, _made)
    return


# Problem 3
@app.cell
def _(variant):
    accumulation_question = problem_ui.widget(variant.questions["accumulation"])
    accumulation_answer = problem_ui.answer_of(accumulation_question)
    accumulation_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "accumulation", accumulation_question, accumulation_commit_buttons)
    return accumulation_answer, accumulation_commit_buttons, accumulation_question


@app.cell
def _(held_now, identity, accumulation_answer, accumulation_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "accumulation", accumulation_answer, accumulation_commit_buttons.value, variant=variant, held=held_now())
    publish("accumulation", _made)
    problem_ui.committed(CHAPTER, variant, "accumulation", _row, _made)
    return


# Problem 4
@app.cell
def _(variant):
    hiding_question = problem_ui.widget(variant.questions["hiding"])
    hiding_answer = problem_ui.answer_of(hiding_question)
    hiding_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "hiding", hiding_question, hiding_commit_buttons)
    return hiding_answer, hiding_commit_buttons, hiding_question


@app.cell
def _(held_now, identity, hiding_answer, hiding_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "hiding", hiding_answer, hiding_commit_buttons.value, variant=variant, held=held_now())
    publish("hiding", _made)
    problem_ui.committed(CHAPTER, variant, "hiding", _row, _made)
    return


# Problem 5
@app.cell
def _(variant):
    critical_question = problem_ui.widget(variant.questions["critical"])
    critical_answer = problem_ui.answer_of(critical_question)
    critical_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "critical", critical_question, critical_commit_buttons)
    return critical_answer, critical_commit_buttons, critical_question


@app.cell
def _(held_now, identity, critical_answer, critical_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "critical", critical_answer, critical_commit_buttons.value, variant=variant, held=held_now())
    publish("critical", _made)
    problem_ui.committed(CHAPTER, variant, "critical", _row, _made)
    return


# Problem 6
@app.cell
def _(variant):
    batch_cost_question = problem_ui.widget(variant.questions["batch_cost"])
    batch_cost_answer = problem_ui.answer_of(batch_cost_question)
    batch_cost_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "batch_cost", batch_cost_question, batch_cost_commit_buttons)
    return batch_cost_answer, batch_cost_commit_buttons, batch_cost_question


@app.cell
def _(held_now, identity, batch_cost_answer, batch_cost_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "batch_cost", batch_cost_answer, batch_cost_commit_buttons.value, variant=variant, held=held_now())
    publish("batch_cost", _made)
    problem_ui.committed(CHAPTER, variant, "batch_cost", _row, _made)
    return


# Problem 7
@app.cell
def _(variant):
    grow_question = problem_ui.widget(variant.questions["grow"])
    grow_answer = problem_ui.answer_of(grow_question)
    grow_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "grow", grow_question, grow_commit_buttons)
    return grow_answer, grow_commit_buttons, grow_question


@app.cell
def _(held_now, identity, grow_answer, grow_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "grow", grow_answer, grow_commit_buttons.value, variant=variant, held=held_now())
    publish("grow", _made)
    problem_ui.committed(CHAPTER, variant, "grow", _row, _made)
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

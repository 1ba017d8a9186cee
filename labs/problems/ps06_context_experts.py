import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Problem set 6 · Context and expert parallelism")

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION, problem_ui, ui
    from labs.core.scenarios.problems_context_experts import CHAPTER

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
    ring_kv_question = problem_ui.widget(variant.questions["ring_kv"])
    ring_kv_answer = problem_ui.answer_of(ring_kv_question)
    ring_kv_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "ring_kv", ring_kv_question, ring_kv_commit_buttons)
    return ring_kv_answer, ring_kv_commit_buttons, ring_kv_question


@app.cell
def _(held_now, identity, ring_kv_answer, ring_kv_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "ring_kv", ring_kv_answer, ring_kv_commit_buttons.value, variant=variant, held=held_now())
    publish("ring_kv", _made)
    problem_ui.committed(CHAPTER, variant, "ring_kv", _row, _made)
    return


# Problem 2
@app.cell
def _(variant):
    ring_hides_question = problem_ui.widget(variant.questions["ring_hides"])
    ring_hides_answer = problem_ui.answer_of(ring_hides_question)
    ring_hides_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "ring_hides", ring_hides_question, ring_hides_commit_buttons)
    return ring_hides_answer, ring_hides_commit_buttons, ring_hides_question


@app.cell
def _(held_now, identity, ring_hides_answer, ring_hides_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "ring_hides", ring_hides_answer, ring_hides_commit_buttons.value, variant=variant, held=held_now())
    publish("ring_hides", _made)
    problem_ui.committed(CHAPTER, variant, "ring_hides", _row, _made)
    return


# Problem 3
@app.cell
def _(variant):
    hop_hides_question = problem_ui.widget(variant.questions["hop_hides"])
    hop_hides_answer = problem_ui.answer_of(hop_hides_question)
    hop_hides_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "hop_hides", hop_hides_question, hop_hides_commit_buttons)
    return hop_hides_answer, hop_hides_commit_buttons, hop_hides_question


@app.cell
def _(held_now, identity, hop_hides_answer, hop_hides_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "hop_hides", hop_hides_answer, hop_hides_commit_buttons.value, variant=variant, held=held_now())
    publish("hop_hides", _made)
    problem_ui.committed(CHAPTER, variant, "hop_hides", _row, _made)
    return


# Problem 4
@app.cell
def _(variant):
    ulysses_question = problem_ui.widget(variant.questions["ulysses"])
    ulysses_answer = problem_ui.answer_of(ulysses_question)
    ulysses_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "ulysses", ulysses_question, ulysses_commit_buttons)
    return ulysses_answer, ulysses_commit_buttons, ulysses_question


@app.cell
def _(held_now, identity, ulysses_answer, ulysses_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "ulysses", ulysses_answer, ulysses_commit_buttons.value, variant=variant, held=held_now())
    publish("ulysses", _made)
    problem_ui.committed(CHAPTER, variant, "ulysses", _row, _made)
    return


# Problem 5
@app.cell
def _(variant):
    ulysses_degree_question = problem_ui.widget(variant.questions["ulysses_degree"])
    ulysses_degree_answer = problem_ui.answer_of(ulysses_degree_question)
    ulysses_degree_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "ulysses_degree", ulysses_degree_question, ulysses_degree_commit_buttons)
    return ulysses_degree_answer, ulysses_degree_commit_buttons, ulysses_degree_question


@app.cell
def _(held_now, identity, ulysses_degree_answer, ulysses_degree_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "ulysses_degree", ulysses_degree_answer, ulysses_degree_commit_buttons.value, variant=variant, held=held_now())
    publish("ulysses_degree", _made)
    problem_ui.committed(CHAPTER, variant, "ulysses_degree", _row, _made)
    return


# Problem 6
@app.cell
def _(variant):
    causal_question = problem_ui.widget(variant.questions["causal"])
    causal_answer = problem_ui.answer_of(causal_question)
    causal_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "causal", causal_question, causal_commit_buttons)
    return causal_answer, causal_commit_buttons, causal_question


@app.cell
def _(held_now, identity, causal_answer, causal_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "causal", causal_answer, causal_commit_buttons.value, variant=variant, held=held_now())
    publish("causal", _made)
    problem_ui.committed(CHAPTER, variant, "causal", _row, _made)
    return


# Problem 7
@app.cell
def _(variant):
    moe_bytes_question = problem_ui.widget(variant.questions["moe_bytes"])
    moe_bytes_answer = problem_ui.answer_of(moe_bytes_question)
    moe_bytes_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "moe_bytes", moe_bytes_question, moe_bytes_commit_buttons)
    return moe_bytes_answer, moe_bytes_commit_buttons, moe_bytes_question


@app.cell
def _(held_now, identity, moe_bytes_answer, moe_bytes_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "moe_bytes", moe_bytes_answer, moe_bytes_commit_buttons.value, variant=variant, held=held_now())
    publish("moe_bytes", _made)
    problem_ui.committed(CHAPTER, variant, "moe_bytes", _row, _made)
    return


# Problem 8
@app.cell
def _(variant):
    drops_question = problem_ui.widget(variant.questions["drops"])
    drops_answer = problem_ui.answer_of(drops_question)
    drops_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "drops", drops_question, drops_commit_buttons)
    return drops_answer, drops_commit_buttons, drops_question


@app.cell
def _(held_now, identity, drops_answer, drops_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "drops", drops_answer, drops_commit_buttons.value, variant=variant, held=held_now())
    publish("drops", _made)
    problem_ui.committed(CHAPTER, variant, "drops", _row, _made)
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

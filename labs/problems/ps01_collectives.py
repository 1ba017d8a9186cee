import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Problem set 1 · Collectives and alpha-beta")

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION, problem_ui, ui
    from labs.core.scenarios.problems_collectives import CHAPTER

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
    ring_nvlink_question = problem_ui.widget(variant.questions["ring_nvlink"])
    ring_nvlink_answer = problem_ui.answer_of(ring_nvlink_question)
    ring_nvlink_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "ring_nvlink", ring_nvlink_question, ring_nvlink_commit_buttons)
    return ring_nvlink_answer, ring_nvlink_commit_buttons, ring_nvlink_question


@app.cell
def _(held_now, identity, ring_nvlink_answer, ring_nvlink_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "ring_nvlink", ring_nvlink_answer, ring_nvlink_commit_buttons.value, variant=variant, held=held_now())
    publish("ring_nvlink", _made)
    problem_ui.committed(CHAPTER, variant, "ring_nvlink", _row, _made)
    return


# Problem 2
@app.cell
def _(variant):
    tp_twoway_question = problem_ui.widget(variant.questions["tp_twoway"])
    tp_twoway_answer = problem_ui.answer_of(tp_twoway_question)
    tp_twoway_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "tp_twoway", tp_twoway_question, tp_twoway_commit_buttons)
    return tp_twoway_answer, tp_twoway_commit_buttons, tp_twoway_question


@app.cell
def _(held_now, identity, tp_twoway_answer, tp_twoway_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "tp_twoway", tp_twoway_answer, tp_twoway_commit_buttons.value, variant=variant, held=held_now())
    publish("tp_twoway", _made)
    problem_ui.committed(CHAPTER, variant, "tp_twoway", _row, _made)
    return


# Problem 3
@app.cell
def _(variant):
    tree_small_question = problem_ui.widget(variant.questions["tree_small"])
    tree_small_answer = problem_ui.answer_of(tree_small_question)
    tree_small_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "tree_small", tree_small_question, tree_small_commit_buttons)
    return tree_small_answer, tree_small_commit_buttons, tree_small_question


@app.cell
def _(held_now, identity, tree_small_answer, tree_small_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "tree_small", tree_small_answer, tree_small_commit_buttons.value, variant=variant, held=held_now())
    publish("tree_small", _made)
    problem_ui.committed(CHAPTER, variant, "tree_small", _row, _made)
    return


# Problem 4
@app.cell
def _(variant):
    crossover_question = problem_ui.widget(variant.questions["crossover"])
    crossover_answer = problem_ui.answer_of(crossover_question)
    crossover_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "crossover", crossover_question, crossover_commit_buttons)
    return crossover_answer, crossover_commit_buttons, crossover_question


@app.cell
def _(held_now, identity, crossover_answer, crossover_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "crossover", crossover_answer, crossover_commit_buttons.value, variant=variant, held=held_now())
    publish("crossover", _made)
    problem_ui.committed(CHAPTER, variant, "crossover", _row, _made)
    return


# Problem 5
@app.cell
def _(variant):
    balance_question = problem_ui.widget(variant.questions["balance"])
    balance_answer = problem_ui.answer_of(balance_question)
    balance_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "balance", balance_question, balance_commit_buttons)
    return balance_answer, balance_commit_buttons, balance_question


@app.cell
def _(held_now, identity, balance_answer, balance_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "balance", balance_answer, balance_commit_buttons.value, variant=variant, held=held_now())
    publish("balance", _made)
    problem_ui.committed(CHAPTER, variant, "balance", _row, _made)
    return


# Problem 6
@app.cell
def _(variant):
    hierarchical_question = problem_ui.widget(variant.questions["hierarchical"])
    hierarchical_answer = problem_ui.answer_of(hierarchical_question)
    hierarchical_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "hierarchical", hierarchical_question, hierarchical_commit_buttons)
    return hierarchical_answer, hierarchical_commit_buttons, hierarchical_question


@app.cell
def _(held_now, identity, hierarchical_answer, hierarchical_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "hierarchical", hierarchical_answer, hierarchical_commit_buttons.value, variant=variant, held=held_now())
    publish("hierarchical", _made)
    problem_ui.committed(CHAPTER, variant, "hierarchical", _row, _made)
    return


# Problem 7
@app.cell
def _(variant):
    busbw_question = problem_ui.widget(variant.questions["busbw"])
    busbw_answer = problem_ui.answer_of(busbw_question)
    busbw_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "busbw", busbw_question, busbw_commit_buttons)
    return busbw_answer, busbw_commit_buttons, busbw_question


@app.cell
def _(held_now, identity, busbw_answer, busbw_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "busbw", busbw_answer, busbw_commit_buttons.value, variant=variant, held=held_now())
    publish("busbw", _made)
    problem_ui.committed(CHAPTER, variant, "busbw", _row, _made)
    return


# Problem 8
@app.cell
def _(variant):
    ring_or_tree_question = problem_ui.widget(variant.questions["ring_or_tree"])
    ring_or_tree_answer = problem_ui.answer_of(ring_or_tree_question)
    ring_or_tree_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "ring_or_tree", ring_or_tree_question, ring_or_tree_commit_buttons)
    return ring_or_tree_answer, ring_or_tree_commit_buttons, ring_or_tree_question


@app.cell
def _(held_now, identity, ring_or_tree_answer, ring_or_tree_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "ring_or_tree", ring_or_tree_answer, ring_or_tree_commit_buttons.value, variant=variant, held=held_now())
    publish("ring_or_tree", _made)
    problem_ui.committed(CHAPTER, variant, "ring_or_tree", _row, _made)
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

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Problem set 5 · Pipelines and their bubbles")

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION, problem_ui, ui
    from labs.core.scenarios.problems_pipelines import CHAPTER

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
    bubble_question = problem_ui.widget(variant.questions["bubble"])
    bubble_answer = problem_ui.answer_of(bubble_question)
    bubble_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "bubble", bubble_question, bubble_commit_buttons)
    return bubble_answer, bubble_commit_buttons, bubble_question


@app.cell
def _(held_now, identity, bubble_answer, bubble_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "bubble", bubble_answer, bubble_commit_buttons.value, variant=variant, held=held_now())
    publish("bubble", _made)
    problem_ui.committed(CHAPTER, variant, "bubble", _row, _made)
    return


# Problem 2
@app.cell
def _(variant):
    fewest_m_question = problem_ui.widget(variant.questions["fewest_m"])
    fewest_m_answer = problem_ui.answer_of(fewest_m_question)
    fewest_m_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "fewest_m", fewest_m_question, fewest_m_commit_buttons)
    return fewest_m_answer, fewest_m_commit_buttons, fewest_m_question


@app.cell
def _(held_now, identity, fewest_m_answer, fewest_m_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "fewest_m", fewest_m_answer, fewest_m_commit_buttons.value, variant=variant, held=held_now())
    publish("fewest_m", _made)
    problem_ui.committed(CHAPTER, variant, "fewest_m", _row, _made)
    return


# Problem 3
@app.cell
def _(variant):
    interleaved_question = problem_ui.widget(variant.questions["interleaved"])
    interleaved_answer = problem_ui.answer_of(interleaved_question)
    interleaved_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "interleaved", interleaved_question, interleaved_commit_buttons)
    return interleaved_answer, interleaved_commit_buttons, interleaved_question


@app.cell
def _(held_now, identity, interleaved_answer, interleaved_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "interleaved", interleaved_answer, interleaved_commit_buttons.value, variant=variant, held=held_now())
    publish("interleaved", _made)
    problem_ui.committed(CHAPTER, variant, "interleaved", _row, _made)
    return


# Problem 4
@app.cell
def _(variant):
    gpipe_memory_question = problem_ui.widget(variant.questions["gpipe_memory"])
    gpipe_memory_answer = problem_ui.answer_of(gpipe_memory_question)
    gpipe_memory_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "gpipe_memory", gpipe_memory_question, gpipe_memory_commit_buttons)
    return gpipe_memory_answer, gpipe_memory_commit_buttons, gpipe_memory_question


@app.cell
def _(held_now, identity, gpipe_memory_answer, gpipe_memory_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "gpipe_memory", gpipe_memory_answer, gpipe_memory_commit_buttons.value, variant=variant, held=held_now())
    publish("gpipe_memory", _made)
    problem_ui.committed(CHAPTER, variant, "gpipe_memory", _row, _made)
    return


# Problem 5
@app.cell
def _(variant):
    zb_h1_question = problem_ui.widget(variant.questions["zb_h1"])
    zb_h1_answer = problem_ui.answer_of(zb_h1_question)
    zb_h1_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "zb_h1", zb_h1_question, zb_h1_commit_buttons)
    return zb_h1_answer, zb_h1_commit_buttons, zb_h1_question


@app.cell
def _(held_now, identity, zb_h1_answer, zb_h1_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "zb_h1", zb_h1_answer, zb_h1_commit_buttons.value, variant=variant, held=held_now())
    publish("zb_h1", _made)
    problem_ui.committed(CHAPTER, variant, "zb_h1", _row, _made)
    return


# Problem 6
@app.cell
def _(variant):
    zb_or_interleaved_question = problem_ui.widget(variant.questions["zb_or_interleaved"])
    zb_or_interleaved_answer = problem_ui.answer_of(zb_or_interleaved_question)
    zb_or_interleaved_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "zb_or_interleaved", zb_or_interleaved_question, zb_or_interleaved_commit_buttons)
    return zb_or_interleaved_answer, zb_or_interleaved_commit_buttons, zb_or_interleaved_question


@app.cell
def _(held_now, identity, zb_or_interleaved_answer, zb_or_interleaved_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "zb_or_interleaved", zb_or_interleaved_answer, zb_or_interleaved_commit_buttons.value, variant=variant, held=held_now())
    publish("zb_or_interleaved", _made)
    problem_ui.committed(CHAPTER, variant, "zb_or_interleaved", _row, _made)
    return


# Problem 7
@app.cell
def _(variant):
    p2p_question = problem_ui.widget(variant.questions["p2p"])
    p2p_answer = problem_ui.answer_of(p2p_question)
    p2p_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "p2p", p2p_question, p2p_commit_buttons)
    return p2p_answer, p2p_commit_buttons, p2p_question


@app.cell
def _(held_now, identity, p2p_answer, p2p_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "p2p", p2p_answer, p2p_commit_buttons.value, variant=variant, held=held_now())
    publish("p2p", _made)
    problem_ui.committed(CHAPTER, variant, "p2p", _row, _made)
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

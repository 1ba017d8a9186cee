"""Write a problem set's notebook from its chapter: `python scripts/problem_set_notebook.py problems_memory labs/problems/ps02_memory.py`.
The notebook is the same arc for every chapter (identity, live lecture, variant; per problem a heading,
its widget, commit buttons, the commit, the gated solution; submit and HUD), so it is written from the
chapter's problem ids (labs.core.scenarios.<module>.CHAPTER); rerun it after adding a problem."""
import importlib, sys
module, out = sys.argv[1], sys.argv[2]
m = importlib.import_module(f"labs.core.scenarios.{module}")
ch = m.CHAPTER
ids = ch.ids
cells = []
cells.append(f'''import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="{ch.title}")

with app.setup:
    import marimo as mo

    from labs.core import ENGINE_VERSION, problem_ui, ui
    from labs.core.scenarios.{module} import CHAPTER

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
    get_commitments, set_commitments = mo.state({{}})
    publish = problem_ui.publisher(set_commitments)
    return get_commitments, publish


# Each problem is two cells: its heading, answer field and commit buttons; and its commit cell, which
# reads the answer through <problem>_answer, not the widget, so a click on an answer runs no cell (a
# commit or a skip does), and shows what the ledger holds and, once committed, the solution.
''')
for i, pid in enumerate(ids, 1):
    cells.append(f'''

# Problem {i}
@app.cell
def _(variant):
    {pid}_question = problem_ui.widget(variant.questions["{pid}"])
    {pid}_answer = problem_ui.answer_of({pid}_question)
    {pid}_commit_buttons = ui.commit_buttons()
    problem_ui.asked(CHAPTER, "{pid}", {pid}_question, {pid}_commit_buttons)
    return {pid}_answer, {pid}_commit_buttons, {pid}_question


@app.cell
def _(held_now, identity, {pid}_answer, {pid}_commit_buttons, publish, variant):
    _row, _made = ui.commit_prediction(identity, LAB, "{pid}", {pid}_answer, {pid}_commit_buttons.value, variant=variant, held=held_now())
    publish("{pid}", _made)
    problem_ui.committed(CHAPTER, variant, "{pid}", _row, _made)
    return
''')
cells.append(f'''

@app.cell
def _():
    submit_button = mo.ui.run_button(label="Submit my answers to the ledger")
    return (submit_button,)


@app.cell
def _(get_commitments, identity, submit_button, variant):
    committed = get_commitments()
    ui.gate(held=tuple(committed.values()))
    _pred = {{_pid: _made.answer for _pid, _made in committed.items()}}
    _view, submitted = ui.submit_to_ledger(identity, submit_button, lambda: [ui.ledger_step(LAB, "answers", {{}}, _pred, CHAPTER.outcomes, "the answers", variant)])
    mo.vstack([_view, ui.hud({{"engine": ENGINE_VERSION, **problem_ui.progress(CHAPTER, committed), "ledger": "saved" if submitted else "not submitted"}})])
    return committed, submitted


if __name__ == "__main__":
    app.run()
''')
open(out, "w").write("".join(cells))

"""What every problem set's tests check (tests/test_ps*.py call these with their chapter): the
engine's answer and the worked formula agree at 50 drawn ids within what the solution says;
answers differ between students; the notebook headless (locked, commit, reveal, submit, grade);
`marimo check --strict` and `marimo export html`; in a real browser (tests/test_browser_ps*.py),
sign in, commit, reveal, submit, download and grade."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import jsonschema
import marimo as mo
from browser import NAME_FIELD, answer, submit_and_download
from marimo_cli import PROBLEM_SETS, exported, start_exports, strict_check_failure
from test_notebooks import Commit, Pressed, answered, shared_app, text_of

from labs import grade
from labs.core.problemset import STEP, ProblemSet
from labs.core.state import load_schema
from labs.variants import variant

ROOT = Path(__file__).resolve().parents[1]
IDS = [f"student-{i:02d}" for i in range(50)]
SALT = "problem-set-tests"


def notebook(chapter: ProblemSet) -> Path:
    return ROOT / "labs" / "problems" / f"{chapter.name}.py"


def check_engine_and_formula_agree(chapter: ProblemSet) -> None:
    answers = {pid: set() for pid in chapter.ids}
    for student in IDS:
        v = variant(chapter.name, student, SALT)
        for pid in chapter.ids:
            p, r = chapter.problem(pid), chapter.report(v.settings, pid)
            assert all(math.isfinite(x) for x in (r["answer"], r["envelope"])), (student, pid, r)
            assert abs(r["envelope"] - r["answer"]) <= p.agree * abs(r["answer"]) + 1e-12, (student, pid, r)
            q = v.questions[pid]
            if q.numeric:
                assert q.judge(r["envelope"]), (student, pid, r)  # the worked formula is graded right
                assert p.agree <= p.tolerance
            answers[pid].add(round(r["answer"], 9) if q.numeric else q.key)
    for pid, seen in answers.items():
        assert len(seen) > 1, f"{pid}: every student has the same answer"


def check_texts_say_what_is_wrong(chapter: ProblemSet, expected: set[str]) -> None:
    assert {p.id for p in chapter.problems if p.texts} == expected


def _answers(v, pick) -> dict:
    defs = {}
    for pid, q in v.questions.items():
        value = pick(q)
        field = mo.ui.number(value=value) if q.numeric else answered(q.options, value)
        # the problem's first cell makes all three: its answer field, the commit cell's reader of it, its buttons
        defs |= {f"{pid}_question": field, f"{pid}_answer": field, f"{pid}_commit_buttons": Commit()}
    return defs


def _right(q):
    return q.spec.answer if q.numeric else q.key


def _wrong(q):
    return q.spec.answer + 3 * q.spec.tolerance if q.numeric else next(o.key for o in q.options if o.key != q.key)


def check_locked(chapter: ProblemSet) -> None:
    app = shared_app(notebook(chapter))
    outputs, defs = app.run()
    text = text_of(outputs)
    assert "Worked back-of-envelope" not in text and "The engine:" not in text and "Right" not in text
    assert defs["submitted"] is None  # the submit row shows (only a hold closes it); nothing is saved until it is pressed
    for p in chapter.problems:
        assert p.title in text


def check_reveal_and_submit(chapter: ProblemSet, ledger_dir) -> None:
    app = shared_app(notebook(chapter))
    v = variant(chapter.name, "student")
    outputs, defs = app.run(defs={**_answers(v, _right), "submit_button": Pressed()})
    text = text_of(outputs)
    assert text.count("Worked back-of-envelope") == len(chapter.ids) and "Not quite" not in text
    step = defs["submitted"]["labs"][chapter.name][STEP]
    assert all(step["outcomes"][f"{pid}_correct"] for pid in chapter.ids)
    table, problems = grade.grade([str(ledger_dir)])
    row = table[table["lab"] == chapter.name].iloc[0]
    assert not problems and row["status"] == "ok" and row["right"] == len(chapter.ids) and row["variant"] == v.seed
    os.environ["LABS_LEDGER_DIR"] = str(ledger_dir / "wrong")  # a fresh ledger: the first commitment is the one judged
    outputs, _ = app.run(defs=_answers(v, _wrong))
    assert text_of(outputs).count("Not quite") == len(chapter.ids)


def check_marimo(chapter: ProblemSet, tmp_path) -> None:
    """`marimo check --strict` and `marimo export html` of the chapter's notebook (tests/marimo_cli.py:
    one check run for every notebook; the first chapter's call starts every problem set's export)."""
    path = notebook(chapter)
    failure = strict_check_failure(path)
    assert not failure, failure
    start_exports(PROBLEM_SETS, tmp_path)
    result, out = exported(path, tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert out.stat().st_size > 10_000


def sign_in_browser(page, student: str) -> None:
    """Type the student's name on a problem set's page just loaded (the notebook re-runs with
    their variant; solve_in_browser waits for it)."""
    page.get_by_label(NAME_FIELD).fill(student)
    page.keyboard.press("Enter")


def solve_in_browser(page, chapter: ProblemSet, student: str, download: Path) -> None:
    """On a problem set's page signed in as `student` (`marimo run`, Chromium): nothing revealed
    yet; every problem answered right (the engine's answer typed, or its option clicked) and
    committed, each worked solution opened after its commit, none 'Not quite'; submitted, the
    ledger downloaded to `download`, valid against assets/ledger.schema.json, and the grader
    recomputes every problem right."""
    v = variant(chapter.name, student)
    first = chapter.problems[0]
    page.get_by_text(first.statement(v.settings[first.id])[:60]).first.wait_for()
    assert page.get_by_text("Worked back-of-envelope").count() == 0
    box = 0
    for i, pid in enumerate(chapter.ids):
        q = v.questions[pid]
        answer(page, q, commit=i, box=box)
        box += q.numeric
        page.get_by_text("Worked back-of-envelope").nth(i).wait_for()
    assert page.get_by_text("Not quite").count() == 0
    path = submit_and_download(page, "Submit my answers to the ledger", download)

    doc = json.loads(path.read_text())
    jsonschema.validate(doc, load_schema())
    assert set(doc["predictions"][chapter.name]) == set(chapter.ids)
    table, problems = grade.grade([str(path)])
    row = table[table["lab"] == chapter.name].iloc[0]
    assert not problems and row["status"] == "ok" and row["right"] == len(chapter.ids)

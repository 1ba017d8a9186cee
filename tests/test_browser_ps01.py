"""Problem set 1 in a real browser (Debian's Chromium, `marimo run`): sign in, answer and commit
every problem (typed numbers, one decision), see each worked solution open, submit, download a
ledger that validates, and the grader recomputes all eight right."""

import json

import jsonschema
import pytest

from browser import answer, browser_page, marimo_run, submit_and_download
from labs import grade
from labs.core.scenarios.problems_collectives import CHAPTER
from labs.core.state import load_schema
from labs.variants import variant

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

STUDENT = "problem set student"


def test_ps01_end_to_end(tmp_path):
    v = variant(CHAPTER.name, STUDENT)
    with marimo_run(f"problems/{CHAPTER.name}.py", env={"LABS_LEDGER_DIR": str(tmp_path / "ledgers")}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_label("Your name or student id (goes into your design ledger)").fill(STUDENT)
        page.keyboard.press("Enter")
        first = CHAPTER.problems[0]
        page.get_by_text(first.statement(v.settings[first.id])[:60]).first.wait_for()
        assert page.get_by_text("Worked back-of-envelope").count() == 0
        box = 0
        for i, pid in enumerate(CHAPTER.ids):
            q = v.questions[pid]
            answer(page, q, commit=i, box=box)
            box += q.numeric
            page.get_by_text("Worked back-of-envelope").nth(i).wait_for()
        assert page.get_by_text("Not quite").count() == 0
        path = submit_and_download(page, "Submit my answers to the ledger", tmp_path / "downloaded.json")

    doc = json.loads(path.read_text())
    jsonschema.validate(doc, load_schema())
    assert set(doc["predictions"][CHAPTER.name]) == set(CHAPTER.ids)
    table, problems = grade.grade([str(path)])
    row = table.iloc[0]
    assert not problems and row["status"] == "ok" and row["right"] == len(CHAPTER.ids)

"""Problem sets 6, 7 and 9 in a real browser (Debian's Chromium, `marimo run`): sign in, answer and
commit every problem (typed numbers and the decisions), see each worked solution open, submit,
download a ledger that validates, and the grader recomputes them all right."""

import json

import jsonschema
import pytest

from browser import answer, browser_page, marimo_run, submit_and_download
from labs import grade
from labs.core.scenarios import problems_context_experts, problems_hardware, problems_precision
from labs.core.state import load_schema
from labs.variants import variant

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

STUDENT = "problem set student"


@pytest.mark.parametrize("chapter", [problems_context_experts.CHAPTER, problems_precision.CHAPTER, problems_hardware.CHAPTER], ids=lambda c: c.name)
def test_end_to_end(chapter, tmp_path):
    v = variant(chapter.name, STUDENT)
    with marimo_run(f"problems/{chapter.name}.py", env={"LABS_LEDGER_DIR": str(tmp_path / "ledgers")}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_label("Your name or student id (goes into your design ledger)").fill(STUDENT)
        page.keyboard.press("Enter")
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
        path = submit_and_download(page, "Submit my answers to the ledger", tmp_path / "downloaded.json")

    doc = json.loads(path.read_text())
    jsonschema.validate(doc, load_schema())
    assert set(doc["predictions"][chapter.name]) == set(chapter.ids)
    table, problems = grade.grade([str(path)])
    row = table.iloc[0]
    assert not problems and row["status"] == "ok" and row["right"] == len(chapter.ids)

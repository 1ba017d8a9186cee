"""Problem sets 6, 7 and 9 in a real browser (Debian's Chromium, `marimo run`): sign in, answer and
commit every problem (typed numbers and the decisions), see each worked solution open, submit,
download a ledger that validates, and the grader recomputes them all right."""

import pytest
from browser import browser_page, marimo_run
from problem_checks import sign_in_browser, solve_in_browser

from labs.core.scenarios import (
    problems_context_experts,
    problems_hardware,
    problems_precision,
)

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

STUDENT = "problem set student"


@pytest.mark.parametrize("chapter", [problems_context_experts.CHAPTER, problems_precision.CHAPTER, problems_hardware.CHAPTER], ids=lambda c: c.name)
def test_end_to_end(chapter, tmp_path):
    with marimo_run(f"problems/{chapter.name}.py", env={"LABS_LEDGER_DIR": str(tmp_path / "ledgers")}) as url, browser_page() as page:
        page.goto(url)
        sign_in_browser(page, STUDENT)
        solve_in_browser(page, chapter, STUDENT, tmp_path / "downloaded.json")

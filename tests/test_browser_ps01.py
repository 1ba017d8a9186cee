"""Problem set 1 in a real browser (Debian's Chromium, `marimo run`): sign in, answer and commit
every problem (typed numbers, one decision), see each worked solution open, submit, download a
ledger that validates, and the grader recomputes all eight right."""

import pytest
from browser import browser_page, marimo_run
from problem_checks import sign_in_browser, solve_in_browser

from labs.core.scenarios.problems_collectives import CHAPTER

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

STUDENT = "problem set student"


@pytest.mark.serves(f"problems/{CHAPTER.name}.py")
def test_ps01_end_to_end(tmp_path, served_ledgers):
    with marimo_run(f"problems/{CHAPTER.name}.py", env={"LABS_LEDGER_DIR": str(served_ledgers)}) as url, browser_page() as page:
        page.goto(url)
        sign_in_browser(page, STUDENT)
        solve_in_browser(page, CHAPTER, STUDENT, tmp_path / "downloaded.json")

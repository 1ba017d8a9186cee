"""Problem sets 6, 7 and 9 in a real browser (Debian's Chromium, `marimo run`): sign in, answer and
commit every problem (typed numbers and the decisions), see each worked solution open, submit,
download a ledger that validates, and the grader recomputes them all right.

The three notebooks are served side by side and loaded in three windows of one Chromium, each
signed in before the first is driven (as tests/test_browser_ps02_03_04_05_08.py does)."""

import pytest
from browser import served_pages
from problem_checks import sign_in_browser, solve_in_browser

from labs.core.scenarios import (
    problems_context_experts,
    problems_hardware,
    problems_precision,
)

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

STUDENT = "problem set student"
CHAPTERS = [problems_context_experts.CHAPTER, problems_precision.CHAPTER, problems_hardware.CHAPTER]


@pytest.fixture(scope="module")
def pages(need_chromium, tmp_path_factory):
    """Each chapter's page, served, loaded and signed in (chapter name: page)."""
    notebooks = [f"problems/{c.name}.py" for c in CHAPTERS]
    envs = [{"LABS_LEDGER_DIR": str(tmp_path_factory.mktemp(f"ledgers_{c.name}"))} for c in CHAPTERS]  # a ledger each
    with served_pages(notebooks, envs) as opened:
        for page in opened:
            sign_in_browser(page, STUDENT)
        yield {c.name: page for c, page in zip(CHAPTERS, opened, strict=True)}


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_end_to_end(chapter, pages, tmp_path):
    solve_in_browser(pages[chapter.name], chapter, STUDENT, tmp_path / "downloaded.json")

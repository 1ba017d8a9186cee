"""Lab 09 in a real browser (Debian's Chromium, `marimo run`): seed 000's "PP across nodes is free"
is a committed prediction (review 38bda0b, X8). The misconceptions section waits for it; once
committed, the reveal shows the student's own bubble, counted by the engine at their batch and
pipeline depth."""

import pytest

from browser import answer, browser_page, marimo_run
from labs.core.scenarios import lab09
from labs.variants import variant

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]


def test_lab09_pp_free_prediction(tmp_path):
    student = "pipeline student"
    v = variant(lab09.LAB, student)
    dp64, pp = v.questions["dp64"], v.questions["pp_free"]
    f = lab09.pp_free_facts(int(v.settings["pp_batch"]), int(v.settings["pp_depth"]))
    with marimo_run("09_64gpu_design.py", env={"LABS_LEDGER_DIR": str(tmp_path / "ledgers")}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_label("Your name or student id (goes into your design ledger)").fill(student)
        page.keyboard.press("Enter")
        answer(page, dp64, commit=0)
        page.get_by_text("The communication map, filled by the engine").first.wait_for()
        page.get_by_text("PP across nodes is free\"?").first.wait_for()
        assert page.get_by_text("Misconceptions, met with numbers").count() == 0
        answer(page, pp)
        page.get_by_role("button", name="Commit my prediction").last.click()
        page.get_by_text(f"is {f['bubble']:.1%} of the step").first.wait_for()
        page.get_by_text("Misconceptions, met with numbers").first.wait_for()

"""Lab 08's SHARP section in a real browser (Debian's Chromium, `marimo run`): hidden until the ring
prediction is committed, then the engine's bytes per NIC and speed-ups on the page (review X2)."""

import pytest

from browser import answer, browser_page, marimo_run
from labs.core.scenarios.lab08_sharp import sharp_rows
from labs.variants import variant

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]


def test_lab08_sharp_section_shows_the_engines_numbers(tmp_path):
    one, whole = sharp_rows()
    with marimo_run("08_collectives.py", env={"LABS_LEDGER_DIR": str(tmp_path)}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the ring stepper").wait_for()
        assert page.get_by_text("SHARP: the scale-out switches add too").count() == 0
        answer(page, variant("08_collectives", "student").questions["ring"], commit=0)
        page.get_by_text("SHARP: the scale-out switches add too").first.wait_for()
        text = page.locator("body").inner_text()
    assert f"{one['nic_bytes_off'] / 1e9:.2f} GB against {one['nic_bytes_on'] / 1e9:.2f} GB" in text
    assert f"{one['speedup']:.2f}x" in text and f"{whole['speedup']:.2f}x" in text

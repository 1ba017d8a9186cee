"""Lab 11 in a real browser (Debian's Chromium, `marimo run`): commit the first prediction, move
the CP-degree slider and watch the step-time chart redraw with the engine's numbers, commit the
second, submit, download a ledger that validates against assets/ledger.schema.json."""

import json

import jsonschema
import pytest

from browser import answer, browser_page, marimo_run, metric, submit_and_download
from labs.core.scenarios.lab11 import LAB, STEP, cp_curves, cp_point
from labs.variants import variant
from labs.core.state import load_schema

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

CHART = ("el => JSON.stringify({title: el.getAttribute('aria-label'), y: Array.from(el.querySelectorAll('g.line'))"
         ".map(g => Array.from(g.querySelectorAll('g.point')).map(p => Number(p.dataset.step)))})")


def _chart(page, title: str, tries: int = 150):
    """The step-time chart's title and curves (its SVG: each point's data-step), polled until its
    title starts with `title`."""
    for _ in range(tries):
        for plot in page.locator("svg[role=img]").all():
            data = json.loads(plot.evaluate(CHART))
            if (data["title"] or "").startswith(title):
                return data
        page.wait_for_timeout(200)
    return None


@pytest.mark.serves("11_long_context_moe.py")
def test_lab11_end_to_end(tmp_path, served_ledgers):
    with marimo_run("11_long_context_moe.py", env={"LABS_LEDGER_DIR": str(served_ledgers)}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the context-parallel instruments").wait_for()
        page.get_by_label("Your name or student id (goes into your design ledger)").fill("long context student")
        page.keyboard.press("Enter")
        mine = variant(LAB, "long context student").questions
        answer(page, mine["fit"], commit=0)
        before = _chart(page, "CP 16, 8 KV heads")
        assert before is not None
        assert before["y"][0] == [p["step"] for p in cp_curves(16, 8) if p["algorithm"] == "ring" and p["error"] is None]
        assert metric(page, "step time") == f"{cp_point(131072, 16, 8, 'ring')['step']:.2f} s"

        slider = page.get_by_role("slider").nth(1)  # sequence length, CP degree, KV heads: CP 16 -> 8
        slider.focus()
        slider.press("ArrowLeft")
        after = _chart(page, "CP 8, 8 KV heads")
        assert after is not None and after["y"] != before["y"]
        page.locator(".lab-card .value", has_text=f"{cp_point(131072, 8, 8, 'ring')['step']:.2f} s").first.wait_for()

        answer(page, mine["moe"], commit=1)
        page.get_by_text("DeepSeek-V3's layout").first.wait_for()
        path = submit_and_download(page, "Submit my long-context design to the ledger", tmp_path / "downloaded.json")

    doc = json.loads(path.read_text())
    jsonschema.validate(doc, load_schema())
    step = doc["labs"][LAB][STEP]
    assert doc["student"] == "long context student"
    assert step["inputs"]["cp"] == 8 and step["inputs"]["algorithm"] == "ring"
    assert step["outcomes"]["step_time_s"] == pytest.approx(cp_point(131072, 8, 8, "ring")["step"])
    mine = variant(LAB, "long context student").questions
    assert doc["predictions"][LAB]["fit"]["answer"] == mine["fit"].key and doc["predictions"][LAB]["moe"]["answer"] == mine["moe"].key

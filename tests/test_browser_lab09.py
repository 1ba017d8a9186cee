"""Lab 09 in a real browser (Debian's Chromium, `marimo run`): commit the prediction, change the
rank order and watch the grid's TP groups leave their nodes, commit "PP across nodes is free" (the
misconceptions wait for it, the reveal shows the student's own bubble), submit, download a ledger
that validates against assets/ledger.schema.json."""

import json

import jsonschema
import pytest

from browser import answer, browser_page, marimo_run, metric, submit_and_download
from labs.variants import variant
from labs.core.engine.layout import RANK_ORDER_NOTES
from labs.core.scenarios.lab09 import LAB, pp_free_facts, worksheet_estimate
from labs.core.state import load_schema

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

# The grid (plain SVG): its cells' labels and whether its hops' path draws any hop between nodes.
GRID = ("() => { const svg = document.querySelector('svg.gpu-grid'); return svg && JSON.stringify("
        "[[...svg.querySelectorAll('g.labels text')].map(t => t.textContent), !!svg.querySelector('path.hops').getAttribute('d')]); }")
DP_INNER = "cp-dp-tp-pp"


def _grid(page, tries: int = 150):
    """The grid's cell labels and whether it draws hops, polled until it is on the page."""
    for _ in range(tries):
        data = page.evaluate(GRID)
        if data:
            return json.loads(data)
        page.wait_for_timeout(200)
    return None


@pytest.mark.serves("09_64gpu_design.py")
def test_lab09_end_to_end(tmp_path, served_ledgers):
    with marimo_run("09_64gpu_design.py", env={"LABS_LEDGER_DIR": str(served_ledgers)}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the worksheet").wait_for()
        page.get_by_label("Your name or student id (goes into your design ledger)").fill("grid student")
        page.keyboard.press("Enter")
        dp64 = variant(LAB, "grid student").questions["dp64"]
        answer(page, dp64, commit=0)
        page.get_by_text("The communication map, filled by the engine").first.wait_for()
        assert metric(page, "MFU") == f"{worksheet_estimate('70b-h100', 8, 1, 1).mfu:.1%}"
        before = _grid(page)
        assert before is not None and not before[1]  # TP innermost: no TP hop leaves a node

        page.get_by_text(f"{DP_INNER}: {RANK_ORDER_NOTES[DP_INNER]}").first.click()
        outer = worksheet_estimate("70b-h100", 8, 1, 1, rank_order=DP_INNER)
        page.locator(".lab-card .value", has_text=f"{outer.mfu:.1%}").first.wait_for()
        for _ in range(100):  # the grid is re-rendered: poll its data until it changes
            after = _grid(page, 1)
            if after is not None and after != before:
                break
            page.wait_for_timeout(200)
        assert after[1]  # TP groups now straddle nodes
        assert after[0] == [f"TP{r % 8}" for r in range(64)]
        page.get_by_text("places the 8 GPUs of each TP group").first.wait_for()

        # seed 000's "PP across nodes is free" is a committed prediction (review 38bda0b, X8): the
        # misconceptions wait for it; the reveal shows the student's own bubble, counted by the engine
        page.get_by_text("PP across nodes is free\"?").first.wait_for()
        assert page.get_by_text("Misconceptions, met with numbers").count() == 0
        answer(page, variant(LAB, "grid student").questions["pp_free"])  # the submit waits for both predictions
        page.get_by_role("button", name="Commit my prediction").last.click()
        settings = variant(LAB, "grid student").settings
        bubble = pp_free_facts(int(settings["pp_batch"]), int(settings["pp_depth"]))["bubble"]
        page.get_by_text(f"is {bubble:.1%} of the step").first.wait_for()
        page.get_by_text("Misconceptions, met with numbers").first.wait_for()
        path = submit_and_download(page, "Submit my worksheet to the ledger", tmp_path / "downloaded.json")

    doc = json.loads(path.read_text())
    jsonschema.validate(doc, load_schema())
    step = doc["labs"][LAB]["worksheet"]
    assert doc["student"] == "grid student"
    assert step["inputs"]["rank_order"] == DP_INNER and step["inputs"]["tp"] == 8
    assert step["outcomes"]["dominant"] == "tp" and step["outcomes"]["dominant_link"] == "inter"
    assert doc["predictions"][LAB]["dp64"]["answer"] == variant(LAB, "grid student").questions["dp64"].key
    assert doc["variants"][LAB]["seed"] == variant(LAB, "grid student").seed

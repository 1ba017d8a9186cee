"""Lab 10 in a real browser (Debian's Chromium, `marimo run`): commit the MTBF prediction, move
the checkpoint-interval slider, see the cadence chart's marker move to the engine's goodput,
submit, download the ledger and validate it against assets/ledger.schema.json. The page, once
loaded, shows ui's one stylesheet styling ui's components."""

import json

import jsonschema
import pytest

from browser import answer, assert_one_stylesheet, browser_page, marimo_run, submit_and_download
from labs.variants import variant
from labs.core.engine.reliability import goodput
from labs.core.scenarios.lab10 import RUN_MODEL, setting_costs
from labs.core.state import load_schema

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

# The "your interval" marker of the cadence chart (plain SVG): [minutes, goodput %] as it carries them.
MARKER = """() => { const g = document.querySelector('svg g.your-interval');
  return g ? [Number(g.dataset.minutes), Number(g.dataset.goodput)] : null; }"""


@pytest.mark.serves("10_failures_at_scale.py")
def test_lab10_commit_move_interval_submit_download(tmp_path, served_ledgers):
    with marimo_run("10_failures_at_scale.py", env={"LABS_LEDGER_DIR": str(served_ledgers)}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the failure model").wait_for()
        page.locator(".lab-message").first.wait_for(timeout=120_000)
        assert_one_stylesheet(page, "10_failures_at_scale.py")
        answer(page, variant("10_failures_at_scale", "student").questions["mtbf"], commit=0)
        page.get_by_text("Checkpoint every (minutes of training)").first.wait_for()
        before = page.wait_for_function(MARKER).json_value()
        assert before[0] == 30
        slider = page.get_by_role("slider").nth(2)  # GPUs, storage, then the interval
        slider.focus()
        slider.press("ArrowRight")  # 30 -> 45 minutes
        after = page.wait_for_function(f"() => {{ const m = ({MARKER})(); return m && m[0] !== {before[0]} ? m : null; }}").json_value()
        path = submit_and_download(page, "Submit to the ledger", tmp_path / "downloaded.json")
    mine = variant("10_failures_at_scale", "student").settings  # the GPU and storage sliders start at the variant's
    s = setting_costs(RUN_MODEL, mine["gpus"], 3, "sharded", mine["storage_gbps"], 10, 60, False)
    assert after[0] == 45
    for minutes, (x, y) in ((30, before), (45, after)):
        assert y == pytest.approx(100 * goodput(minutes * 60, s["cost"].stall_s, s["restart_s"], s["mtbf_s"]), rel=1e-9)
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, load_schema())
    step = doc["labs"]["10_failures_at_scale"]["cadence"]
    assert step["inputs"]["interval_min"] == 45
    assert step["outcomes"]["mtbf_correct"] is True
    mtbf = variant("10_failures_at_scale", "student").questions["mtbf"]
    assert mtbf.judge(doc["predictions"]["10_failures_at_scale"]["mtbf"]["answer"])

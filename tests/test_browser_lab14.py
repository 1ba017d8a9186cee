"""Lab 14 in a real browser (Debian's Chromium, `marimo run`): commit the culprit prediction, see
the sequence-id heatmap (one trace over 4,096 ranks), switch its process group and see it redraw,
commit the other two, move the timeout slider, submit, download, validate and grade the ledger."""

import json

import jsonschema
import pytest

from browser import answer, browser_page, marimo_run, metric, submit_and_download
from labs.core.scenarios import lab14
from labs.core.state import load_schema
from labs.variants import variant

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

# The heatmap's one trace: its title and the number of cells it draws.
HEATMAP = """() => { const out = []; const f = (root) => { for (const el of root.querySelectorAll('*')) {
  if (el.classList && el.classList.contains('js-plotly-plot')) out.push(el);
  if (el.shadowRoot) f(el.shadowRoot); } }; f(document);
  for (const el of out) { const t = (el.data || []).find(d => d.type === 'heatmap');
    if (t) return [el.data.length, t.z.length * t.z[0].length, el.layout.title.text]; }
  return null; }"""


@pytest.mark.serves("14_debugging_at_scale.py")
def test_lab14_commit_heatmap_timeout_submit_download(tmp_path, served_ledgers):
    q = variant(lab14.LAB, "student").questions
    with marimo_run("14_debugging_at_scale.py", env={"LABS_LEDGER_DIR": str(served_ledgers)}) as url, browser_page(height=1400) as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the flight recorder").wait_for()
        answer(page, q["culprit"], commit=0)
        before = page.wait_for_function(HEATMAP).json_value()
        assert before[0] == 1 and before[1] == 4096 and "TP group" in before[2]
        page.get_by_role("combobox").first.select_option(label="world (default group)")
        after = page.wait_for_function(f"() => {{ const m = ({HEATMAP})(); return m && m[2] !== {json.dumps(before[2])} ? m : null; }}").json_value()
        assert "WORLD group" in after[2] and after[0] == 1
        answer(page, q["kind"], commit=1)
        page.get_by_text("The injected fault").first.wait_for()
        answer(page, q["timeout"], commit=2, box=1)  # the first number field is the dump's rank
        page.get_by_text("Collective timeout (minutes)").first.wait_for()
        slider = page.get_by_role("slider").last
        slider.focus()
        slider.press("ArrowRight")  # 10 -> 15 minutes
        facts = lab14.timeout_facts(float(variant(lab14.LAB, "student").settings["storage_gbps"]), float(variant(lab14.LAB, "student").settings["checkpoint_min"]))
        # wait until the card shows the engine's number at 15 minutes (a state, not a time: the
        # card kept its 10-minute number for as long as the kernel took to re-run)
        from playwright.sync_api import expect

        card = page.locator(".lab-card", has=page.locator(".label", has_text="GPU-hours lost a month")).first
        expect(card.locator(".value")).to_have_text(f"{facts['loss'][15]['gpu_hours']:,.0f}", timeout=60_000)
        shown = metric(page, "GPU-hours lost a month")
        path = submit_and_download(page, "Submit to the ledger", tmp_path / "downloaded.json")
    assert shown == f"{facts['loss'][15]['gpu_hours']:,.0f}"
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, load_schema())
    step = doc["labs"][lab14.LAB][lab14.STEP]
    assert step["inputs"]["timeout_min"] == 15 and step["inputs"]["view_axis"] == "world"
    assert step["outcomes"]["culprit_correct"] and step["outcomes"]["kind_correct"] and step["outcomes"]["timeout_correct"]
    from labs.grade import grade_document

    rows = grade_document(doc, "downloaded.json")
    assert rows[0]["status"] == "ok" and rows[0]["right"] == 3 and not rows[0]["tampered"]

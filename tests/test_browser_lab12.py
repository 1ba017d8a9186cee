"""Lab 12 in a real browser (Debian's Chromium, `marimo run`): type and commit the numeric
underflow prediction, change it (recorded as a change), commit the other two, move every
instrument to both ends of its range and read the engine's numbers there, see all three reveals,
submit, download a ledger that validates and that the grader recomputes. The page, once loaded,
shows ui's one stylesheet styling ui's components; after the submit, the block-scaled formats
(seed topic X5) follow the sample dropdown."""

import json

import jsonschema
import pytest

from browser import assert_one_stylesheet, browser_page, choose, marimo_run, select_in_menu, submit_and_download, type_number
from labs import grade
from labs.core.engine.blockscale import activation_rows, gradient_rows
from labs.core.scenarios import lab12
from labs.core.scenarios.lab12 import ACTIVATION_SHAPE, GRADIENT_SAMPLE
from labs.core.state import load_schema
from labs.variants import variant

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

STUDENT = "precision student"


def _move(page, index: int, key: str) -> None:
    slider = page.get_by_role("slider").nth(index)
    slider.focus()
    slider.press(key)


def _ends(settings) -> list[tuple[str, str]]:
    """What each instrument shows at the bottom and the top of its range."""
    scale = [f"S = 2^{k} = {2.0 ** k:,.0f}" for k in lab12.LOSS_SCALE_RANGE]
    outliers = [f"{lab12.scaling_rows(o)[0]['median_rel_error']:.2%}" for o in (lab12.OUTLIER_SCALES[0], lab12.OUTLIER_SCALES[-1])]
    ks = [f"{lab12.accumulation_rows(k)[0]['error']:.2e}" for k in (lab12.ACCUMULATION_KS[0], lab12.ACCUMULATION_KS[-1])]
    steps = [f"{lab12.accumulation_estimates(m)[2].comm_bytes_per_gpu['dp'] / 1e9:.1f} GB" for m in (lab12.ACCUMULATION_STEPS[0], lab12.ACCUMULATION_STEPS[-1])]
    return [tuple(scale), tuple(outliers), tuple(ks), tuple(steps)]


@pytest.mark.serves("12_precision_and_memory.py")
def test_lab12_end_to_end(tmp_path, served_ledgers):
    v = variant(lab12.LAB, STUDENT)
    q = v.questions
    with marimo_run("12_precision_and_memory.py", env={"LABS_LEDGER_DIR": str(served_ledgers)}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the formats").wait_for()
        page.locator(".lab-message").first.wait_for(timeout=120_000)
        assert_one_stylesheet(page, "12_precision_and_memory.py")
        page.get_by_label("Your name or student id (goes into your design ledger)").fill(STUDENT)
        page.keyboard.press("Enter")
        page.get_by_text(f"from 1e{v.settings['grad_low_exp']} to 1e{v.settings['grad_high_exp']}").first.wait_for()

        numbers = page.locator("input[aria-label*='Your prediction']")
        type_number(page, numbers.nth(0), f"{q['underflow'].spec.answer:.1f}")
        page.get_by_role("button", name="Commit my prediction").nth(0).click()
        page.get_by_text("flushed to zero").first.wait_for()
        type_number(page, numbers.nth(0), "90")  # a change after the commit: recorded, never graded
        page.get_by_role("button", name="Commit my prediction").nth(0).click()
        page.get_by_text("Later answers are recorded as changes: 90").first.wait_for()

        key = q["recompute"].key
        choose(page, f"{key}) {next(o.label for o in q['recompute'].options if o.key == key)[:40]}", commit=1)
        type_number(page, numbers.nth(1), f"{q['fp8'].spec.answer:.2f}")
        page.get_by_role("button", name="Commit my prediction").nth(2).click()
        page.get_by_text("FP8 throughput at scale").first.wait_for()

        # every instrument to both ends (loss scale, outliers, K, accumulation steps), each end's number from the lab's own functions
        for index, (low, high) in enumerate(_ends(v.settings)):
            _move(page, index, "Home")
            page.get_by_text(low).first.wait_for()
            _move(page, index, "End")
            page.get_by_text(high).first.wait_for()
        ends = lab12.precision_outcomes({"log2_loss_scale": 32, "outlier_scale": 100_000, "accumulation_k": 16384, "accumulation_steps": 64}, {})
        page.get_by_role("checkbox", name="Flash attention", exact=True).check()  # the table is the student's own case (edition 2)
        page.get_by_text(f"{lab12.recompute_rows(True, v.settings['recompute_case'])[2]['extra_flops']:.1%}").first.wait_for()

        assert page.get_by_text("Right").count() >= 3
        path = submit_and_download(page, "Submit to the ledger", tmp_path / "downloaded.json")

        # the block-scaled formats (their dropdown is no input of the step): activations, then gradients
        page.get_by_text("Blackwell's block-scaled formats: MXFP8 and NVFP4").first.wait_for()
        activations = {r["format"]: r for r in activation_rows(1000, **ACTIVATION_SHAPE)}
        page.get_by_text(f"{activations['nvfp4']['flushed']:.2%}").first.wait_for()
        select_in_menu(page, "Gradients (section 1's sample)")
        s = v.settings
        gradients = {r["format"]: r for r in gradient_rows(GRADIENT_SAMPLE, s["grad_low_exp"], s["grad_high_exp"], s["sample_seed"])}
        assert gradients["nvfp4"]["flushed"] != activations["nvfp4"]["flushed"]
        page.get_by_text(f"{gradients['nvfp4']['flushed']:.2%}").first.wait_for()
        page.get_by_text(f"{gradients['mxfp8-e4m3']['median_rel_error']:.2%}").first.wait_for()

    doc = json.loads(path.read_text())
    jsonschema.validate(doc, load_schema())
    step = doc["labs"][lab12.LAB][lab12.STEP]
    assert step["inputs"] == {"log2_loss_scale": 32, "outlier_scale": 100_000, "accumulation_k": 16384, "accumulation_steps": 64}
    assert step["outcomes"]["e4m3_tensor_error"] == pytest.approx(ends["e4m3_tensor_error"])
    commits = doc["predictions"][lab12.LAB]
    assert commits["underflow"]["changes"][0]["answer"] == "90" and commits["recompute"]["answer"] == key
    table, problems = grade.grade([str(path)])
    row = table.iloc[0]
    assert not problems and row["status"] == "ok" and row["right"] == 3 and row["changes"] == 1

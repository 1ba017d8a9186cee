"""Lab 08 in a real browser (Debian's Chromium, `marimo run`): commit the ring prediction, move
the step slider and see the ring drawing change to the engine's step, submit, download the
ledger and validate it against the schema. On the same page: the SHARP section, hidden until the
ring prediction is committed, then the engine's bytes per NIC and speed-ups (review X2); and,
after the submits, four GPUs over PCIe and gradient compression follow the model dropdown (seed
topic X7; its instruments are no input of the ring step)."""

import json

import jsonschema
import pytest

from browser import answer, browser_page, marimo_run, select_in_menu, submit_and_download
from labs.core.engine.compression import compression_rows
from labs.core.engine.dp_scaling import PCIE_CLAIM_GPUS, SEQ_LEN, TORCH_DDP, scaling_efficiency
from labs.core.engine.hardware import Cluster
from labs.core.engine.models import MODELS, Model
from labs.core.scenarios.lab08_sharp import sharp_rows
from labs.core.scenarios.lab08 import ring_state
from labs.variants import variant
from labs.core.state import load_schema

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]


@pytest.mark.serves("08_collectives.py")
def test_lab08_step_slider_redraws_the_ring_and_the_ledger_validates(tmp_path, served_ledgers):
    with marimo_run("08_collectives.py", env={"LABS_LEDGER_DIR": str(served_ledgers)}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the ring stepper").wait_for()
        assert page.get_by_text("SHARP: the scale-out switches add too").count() == 0
        answer(page, variant("08_collectives", "student").questions["ring"], commit=0)
        page.get_by_text("SHARP: the scale-out switches add too").first.wait_for()
        text = page.locator("body").inner_text()
        one, whole = sharp_rows()
        assert f"{one['nic_bytes_off'] / 1e9:.2f} GB against {one['nic_bytes_on'] / 1e9:.2f} GB" in text
        assert f"{one['speedup']:.2f}x" in text and f"{whole['speedup']:.2f}x" in text
        page.get_by_text("Ring all-reduce, N = 4: step 0 of 6").first.wait_for()
        grid = page.locator("table[data-holds]").first  # the holds grid beside the ring (plain HTML)
        before = grid.get_attribute("data-holds")

        slider = page.get_by_role("slider").nth(1)  # ranks, then the step slider
        slider.focus()
        for _ in range(2):
            slider.press("ArrowRight")
        page.get_by_text("Ring all-reduce, N = 4: step 2 of 6 (reduce-scatter)").first.wait_for()
        after = page.locator("table[data-holds]").first.get_attribute("data-holds")
        assert after != before
        assert json.loads(after) == [list(row) for row in ring_state(4, 1e9, "nvlink4", 2)["holds"]]  # the drawing is the engine's step
        # the ring (plain SVG): at step 2 rank r sends chunk (r - 1) mod 4, as the engine's schedule
        chunks = page.locator('svg[aria-label="ring all-reduce of 4 ranks at step 2"] text.chunk').all_text_contents()
        assert chunks == [f"c{c}" for c in ring_state(4, 1e9, "nvlink4", 2)["sends"]] == ["c3", "c0", "c1", "c2"]

        path = submit_and_download(page, "Submit to the ledger", tmp_path / "downloaded.json")
        saved = json.loads(path.read_text())

        # a new N makes a new step slider at step 0, and the submit reads that one (not step 2)
        ranks = page.get_by_role("slider").nth(0)
        ranks.focus()
        ranks.press("ArrowRight")
        page.get_by_text("Ring all-reduce, N = 5: step 0 of 8 (before the first step)").first.wait_for()
        page.get_by_role("button", name="Submit to the ledger").click()
        ledger = next(served_ledgers.glob("*.ledger.json"))
        resubmitted = None
        for _ in range(300):  # the save lands once the kernel has run the submit
            resubmitted = json.loads(ledger.read_text())["labs"]["08_collectives"]["ring"]
            if resubmitted["inputs"]["n"] == 5:
                break
            page.wait_for_timeout(100)
        assert resubmitted["inputs"] == {"n": 5, "nbytes": 1e9, "link": "nvlink4", "step": 0}

        page.get_by_text("Four GPUs over PCIe, and compressing the gradients").first.wait_for()
        first = scaling_efficiency("seed-100m", "pcie-a100", PCIE_CLAIM_GPUS, 4)
        page.get_by_text(f"{first['many_s'] * 1e3:.1f} ms").first.wait_for()
        select_in_menu(page, MODELS["seed-12l-512"].name)
        other = scaling_efficiency("seed-12l-512", "pcie-a100", PCIE_CLAIM_GPUS, 4)
        assert f"{other['many_s'] * 1e3:.1f}" != f"{first['many_s'] * 1e3:.1f}"
        page.get_by_text(f"{other['many_s'] * 1e3:.1f} ms").first.wait_for()
        server = Cluster.get("pcie-a100", nodes=1, gpus_per_node=PCIE_CLAIM_GPUS)
        rows = compression_rows(Model.get("seed-12l-512", seq_len=SEQ_LEN), server, PCIE_CLAIM_GPUS, 4, TORCH_DDP["grad_reduce_dtype"])
        page.get_by_text(f"{rows[-1]['bytes'] / 1e6:,.1f} MB").first.wait_for()
    doc = saved
    jsonschema.validate(doc, load_schema())
    step = doc["labs"]["08_collectives"]["ring"]
    assert step["inputs"]["step"] == 2 and step["outcomes"]["ring_correct"]
    assert step["outcomes"]["bytes_sent_so_far"] == pytest.approx(2 * 1e9 / 4)  # two chunks of M/N

"""The seed-topic instruments in a real browser (Debian's Chromium, `marimo run`): commit the
prediction that gates each, change a dropdown, and read the engine's new number on the page.
Lab 12's block-scaled formats (X5), Lab 06's FSDP against DDP (X6) and offload tiers (X3), Lab
08's four GPUs over PCIe and gradient compression (X7)."""

import pytest

from browser import answer, browser_page, marimo_run
from labs.core.engine.blockscale import activation_rows, gradient_rows
from labs.core.engine.compression import compression_rows
from labs.core.engine.dp_scaling import PCIE_CLAIM_GPUS, SEQ_LEN, TORCH_DDP, scaling_efficiency, stage_rows
from labs.core.engine.hardware import CLUSTERS, Cluster
from labs.core.engine.models import MODELS, Model
from labs.core.engine.offload import placement_rows
from labs.core.scenarios.lab12 import ACTIVATION_SHAPE, GRADIENT_SAMPLE
from labs.variants import variant

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]


def _select(page, option_label: str, without: str | None = None) -> None:
    """Pick `option_label` in the first dropdown offering it (and not offering `without`)."""
    menus = page.locator("select", has=page.locator("option", has_text=option_label))
    if without:
        menus = menus.filter(has_not=page.locator("option", has_text=without))
    menus.first.select_option(label=option_label)


def test_lab12_block_formats_follow_the_sample_dropdown(tmp_path):
    v = variant("12_precision_and_memory", "student")
    q = v.questions
    with marimo_run("12_precision_and_memory.py", env={"LABS_LEDGER_DIR": str(tmp_path)}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the formats").wait_for()
        answer(page, q["underflow"], commit=0)
        page.get_by_text("Blackwell's block-scaled formats: MXFP8 and NVFP4").first.wait_for()
        activations = {r["format"]: r for r in activation_rows(1000, **ACTIVATION_SHAPE)}
        page.get_by_text(f"{activations['nvfp4']['flushed']:.2%}").first.wait_for()
        _select(page, "Gradients (section 1's sample)")
        s = v.settings
        gradients = {r["format"]: r for r in gradient_rows(GRADIENT_SAMPLE, s["grad_low_exp"], s["grad_high_exp"], s["sample_seed"])}
        assert gradients["nvfp4"]["flushed"] != activations["nvfp4"]["flushed"]
        page.get_by_text(f"{gradients['nvfp4']['flushed']:.2%}").first.wait_for()
        page.get_by_text(f"{gradients['mxfp8-e4m3']['median_rel_error']:.2%}").first.wait_for()


def test_lab06_fsdp_against_ddp_and_offload_tiers(tmp_path):
    q = variant("06_zero_sweep", "student").questions
    with marimo_run("06_zero_sweep.py", env={"LABS_LEDGER_DIR": str(tmp_path)}) as url, browser_page() as page:
        page.goto(url)
        answer(page, q["fit"], commit=0)
        page.get_by_text("Past the CPU: ZeRO-Offload against ZeRO-Infinity").first.wait_for()
        answer(page, q["zero2"], commit=1)
        nvlink = stage_rows("seed-100m", "dgx-h100", 2, 1)[-1]["vs_ddp"]
        page.get_by_text(f"FSDP is {nvlink:+.1%} against DDP here").first.wait_for()
        pcie = CLUSTERS["pcie-a100"]
        _select(page, f"{pcie.gpu.name} server ({pcie.intra.name})")
        over_pcie = stage_rows("seed-100m", "pcie-a100", 2, 1)[-1]["vs_ddp"]
        page.get_by_text(f"FSDP is {over_pcie:+.1%} against DDP here").first.wait_for()
        print(f"FSDP against DDP: {nvlink:+.1%} on NVLink, {over_pcie:+.1%} over PCIe")

        _select(page, MODELS["gpt3-175b"].name, without=MODELS["seed-100m"].name)  # the offload menu, not section 2's
        nvme = placement_rows("gpt3-175b", "dgx-h100", 8, microbatches=16)[-1]
        page.get_by_text(f"{nvme['nvme_bytes'] / 1e9:,.0f} GB in {nvme['nvme_s']:.1f} s").first.wait_for()


def test_lab08_four_gpus_over_pcie_follow_the_model(tmp_path):
    q = variant("08_collectives", "student").questions
    with marimo_run("08_collectives.py", env={"LABS_LEDGER_DIR": str(tmp_path)}) as url, browser_page() as page:
        page.goto(url)
        answer(page, q["ring"], commit=0)
        page.get_by_text("Four GPUs over PCIe, and compressing the gradients").first.wait_for()
        first = scaling_efficiency("seed-100m", "pcie-a100", PCIE_CLAIM_GPUS, 4)
        page.get_by_text(f"{first['many_s'] * 1e3:.1f} ms").first.wait_for()
        _select(page, MODELS["seed-12l-512"].name)
        other = scaling_efficiency("seed-12l-512", "pcie-a100", PCIE_CLAIM_GPUS, 4)
        assert f"{other['many_s'] * 1e3:.1f}" != f"{first['many_s'] * 1e3:.1f}"
        page.get_by_text(f"{other['many_s'] * 1e3:.1f} ms").first.wait_for()
        server = Cluster.get("pcie-a100", nodes=1, gpus_per_node=PCIE_CLAIM_GPUS)
        rows = compression_rows(Model.get("seed-12l-512", seq_len=SEQ_LEN), server, PCIE_CLAIM_GPUS, 4, TORCH_DDP["grad_reduce_dtype"])
        page.get_by_text(f"{rows[-1]['bytes'] / 1e6:,.1f} MB").first.wait_for()

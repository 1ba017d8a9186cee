"""The bias check beside a lab's first MFU (issue #37 item 9): the closest published run in the
reference file, its paper's number read from the file, and the engine on that run."""

import html
import json
import re
from pathlib import Path

import pytest

from labs.core.engine import Cluster, Model, Plan, estimate
from labs.core.engine.beside import published_beside

REFERENCE = {r["id"]: r for r in json.loads((Path(__file__).parent / "data" / "published_numbers.json").read_text())}
A100_PEAK_TFLOPS = 312  # the reference rows' own "peak_tflops"


def committed_page(lab: str, folder: Path) -> str:
    """The lab's page after its student ("student", the id a headless run uses) has committed every
    prediction, in a ledger folder of the test's own: the beside note sits behind the first commit,
    and a run must not read (or write) the developer's own ledger in ~/.parallelism_labs."""
    from test_notebooks import LABS, shared_app, text_of

    from labs.core.state import DesignLedger
    from labs.variants import variant

    path = next(p for p in LABS if p.stem.startswith(lab))
    mine = variant(path.stem, "student")
    ledger = DesignLedger("student", folder)
    for name, question in mine.questions.items():
        ledger.commit_prediction(path.stem, name, f"{question.spec.answer:g}" if question.numeric else question.key, variant=mine.record())
    return html.unescape(text_of(shared_app(path).run()[0]))


@pytest.mark.parametrize("model, plan, row_id", [
    ("gpt3-175b", Plan(tp=8, pp=8, dp=16, global_batch=1536), "megatron2021_t2_PTD-P_174.6B_384gpu"),  # 175B: 174.6B is nearest
    ("gpt3-175b", Plan(dp=384, zero_stage=3, global_batch=1536), "megatron2021_t2_ZeRO-3_174.6B_384gpu"),  # ZeRO-3 alone: DeepSpeed's row
    ("llama3-8b", Plan(tp=1, pp=1, dp=8, global_batch=64), "megatron2021_t1_7.5B"),  # 8.0B: 7.5B nearer than 22B
    ("llama3-405b", Plan(tp=8, pp=16, dp=8, global_batch=1024), "korthikanti_t5_530B"),  # 405B: 530B before 145.6B on a log scale; of the two 529.6B runs, the one reporting MFU
])
def test_the_closest_run_and_its_published_number(model, plan, row_id):
    m = Model.get(model)
    b = published_beside(m, plan)
    row = REFERENCE[row_id]
    published = row["outputs"]["tflops_per_gpu"] / A100_PEAK_TFLOPS if "tflops_per_gpu" in row["outputs"] else row["outputs"]["mfu_pct"] / 100
    print(f"{model}: {b.row.id} published {b.published:.3f}, engine {b.engine:.3f} ({b.error:+.1%})")
    assert b.row.id == row_id
    assert b.published == pytest.approx(published, rel=1e-9)
    assert b.convention == ("MFU" if row["kind"] == "korthikanti_table5" else "hardware FLOPs utilisation, full recompute counted")
    assert 0.2 < b.engine < 0.8 and abs(b.error) < 0.15  # the engine's validated error on these rows is within 7%
    assert b.gpus == row["inputs"]["gpus"] and b.row.plan.tp == row["inputs"].get("tp", b.row.plan.tp)


def test_the_page_names_the_gpu_no_run_checks():
    from labs.core import ui

    h100 = ui.published_beside(estimate(Model.get("gpt3-175b"), Cluster.get("dgx-h100", nodes=128), Plan(tp=8, pp=8, dp=16, global_batch=1536))).text
    a100 = ui.published_beside(estimate(Model.get("gpt3-175b"), Cluster.get("dgx-a100", nodes=128), Plan(tp=8, pp=8, dp=16, global_batch=1536))).text
    assert "no published run on H100" in h100 and "no published run" not in a100
    assert "174.6B parameters on 384" in a100 and "Table 2" in a100


@pytest.mark.parametrize("lab", ["06", "08", "09", "11", "12"])
def test_the_lab_shows_the_published_run_beside_its_first_mfu(lab, ledger_dir):
    """Labs 06, 08, 09, 11 and 12 print, once their predictions are committed, the closest published run, the paper's
    number and the engine's on it, read from the reference file (the same numbers as published_beside computes for the page's plan)."""
    page = committed_page(lab, ledger_dir)
    assert "Beside a published run." in page, lab
    shown = re.search(r"closest run in the project's reference file: [\d.]+B parameters on ([\d,]+) .*?\): ([\d.]+)% ", page)
    assert shown, page[:2000]
    gpus, pct = int(shown.group(1).replace(",", "")), float(shown.group(2))
    published = {(r["inputs"]["gpus"], round(100 * (r["outputs"]["tflops_per_gpu"] / A100_PEAK_TFLOPS if "tflops_per_gpu" in r["outputs"] else r["outputs"]["mfu_pct"] / 100), 1))
                 for r in REFERENCE.values() if r["kind"] in ("megatron_table1", "megatron_table2", "korthikanti_table5")}
    print(f"Lab {lab}: {gpus} GPUs, {pct}% published")
    assert (gpus, pct) in published


def test_lab05_shows_the_published_run_beside_act_ones_mfu(ledger_dir):
    page = committed_page("05", ledger_dir)
    row = REFERENCE["megatron2021_t1_7.5B"]
    print(page[page.index("Beside a published run."):][:400])
    # Act I's 7B model: Table 1's 7.5B row is the nearest, its GPUs and its 45.5% as the file has them
    assert f"7.5B parameters on {row['inputs']['gpus']} " in page
    assert f"{row['outputs']['tflops_per_gpu'] / A100_PEAK_TFLOPS:.1%} hardware FLOPs utilisation" in page

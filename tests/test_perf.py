"""Step time and MFU against published runs, the lessons the labs teach, and input errors."""

import pytest

from conftest import report
from labs.core import Cluster, Model, Plan, estimate, sweep
from labs.core.calibration import TABLE2_GPUS, TABLE2_PUBLISHED, TABLE2_SCHEMES, public_runs, table2_estimate
from labs.core.scenarios import DP_WALL_GPUS, design_inputs, dp_wall_estimate

RUNS = public_runs()


@pytest.mark.parametrize("row", RUNS, ids=[r.id for r in RUNS])
def test_public_run_within_10pct(row):
    """Narayanan 2021 Tables 1-2 (hardware FLOPs, full recompute) and Korthikanti 2022 Table 5
    (model FLOPs): predicted TFLOP/s per GPU within 10% of the paper."""
    error = report(f"{row.id} {row.metric}", row.predicted(), row.published)
    assert abs(error) < 0.10


def test_all_public_rows_are_covered(published):
    kinds = {"megatron_table1", "megatron_table2", "korthikanti_table5"}
    assert len(RUNS) == sum(1 for r in published.values() if r["kind"] in kinds) == 9


def test_table2_zero3_collapse_across_scales():
    """Narayanan 2021 Table 2 at 384, 768 and 1536 A100s over HDR: ZeRO-3 without model
    parallelism falls 144 -> 88 -> 44 TFLOP/s per GPU while TP x PP holds 153 -> 149 -> 141.
    Only the 384-GPU rows calibrate anything (ZERO3_OVERLAP); the larger scales are predictions.
    The engine must reproduce the collapse: ZeRO-3 falls at least 2.5x from 384 to 1536 GPUs,
    PTD-P loses under 15%, and at 1536 PTD-P is ahead by more than 2.5x (paper: 3.2x)."""
    got = {(s, n): table2_estimate(s, n).hardware_tflops_per_gpu for s in TABLE2_SCHEMES for n in TABLE2_GPUS}
    for key, value in got.items():
        report(f"Table 2 {key[0]} at {key[1]} GPUs", value, TABLE2_PUBLISHED[key])
    assert got[("ZeRO-3", 384)] / got[("ZeRO-3", 1536)] > 2.5
    assert got[("PTD-P", 1536)] / got[("PTD-P", 384)] > 0.85
    assert report("PTD-P / ZeRO-3 at 1536 GPUs", got[("PTD-P", 1536)] / got[("ZeRO-3", 1536)], 141 / 44) > -0.25


def test_act1_story_fixed_global_batch():
    """The stakeholder's 52% / 38% / 19%: the engine agrees within 3 points at 8 and 64 GPUs.
    At 512 it is harsher than the story (constant ring traffic against 64x less compute per
    GPU), so the assertion there is that MFU has collapsed below the story's 19%."""
    mfu = [dp_wall_estimate(n).mfu for n in DP_WALL_GPUS]
    for n, got, story in zip(DP_WALL_GPUS, mfu, (0.52, 0.38, 0.19)):
        report(f"Act I MFU at {n} GPUs (fixed global batch)", got, story)
    assert abs(mfu[0] - 0.52) < 0.03
    assert abs(mfu[1] - 0.38) < 0.03
    assert 0.08 < mfu[2] < 0.19


def test_act1_fixed_per_gpu_batch_stays_flat():
    mfu = [dp_wall_estimate(n, fixed_per_gpu=True).mfu for n in DP_WALL_GPUS]
    assert max(mfu) - min(mfu) < 0.03


def test_act1_hierarchical_all_reduce_recovers_most_of_it():
    assert dp_wall_estimate(512, algorithm="hierarchical").mfu > 2 * dp_wall_estimate(512).mfu


def test_tp_across_nodes_warns_with_the_real_bandwidths():
    model, cluster = design_inputs()
    est = estimate(model, cluster, Plan(tp=16, pp=8, dp=8, micro_batch=1, global_batch=1536, zero_stage=1, recompute="selective", sequence_parallel=True))
    text = " ".join(est.warnings)
    assert "450 GB/s" in text and "50 GB/s" in text and "9x" in text


def test_gpt3_design_sensible_plan_beats_pipeline_only():
    model, cluster = design_inputs()
    good = estimate(model, cluster, Plan(tp=8, pp=8, dp=16, micro_batch=1, global_batch=1536, zero_stage=1, recompute="selective", sequence_parallel=True, flash_attention=True))
    pipeline_only = estimate(model, cluster, Plan(tp=1, pp=32, dp=32, micro_batch=1, global_batch=1536, zero_stage=1, flash_attention=True))
    assert good.fits and good.bubble_fraction < 0.1
    assert good.mfu > pipeline_only.mfu or not pipeline_only.fits


def test_uneven_stages_run_at_the_heaviest_stage():
    model, cluster = Model.get("llama3-405b"), Cluster.get("dgx-h100", nodes=2048)
    est = estimate(model, cluster, Plan(tp=8, pp=16, dp=128, micro_batch=1, global_batch=2048, zero_stage=1, sequence_parallel=True, flash_attention=True, schedule="interleaved", virtual_stages=2))
    assert any("heaviest stage holds 8 layers" in w for w in est.warnings)
    even = estimate(model.__class__(**{**model.__dict__, "layers": 128}), cluster, est.plan)
    assert est.step_time_s == pytest.approx(even.step_time_s, rel=0.02)


def test_oom_warning_names_the_term():
    model, cluster = design_inputs()
    est = estimate(model, cluster, Plan(tp=8, pp=1, dp=128, micro_batch=1, global_batch=1536))
    assert not est.fits
    assert any("Out of memory" in w and est.memory.largest_term() in w for w in est.warnings)


def test_mfu_equals_model_flops_over_time_and_peak():
    model, cluster = design_inputs()
    est = estimate(model, cluster, Plan(tp=8, pp=8, dp=16, micro_batch=1, global_batch=1536, zero_stage=1, recompute="full"))
    assert est.mfu == pytest.approx(est.model_flops_per_step / (est.step_time_s * cluster.gpus * cluster.gpu.bf16_flops))
    assert est.hfu / est.mfu == pytest.approx(model.hardware_flops_per_sequence("full") / model.model_flops_per_sequence())
    assert est.step_time_s == pytest.approx(sum(est.time.as_dict().values()))


@pytest.mark.parametrize("key, nodes, batch", [("gpt3-175b", 128, 1536), ("llama3-70b", 8, 128)])
def test_recommended_plans_are_sensible(key, nodes, batch):
    best = sweep(Model.get(key), Cluster.get("dgx-h100", nodes=nodes), global_batch=batch, flash_attention=True).iloc[0]
    assert best.fits and best.tp <= 8 and best.bubble_fraction < 0.15 and 0.30 < best.mfu < 0.65


@pytest.mark.parametrize("field, nodes, plan", [
    ("tp x pp x dp", 1, Plan(tp=8, pp=8, dp=8, global_batch=64)),
    ("tp must divide", 1, Plan(tp=8, pp=1, dp=1, global_batch=1)),
    ("pp x virtual_stages", 16, Plan(tp=1, pp=128, dp=1, global_batch=128)),
])
def test_invalid_layout_names_the_field(field, nodes, plan):
    model = Model.get("gpt3-175b", heads=12 if field == "tp must divide" else 96, hidden=12288)
    with pytest.raises(ValueError, match=field):
        estimate(model, Cluster.get("dgx-h100", nodes=nodes), plan)


@pytest.mark.parametrize("field, kwargs", [
    ("global_batch", dict(dp=3, global_batch=10)),
    ("zero_stage", dict(zero_stage=5)),
    ("recompute", dict(recompute="partial")),
    ("schedule", dict(schedule="pipedream")),
    ("virtual_stages", dict(virtual_stages=2)),
    ("tp", dict(tp=-1)),
    ("dp_algorithm", dict(dp_algorithm="mesh")),
])
def test_bad_plan_names_the_field(field, kwargs):
    with pytest.raises(ValueError, match=field):
        Plan(**kwargs)


def test_unknown_catalog_keys():
    with pytest.raises(ValueError, match="unknown model"):
        Model.get("gpt5")
    with pytest.raises(ValueError, match="unknown cluster"):
        Cluster.get("dgx-z100")

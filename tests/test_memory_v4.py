"""Engine v4 memory (issue 37 item 8) and PyTorch's pipelining under FSDP2 (item 7), each against the
code or the layout it rests on:
- the loss's logits at their peak, by stack: Megatron's vocab-parallel cross entropy (fp32 softmax
  saved, gradient in place, cast back to bf16: 6 bytes a logit), PyTorch's F.cross_entropy on
  .float() logits (torchtitan: 12), the loss under torch.compile (4); missing before (the engine
  kept 4 bytes a logit inside the activations);
- TP overlap buffers by kind: Transformer Engine's initialize_ub (10 buffers of (tokens, h), six of
  them FP8 under FP8 GEMMs), PyTorch's AsyncTP (one symmetric-memory workspace);
- the activations an interleaved schedule holds, chunk by chunk, against Megatron's schedule table
  played op by op (labs.core.engine.pipeline._stage_order), with the end chunks Llama 3 lightens;
- Llama 3 405B at its own layout (TP8 PP16 interleaved V = 8, no activation checkpointing, first
  and last stages one layer lighter, its chunk inputs freed: Sec. 3.3.2) in 80 GB;
- torch.distributed.pipelining reduces gradients once a step under FSDP2;
- every line of est.memory adds up to its total, in estimate() and sweep().
"""

import dataclasses
import json
from types import SimpleNamespace

import pytest

from conftest import DATA, report
from labs.core import Cluster, Model, Plan, estimate, sweep
from labs.core.engine.calibration import layout_estimate
from labs.core.engine.eras import ERAS
from labs.core.engine.pipeline import _stage_order
from labs.core.engine.search import row_plan
from labs.core.engine.stages.xp import SCALAR

LAYOUTS = {r["id"]: r for r in json.loads((DATA / "nvidia_h100_layouts.json").read_text())["layouts"]}
LLAMA8 = Model.get("llama3-8b", seq_len=8192)


def _logits_line(est):
    """What the loss holds beyond the state, the activations and the buffers (0 before v4)."""
    m = est.memory
    return m.total - m.model_state - m.activations - m.buffers


@pytest.mark.parametrize("era, compile_, per_logit", [
    ("pytorch-fsdp2-2024", False, 12.0),  # F.cross_entropy(pred.float()): copy 4 + log_softmax 4 + its gradient 4
    ("pytorch-fsdp2-2024", True, 4.0),  # the compiled loss: bf16 logits and bf16 gradient
    ("megatron-core-2024", False, 6.0),  # vocab-parallel CE: fp32 softmax in place + the bf16 cast
])
def test_logits_at_the_loss_peak(era, compile_, per_logit):
    """Llama 3 8B, 8K tokens, 128K vocabulary: one micro-batch's logits on the last rank at the
    loss's peak. Before v4 this line was 0 (4 bytes a logit hidden in the activations): 12 bytes
    a logit at b = 1 is 12.6 GB, what torchtitan's measured peaks had above the engine's."""
    extra = dict(torch_compile=True) if compile_ else {}
    plan = Plan.for_era(era, tp=1, pp=1, dp=8, micro_batch=1, global_batch=64, **extra)
    est = estimate(LLAMA8, Cluster.get("dgx-h100", nodes=1), plan)
    by_hand = 1 * 8192 * LLAMA8.vocab * per_logit
    report(f"{era} compile={compile_}: logits GB", _logits_line(est) / 1e9, by_hand / 1e9)
    assert _logits_line(est) == pytest.approx(by_hand, rel=1e-9)
    assert est.memory.logits == pytest.approx(by_hand, rel=1e-9)


def test_logits_over_tp_and_gpipe():
    """Vocab-parallel logits are V/t a rank; GPipe keeps every micro-batch's saved softmax (4 bytes a
    logit) beside the one at its peak (6). A two-stage pipeline whose last stage holds most layers,
    so that it is the busiest."""
    model = Model.get("llama3-70b", seq_len=4096)
    cluster = Cluster.get("dgx-h100", nodes=2)
    for schedule, held in (("1f1b", 1), ("gpipe", 8)):
        plan = Plan(tp=8, pp=2, dp=1, micro_batch=1, global_batch=8, schedule=schedule, sequence_parallel=True,
                    first_stage_layers=10, last_stage_layers=70)
        est = estimate(model, cluster, plan)
        by_hand = 4096 * model.vocab / 8 * (6 + (held - 1) * 4)
        assert est.busiest_rank == 1
        assert est.memory.logits == pytest.approx(by_hand, rel=1e-12)
    # one MTP depth: a second head and loss a micro-batch, its saved softmax kept until the backward
    mtp = dataclasses.replace(model, mtp_depth=1)
    plan = Plan(tp=8, pp=2, dp=1, micro_batch=1, global_batch=8, sequence_parallel=True, first_stage_layers=10, last_stage_layers=70)
    assert estimate(mtp, cluster, plan).memory.logits == pytest.approx(4096 * model.vocab / 8 * (6 + 4), rel=1e-12)


@pytest.mark.parametrize("era, kind, fp8, per_token_hidden", [
    ("megatron-core-2024", "userbuffers", False, 10 * 2),  # initialize_ub: 4 ring_exchange + 2 pipeline + 4 bulk, bf16
    ("megatron-core-2024", "userbuffers", True, 6 * 1 + 4 * 2),  # the six all-gather buffers in FP8
    ("pytorch-fsdp2-2024", "async_tp", False, 1 * 2),  # one symmetric-memory workspace
])
def test_tp_overlap_buffers_by_kind(era, kind, fp8, per_token_hidden):
    """TP overlap buffers of (tokens of the micro-batch, h): 12 bf16 buffers for every kind before v4."""
    assert ERAS[era].tp_overlap_kind == kind
    model = Model.get("llama3-70b", seq_len=8192)
    extra = dict(torch_compile=True) if kind == "async_tp" else {}
    plan = Plan.for_era(era, tp=8, pp=1, dp=8, micro_batch=1, global_batch=64, sequence_parallel=True, tp_comm_overlap=True,
                        zero_stage=3 if era.startswith("pytorch") else 1, precision="fp8" if fp8 else "bf16", **extra)
    est = estimate(model, Cluster.get("dgx-h100", nodes=8), plan)
    by_hand = per_token_hidden * 8192 * model.hidden
    report(f"{kind} fp8={fp8}: overlap buffers GB", est.memory.tp_overlap / 1e9, by_hand / 1e9)
    assert est.memory.tp_overlap == pytest.approx(by_hand, rel=1e-12)


def _played(p, m, v, n, chunk_layers, stage):
    """Megatron's interleaved schedule on one stage, op by op (labs.core.engine.pipeline._stage_order):
    the most layer-passes it holds, each forward adding its chunk's layers, each backward freeing them."""
    level = peak = 0
    for op, _, chunk in _stage_order("interleaved", p, m, v, stage, n):
        level += chunk_layers[chunk] if op == "F" else -chunk_layers[chunk]
        peak = max(peak, level)
    return peak


@pytest.mark.parametrize("p, v, m, n", [(4, 2, 8, 4), (4, 4, 8, 8), (8, 3, 16, 8), (8, 6, 24, 8), (16, 8, 32, 16), (16, 8, 16, 16), (16, 8, 64, 32)])
@pytest.mark.parametrize("short", [0, 1, 2])
def test_interleaved_chunks_against_the_schedule_table(p, v, m, n, short):
    """The layer-passes the first, a middle and the last stage hold under Megatron's interleaved
    schedule, with chunks of c layers and the first stage's chunk 0 and the last stage's chunk
    v - 1 `short` layers lighter (Llama 3: c = 1, short = 1): the engine's count equals the
    schedule table played op by op."""
    from labs.core.engine.stages.memory import _interleaved_layer_passes

    c = 2
    group = SimpleNamespace(v=float(v), pp=float(p), group=float(n), m=float(m))
    for stage, layers, lighter in ((0, v * c - short, 0), (1, v * c, None), (p - 1, v * c - short, v - 1)):
        chunks = [c] * v
        if lighter is not None or stage == 0:
            chunks[0 if stage == 0 else v - 1] -= short
        played = _played(p, m, v, n, chunks, stage)
        warmup = min((p - stage - 1) * 2 + (v - 1) * n + 1, m * v)
        got = _interleaved_layer_passes(float(layers), 1.0 if stage == p - 1 else 0.0, stage, warmup / v, float(c), group, SCALAR)
        assert got == pytest.approx(played), (stage, chunks)


def test_llama3_405b_fits_at_its_layout():
    """Llama 3 405B on 8,192 H100s (Table 4: TP8 PP16 DP64, 16M tokens), interleaved with V = 8 and
    one layer a chunk, the first and last stages one layer lighter, no activation checkpointing,
    each chunk's input freed after its forward (Sec. 3.3.2). The busiest rank is a middle one,
    holding (16 - 1 - 1) 2 + 7 x 16 + 1 = 141 layer-passes (Megatron's table, N = 16): by hand,
    per token and layer over 8 TP ranks, 12h + 4kv + 6f + 4a bytes (31.8 s b h / t), less the
    chunk's input, 2h. Before v4: 97.1 GB (activations 75.2, buffers 14.8)."""
    est = layout_estimate(LAYOUTS["meta_llama3_405b_8192"])
    h, f, kv, a, s, t = 16384, 53248, 1024, 128, 8192, 8
    per_layer = s * (12 * h + 4 * kv + 6 * f + 4 * a) / t
    by_hand = 141 * (per_layer - s * 2 * h / t)
    print({k: round(v / 1e9, 2) for k, v in est.memory.lines().items()})
    report("Llama 3 405B rank 1 activations, GB", est.memory.activations / 1e9, by_hand / 1e9)
    assert est.busiest_rank == 1
    assert est.memory.activations == pytest.approx(by_hand, rel=1e-9)
    assert est.fits and est.hbm_margin_bytes > 0
    assert est.memory.fragmentation == 0.0  # Sec. 3.3.2's allocator work (labs.core.engine.eras)


@pytest.mark.parametrize("row_id", ["meta_llama3_405b_8192", "meta_llama3_405b_16384", "nemo_llama31_405b_1024", "nemo_nemotron4_340b_256"])
def test_interleaved_300b_layouts_fit(row_id):
    """Published interleaved layouts of 300-400B models at their smallest GPU counts fit."""
    row = LAYOUTS[row_id]
    assert row["vp"] > 1
    est = layout_estimate(row)
    report(f"{row_id} memory / HBM", est.memory.total / est.cluster.gpu.hbm_bytes, 1.0)
    assert est.fits and est.hbm_margin_bytes > 0


def test_fsdp2_pipelining_reduces_once_a_step():
    """torch.distributed.pipelining runs every backward but a stage's last with FSDP's gradient
    sync off (stage.py backward_maybe_with_nosync): under PP the FSDP2 stack's default reduces
    once a step, as grad_sync="step" does (the whole fp32 gradients accumulate), not every
    micro-batch (its default without PP)."""
    model = Model.get("llama3-8b", seq_len=4096)
    cluster = Cluster.get("dgx-h100", nodes=4)
    common = dict(tp=2, pp=4, dp=4, micro_batch=1, global_batch=64, zero_stage=2)
    default, step, each = (estimate(model, cluster, Plan.for_era("pytorch-fsdp2-2024", **common, **x))
                           for x in ({}, {"grad_sync": "step"}, {"grad_sync": "microbatch"}))
    calls = {name: {c.key: c.calls for c in est.collectives} for name, est in (("default", default), ("step", step), ("each", each))}
    assert calls["default"]["dp_reduce"] == calls["step"]["dp_reduce"] < calls["each"]["dp_reduce"]
    assert default.time.dp_comm == pytest.approx(step.time.dp_comm, rel=1e-12)
    assert default.memory.total == pytest.approx(step.memory.total, rel=1e-12)
    assert default.memory.gradients > each.memory.gradients  # whole, not sharded
    no_pp = dict(common, pp=1, dp=16)
    assert estimate(model, cluster, Plan.for_era("pytorch-fsdp2-2024", **no_pp)).memory.gradients == pytest.approx(
        estimate(model, cluster, Plan.for_era("pytorch-fsdp2-2024", **no_pp, grad_sync="microbatch")).memory.gradients)


def test_torch_pipelining_keeps_stage_outputs():
    """torch's fwd_cache keeps each chunk's output until its backward: one (b, s, h) bf16 tensor (over
    t under SP) a chunk-pass in flight on top of the layers' own."""
    model = Model.get("llama3-8b", seq_len=4096)
    cluster = Cluster.get("dgx-h100", nodes=2)
    plan = Plan.for_era("pytorch-fsdp2-2024", tp=1, pp=4, dp=4, micro_batch=1, global_batch=64, zero_stage=2)
    est = estimate(model, cluster, plan)
    megatron = estimate(model, cluster, Plan(tp=1, pp=4, dp=4, micro_batch=1, global_batch=64, zero_stage=1, flash_attention=True, recompute="none"))
    held = 4 - est.busiest_rank  # 1F1B: p - r micro-batches
    assert est.memory.activations - megatron.memory.activations == pytest.approx(held * 2 * 4096 * model.hidden, rel=1e-9)


@pytest.mark.parametrize("era", [None, "megatron-core-2024", "llama3-2024", "pytorch-fsdp2-2024"])
def test_lines_add_up_in_estimate_and_sweep(era):
    """est.memory's lines sum to its total, and sweep() reports the same total for the same plan."""
    model = Model.get("llama3-70b", seq_len=4096)
    cluster = Cluster.get("dgx-h100", nodes=8)
    df = sweep(model, cluster, global_batch=128, era=era, tp=8, pp=4)
    for i in (0, len(df) // 2, len(df) - 1):
        row = df.iloc[i]
        est = estimate(model, cluster, row_plan(row))
        lines = est.memory.lines()
        assert sum(lines.values()) == pytest.approx(est.memory.total, rel=1e-12)
        assert "other_buffers" not in lines
        assert row["memory_bytes"] == pytest.approx(est.memory.total, rel=1e-9)


def test_fsdp2_pipeline_send_recv_not_overlapped():
    """torch.distributed.pipelining waits on each time step's batched sends and receives
    (PipelineScheduleMulti._step_microbatches: _batch_p2p(ops).wait(); Schedule1F1B waits each
    receive before its compute): the FSDP2 stack has no overlapped send/recv, so every
    micro-batch's hops are exposed, 2 m v of them a step beside the ramp."""
    assert ERAS["pytorch-fsdp2-2024"].pp_overlap == (False,)
    with pytest.raises(ValueError, match="pp_overlap"):
        Plan.for_era("pytorch-fsdp2-2024", tp=1, pp=4, dp=4, micro_batch=1, global_batch=64, pp_overlap=True)
    model = Model.get("llama3-8b", seq_len=4096)
    plan = Plan.for_era("pytorch-fsdp2-2024", tp=1, pp=4, dp=4, micro_batch=1, global_batch=64, zero_stage=2)
    est = estimate(model, Cluster.get("dgx-h100", nodes=2), plan)
    pp = next(c for c in est.collectives if c.key == "pp")
    assert pp.wire_s > 0 and est.time.pp_comm >= pp.wire_s  # every hop on the wire is waited for

"""Engine v3's four mechanisms (issue #24): each test failed on the v2 engine and checks a value
derived here from the source that defines the mechanism, not one the engine computed."""

import math
from dataclasses import replace

import numpy as np
import pytest

from conftest import report
from labs.core import Cluster, Model, Plan, estimate
from labs.core.engine.calibration import table2_plan
from labs.core.engine.memory import in_flight_columns
from labs.core.engine.pipeline import SCHEDULES, OpCosts, _play, dualpipe_timeline, idle_time, schedule_table, timeline
from labs.core.engine.topology import group_cost

# NCCL src/graph/tuning.cc (NVIDIA/nccl commit 5067397), microseconds, (LL, LL128, Simple).
RING_BASE_US = (6.6, 14.0, 8.4)
RING_NVLINK_HOP_US = (0.6, 1.9, 3.4)
RING_NET_HOP_US = (2.7, 4.0, 14.0)


# ---- 2. NCCL's tree runs all-reduce only ----------------------------------------------------------
def test_zero3_on_1536_a100s_pays_the_same_dp_communication_under_tree_and_ring():
    """Megatron 2021 Table 2's ZeRO-3 plan, no overlap: its collectives are reduce-scatters and
    all-gathers, which NCCL never runs as a tree, so forcing the tree changes nothing."""
    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-a100", nodes=192)
    plan = replace(table2_plan("ZeRO-3", 1536), dp_overlap=False)
    ring = estimate(model, cluster, replace(plan, dp_algorithm="ring"))
    tree = estimate(model, cluster, replace(plan, dp_algorithm="tree"))
    report("ZeRO-3 1,536 A100 DP comm, tree / ring", tree.time.dp_comm / ring.time.dp_comm, 1.0)
    assert tree.time.dp_comm == pytest.approx(ring.time.dp_comm, rel=1e-12)
    assert tree.dp_exposed_latency_s == pytest.approx(ring.dp_exposed_latency_s, rel=1e-12)


def test_a_large_all_gather_over_1536_ranks_pays_the_rings_latency_even_when_tree_is_asked():
    """tuning.cc's ring latency: base + (nsteps - nInterSteps) intra + nInterSteps inter, with
    nsteps = N - 1 and nInterSteps = nodes - 1 for an all-gather. At 900 MB (a GPT-3 layer's
    weights gathered in one call) LL128 wins: its 0.92 of the bandwidth costs ~0.5 ms on a
    ~5.3 ms transfer and saves ~3.9 ms of Simple's hop latency."""
    cluster = Cluster.get("dgx-a100", nodes=192)
    n, nodes = 1536, 192
    expected = (RING_BASE_US[1] + (n - 1 - (nodes - 1)) * RING_NVLINK_HOP_US[1] + (nodes - 1) * RING_NET_HOP_US[1]) * 1e-6
    for algorithm in ("tree", "ring", "auto"):
        got = group_cost("all_gather", 9e8, cluster, n, 1, algorithm).latency_s
        report(f"900 MB all-gather latency, 1,536 A100s, {algorithm}", got, expected)
        assert got == pytest.approx(expected, rel=1e-9)


def test_a_1mb_all_reduce_is_not_charged_simple_protocol_latency():
    """1 MB over 8 H100s: NCCL's model picks LL (6.6 + 14 x 0.6 us) over Simple (8.4 + 14 x 3.4)."""
    cluster = Cluster.get("dgx-h100")
    expected = (RING_BASE_US[0] + 14 * RING_NVLINK_HOP_US[0]) * 1e-6
    got = group_cost("all_reduce", 1e6, cluster, 8, 1, "ring").latency_s
    report("1 MB ring all-reduce latency, 8 H100s", got, expected)
    assert got == pytest.approx(expected, rel=1e-9)
    assert got < (RING_BASE_US[2] + 14 * RING_NVLINK_HOP_US[2]) * 1e-6 / 3


def test_tree_bandwidth_is_capped_below_the_rings():
    """tuning.cc: tree busBw = min(busBw x 0.92, ...), algbw = busBw / 2: a 4 GB tree all-reduce
    moves 2 M / (0.92 busbw) where the ring moves 2 (N-1)/N M / busbw."""
    cluster = Cluster.get("dgx-h100", nodes=16)
    ring = group_cost("all_reduce", 4e9, cluster, 128, 1, "ring").bandwidth_s
    tree = group_cost("all_reduce", 4e9, cluster, 128, 1, "tree").bandwidth_s
    expected = 1 / 0.92 / (127 / 128)
    report("tree / ring bandwidth term, 4 GB over 128 H100s", tree / ring, expected)
    assert tree / ring == pytest.approx(expected, rel=1e-9)


# ---- 3. Ulysses is bounded by query heads, K/V heads replicate ------------------------------------
def test_llama3_405b_runs_ulysses_cp16_at_tp8_paying_for_the_replicated_kv():
    """Llama 3 405B at TP 8: 128 / 8 = 16 query heads and 8 / 8 = 1 K/V head per rank, so Ulysses
    CP 16 runs, each K/V head repeated to all 16 CP ranks before the all-to-all. Per layer and pass
    one all-to-all of Q, K, V (s/cp tokens x (h + 2 kv x 16)/t values) and one of the output
    (s/cp x h/t); each rank sends (cp-1)/cp of both; forward and backward, no recompute: 2 passes."""
    model = Model.get("llama3-405b")
    cluster = Cluster.get("dgx-h100", nodes=512)
    plan = Plan(tp=8, cp=16, pp=16, dp=2, micro_batch=1, global_batch=64, zero_stage=1, sequence_parallel=True,
                cp_algorithm="ulysses", flash_attention=True, recompute="selective")
    est = estimate(model, cluster, plan)
    cp = next(c for c in est.collectives if c.key == "cp")
    m, layers = 64 // 2, math.ceil(126 / 16)  # micro-batches; layers on the heaviest of 16 even stages
    s, h, kv, t, c = model.seq_len / 16, 16384, 1024, 8, 16
    per_pass = (c - 1) / c * (s * (h + 2 * kv * c) / t * 2 + s * h / t * 2)
    expected = m * layers * 2 * per_pass
    report("Ulysses CP16 bytes per GPU, Llama 3 405B TP8 (GB)", cp.sent_bytes / 1e9, expected / 1e9)
    assert cp.sent_bytes == pytest.approx(expected, rel=1e-12)
    unreplicated = m * layers * 2 * (c - 1) / c * (s * (h + 2 * kv) / t * 2 + s * h / t * 2)
    assert cp.sent_bytes / unreplicated == pytest.approx((2 * h + 2 * kv * 16) / (2 * h + 2 * kv), rel=1e-12)


# ---- 4. Overlap is not free -------------------------------------------------------------------------
@pytest.mark.parametrize("gpus", [64, 128, 512])
def test_overlapped_gradient_reduction_pays_for_nccls_sms(gpus):
    """Lab 05 Act I (ZeRO-1, overlap on): the reduce-scatter hides behind the last micro-batch's
    backward, B, all but max(W - B, W / C) (the last of its C buckets always waits; with engine v4's
    GEMMs by shape one 7B sequence's backward is a little shorter than W here). What ran hidden ran
    beside the backward on 16 of the H100's 132 SMs (one per NCCL channel, NVIDIA/nccl #689 and
    #1453), so that compute took 132 / 116 of its time, and lost 5% of the hidden time to the collective's HBM
    traffic (OVERLAP_HBM_SLOWDOWN, issue 37): exposed = e + (W - e) x (16/116 + 0.051)."""
    from labs.core.engine.perf import _run
    from labs.core.engine.stages.parallel import OVERLAP_HBM_SLOWDOWN
    from labs.core.scenarios.lab05 import dp_wall_estimate

    est = dp_wall_estimate(gpus, overlap=True)
    reduce = next(c for c in est.collectives if c.key == "dp_reduce")
    w, calls = reduce.wire_s, reduce.calls
    window = _run(est.model, est.cluster, est.plan)["stage_backward_s"]
    plain = max(w - window, w / calls)
    expected = plain + (w - plain) * (16 / (132 - 16) + OVERLAP_HBM_SLOWDOWN)
    report(f"exposed ZeRO-1 reduce-scatter with overlap, {gpus} H100s (ms)", reduce.exposed_s * 1e3, expected * 1e3)
    assert est.cluster.gpu.sms == 132
    assert reduce.exposed_s == pytest.approx(expected, rel=1e-12)
    assert reduce.exposed_s > 1.5 * w / calls  # v2 charged the last bucket only


# ---- 1. Interleaving's micro-batch group size N -------------------------------------------------------
GROUP_CASES = [(p, m, v, n) for p, m, v in ((2, 4, 2), (4, 8, 2), (4, 16, 3), (8, 16, 2), (8, 32, 4), (16, 32, 2))
               for n in sorted({p, p + 1, 2 * p, m}) if p <= n <= m and not 0 < m % n < p]


@pytest.mark.parametrize("p,m,v,n", GROUP_CASES)
def test_interleaved_timeline_follows_megatrons_group_order_and_idles_as_the_closed_form(p, m, v, n):
    """Megatron-LM's get_schedule_table: stage s runs N micro-batches through chunk 0, then chunk 1,
    ...; its warm-up is (p - s - 1) 2 + (v - 1) N forwards. Played without messages, every stage
    idles (p - 1)(T_F + T_B + T_W) / v whatever N (idle_time), for random op costs; and stage s
    holds ((p - s - 1) 2 + (v - 1) N + 1) / v stage-loads at its peak, the memory model's count."""
    rng = np.random.default_rng(p * 1000 + m * 10 + n)
    for _ in range(3):
        tf, tb, tw = rng.uniform(0.2, 2.0, 3)
        t = timeline(p, m, "interleaved", v, OpCosts(tf, tb, tw), group=n)
        ops = {(int(s), int(i), int(c), str(o)) for s, i, c, o in zip(t.stage, t.microbatch, t.chunk, t.op)}
        assert len(ops) == 2 * p * m * v
        first = [(int(i), int(c)) for s, i, c, o in zip(t.stage, t.microbatch, t.chunk, t.op) if s == 0 and o == "F"]
        assert first == schedule_table(m, v, n)
        closed = float(idle_time(p, m, SCHEDULES.index("interleaved"), v, tf, tb, tw))
        assert np.max(np.abs(t.idle_per_stage() - closed)) < 1e-12 * t.makespan
    stage = np.arange(p)
    expected = np.minimum(m, ((p - stage - 1) * 2 + (v - 1) * n + 1) / v)
    assert np.allclose(t.peak_in_flight(), expected, rtol=1e-12)
    assert np.allclose(in_flight_columns(SCHEDULES.index("interleaved"), p, m, v, stage, n), expected, rtol=1e-12)


@pytest.mark.parametrize("p,m,v,n", [(4, 8, 2, 2), (8, 16, 2, 4), (16, 32, 2, 8), (16, 64, 4, 4)])
def test_megatrons_order_waits_on_itself_below_p_and_is_refused(p, m, v, n):
    """With N < p, a group's first micro-batch needs its chunk-k output back from stage p - 1
    before the stage may run chunk k + 1, but Megatron's fixed warm-up has the last stage wait for
    a backward that needs that forward first: the order deadlocks, which is why schedules.py
    refuses N outside [p, m]. The engine refuses it too, by name, where a Plan enters."""
    with pytest.raises(RuntimeError, match="deadlocked"):
        _play(p, m, "interleaved", v, OpCosts(), n)
    with pytest.raises(ValueError, match="group"):
        timeline(p, m, "interleaved", v, group=n)
    with pytest.raises(ValueError, match="microbatch_group_size"):
        Plan(tp=8, pp=p, dp=1, micro_batch=1, global_batch=m, schedule="interleaved", virtual_stages=v, microbatch_group_size=n)


def test_llama3_405b_group_size_trades_memory_not_bubble_without_messages():
    """Llama 3 405B on 16 stages, v = 2, 32 micro-batches: N = 16 (Megatron's default) and N = 32
    (one group) have the same bubble without messages, (p-1)/(v m) of the ideal, and N = 32 holds
    (v - 1)(32 - 16)/v = 8 more micro-batches' layers on stage 0 (31/2 + 8 against 31/2)."""
    model, cluster = Model.get("llama3-405b"), Cluster.get("dgx-h100", nodes=256)
    base = dict(tp=8, pp=16, dp=16, micro_batch=1, global_batch=512, zero_stage=1, sequence_parallel=True,
                schedule="interleaved", virtual_stages=2, flash_attention=True, recompute="selective")
    small, large = (estimate(model, cluster, Plan(**base, microbatch_group_size=n)) for n in (16, 32))
    assert small.bubble_fraction == pytest.approx(large.bubble_fraction, rel=1e-12)
    held = lambda n: ((16 - 1) * 2 + (2 - 1) * n + 1) / 2  # noqa: E731
    ratio = (large.memory.activations) / (small.memory.activations)
    report("Llama 3 405B stage-0 activations, N = 32 / N = 16", ratio, held(32) / held(16))
    assert large.memory.activations > small.memory.activations


def _message_cases():
    rng = np.random.default_rng(24)
    cases = []
    while len(cases) < 60:
        p, v = int(rng.choice([2, 3, 4, 6, 8, 16])), int(rng.choice([1, 2, 3, 4]))
        m = p * int(rng.choice([1, 2, 3, 4]))
        n = int(rng.choice([k for k in range(p, m + 1) if m % k == 0]))
        tf, tb, tw = rng.uniform(0.2, 3.0, 3)
        comm = rng.uniform(0.0, 1.0) * min(tf, tb + tw) / v  # messages no longer than a chunk's op
        cases.append((p, m, v, n, float(tf), float(tb), float(tw), float(comm)))
    return cases


@pytest.mark.parametrize("p,m,v,n,tf,tb,tw,comm", _message_cases())
def test_interleaved_idle_with_messages_is_the_closed_form(p, m, v, n, tf, tb, tw, comm):
    """With p2p messages the interleaved timeline idles the closed form of pipeline.message_idle
    on top of (p-1)(T_F+T_B+T_W)/v: the ramp's 2(p-1) messages, and at each of the v-1 chunk
    changes of warm-up and cool-down max(0, p comm - (N - p) x a chunk's op), which a group
    larger than p covers."""
    t = timeline(p, m, "interleaved", v, OpCosts(tf, tb, tw, comm), group=n)
    closed = float(idle_time(p, m, SCHEDULES.index("interleaved"), v, tf, tb, tw, comm, n))
    assert np.max(np.abs(t.idle_per_stage() - closed)) < 1e-12 * t.makespan


def test_llama3_405b_group_size_moves_the_step_time():
    """Llama 3 405B on 16 stages, v = 4, 64 micro-batches. At N = p = 16 each of the 2 (v - 1)
    chunk changes waits for p = 16 messages a group's first micro-batch needs to come round; at
    N = 32 the 16 extra micro-batches' chunk-ops (far longer than a message) cover them. So
    step(16) - step(32) = 2 (v - 1) p x one message, and N = 32 holds (v-1)(32-16)/v = 12 more
    micro-batches' layers on stage 0."""
    model, cluster = Model.get("llama3-405b"), Cluster.get("dgx-h100", nodes=256)
    base = dict(tp=8, pp=16, dp=16, micro_batch=1, global_batch=1024, zero_stage=1, sequence_parallel=True, schedule="interleaved",
                virtual_stages=4, flash_attention=True, recompute="selective", tp_comm_overlap=True, pp_overlap=True)
    small, large = (estimate(model, cluster, Plan(**base, microbatch_group_size=n)) for n in (16, 32))
    pp = next(c for c in small.collectives if c.key == "pp")
    hop = pp.wire_s / (2 * 64 * 4)  # the map's wire time is 2 m v messages
    expected = 2 * (4 - 1) * 16 * hop
    report("Llama 3 405B step, N = 16 minus N = 32 (ms)", (small.step_time_s - large.step_time_s) * 1e3, expected * 1e3)
    assert small.step_time_s - large.step_time_s == pytest.approx(expected, rel=1e-9)
    assert large.memory.activations > small.memory.activations


# ---- 5. DualPipe ------------------------------------------------------------------------------------
@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (4, 20), (6, 12), (8, 16), (8, 20), (16, 32), (16, 64)])
def test_dualpipe_timeline_runs_every_op_once_and_idles_the_readmes_bubble(p, m):
    """deepseek-ai/DualPipe README: bubble (PP/2 - 1)(F&B + B - 3W), activations PP + 1 per
    device, against 1F1B's (PP - 1)(F + B) and PP. With F = B = W = 1 (F&B = F + B = 3, B a
    whole backward = 2 here, as the README defines them): (p/2 - 1) x 2, exact on every rank."""
    t = dualpipe_timeline(p, m, OpCosts(1.0, 0.5, 0.5))  # T_F = 1, whole backward T_B + T_W = 1, W = 0.5
    for op in ("F", "B"):
        sel = t.op == op
        assert sorted(zip(t.stage[sel], t.microbatch[sel])) == sorted((r, i) for r in range(p) for i in range(m))
    t = dualpipe_timeline(p, m, OpCosts(1.0, 1.0, 1.0))
    f, b, w = 1.0, 2.0, 1.0  # forward, whole backward, weight pass
    expected = (p / 2 - 1) * ((f + b) + b - 3 * w)
    assert np.max(np.abs(t.idle_per_stage() - expected)) < 1e-12 * t.makespan
    assert t.peak_in_flight().max() == p + 1


def test_dualpipe_idles_less_than_1f1b_and_is_drawn():
    """Over random op costs DualPipe's idle stays under the 1F1B timeline's on the same stages and
    micro-batches (the README's comparison); the timeline draws like the others."""
    from labs.core.charts import timeline_figure

    rng = np.random.default_rng(3)
    for p, m in ((4, 16), (8, 32), (16, 32)):
        for _ in range(3):
            costs = OpCosts(*rng.uniform(0.5, 2.0, 3))
            dual, plain = dualpipe_timeline(p, m, costs), timeline(p, m, "1f1b", 1, costs)
            assert dual.idle_per_stage().max() < plain.idle_per_stage().max()
    fig = timeline_figure(dualpipe_timeline(8, 20), "DualPipe, 8 ranks, 20 micro-batches")
    assert {trace.name for trace in fig.data} == {"forward", "backward", "weight grad"}
    with pytest.raises(ValueError, match="DualPipe"):
        dualpipe_timeline(5, 20)
    with pytest.raises(ValueError, match="DualPipe"):
        dualpipe_timeline(8, 12)


def test_one_nccl_version_prices_every_hop():
    """Point-to-point sends and the expert all-to-all take their per-hop latency from the links
    (labs.core.engine.hardware); collectives from topology's copy of NCCL's tuning.cc table. Both are the
    same commit's Ring/Simple figures: NVLink 3.4, PCIe 5.7, network 14.0 us, base 8.4 us (the
    links had kept an older NCCL's 9.6 us network hop). Instinct's xGMI mesh links take RCCL's
    Simple hop instead (2.1 us, ROCm/rccl tuning.cc's MI300X model), which topology holds too."""
    from labs.core.engine import topology
    from labs.core.engine.hardware import LINKS, NCCL_BASE_LATENCY_S

    simple = {kind: topology._HOP_US[(kind, "ring")][2] * 1e-6 for kind in ("nvlink", "pci", "net")}
    assert NCCL_BASE_LATENCY_S == topology._BASE_US["ring"][2] * 1e-6
    mesh = {key for key, link in LINKS.items() if link.mesh_peers}
    assert mesh == {"xgmi-mi300x", "xgmi-mi355x"}
    for key in mesh:
        assert LINKS[key].latency_s == pytest.approx(topology._RCCL_XGMI_HOP_US[1] * 1e-6, rel=1e-12), key
    for key, link in LINKS.items():
        if key in mesh:
            continue
        # NVLink-C2C joins a Grace CPU to its GPUs: the host's link, where offload goes, at PCIe's hop
        kind = "pci" if "pcie" in key or key == "nvlink-c2c" else "nvlink" if "nvl" in key else "net"
        assert link.latency_s == pytest.approx(simple[kind], rel=1e-12), (key, link.latency_s, simple[kind])

"""NCCL's PAT (issue #24, mechanism 2): reduce-scatter and all-gather over groups of one GPU per
node run PAT where NCCL's cost model says it is cheaper than the ring, from NCCL 2.23 on.

Every expectation is a hand count of NCCL's src/graph/tuning.cc (NVIDIA/nccl commit 5067397; PAT's
latency terms as they came in 2.23.4, commit 68b5423, its bandwidth factor 0.75 from 2.24.3, 0.85
before), written out here with its constants:
- PAT (Simple only, nNodes == nRanks): latency 8.0 + log2i(nNodes) x 14 / 3.5 + nRanks x 2.8 us
  (14 us: the tree's Simple network hop, which tuning.cc charges at one GPU per node); time
  nBytes / (0.75 busBw), nBytes the whole buffer (enqueue.cc: ncclFuncMaxSendRecvCount).
- Ring at one GPU per node: base (LL 6.6, LL128 14.0, Simple 8.4 us) + (n - 1) network hops at the
  tree's (LL 5.0, LL128 8.5, Simple 14.0 us); bytes (n - 1)/n nBytes at busBw x (0.5, 0.92, 1).
No nccl-tests run of PAT with its numbers printed was found (NVIDIA/nccl #1473, #1594 describe it;
the 2.23 blog post shows it as a chart only), so the checks are against the model's own source.
"""

import math
from dataclasses import replace

import pytest

from conftest import report
from labs.core import Cluster, Model, Plan
from labs.core.engine.eras import DEFAULT_STACK, ERAS, stack_of
from labs.core.engine.perf import plan_columns
from labs.core.engine.step import evaluate_plan
from labs.core.engine.topology import PRE_PAT_AUTO, collective_columns, group_cost

US = 1e-6
RING_BASE_US = {"LL": 6.6, "LL128": 14.0, "Simple": 8.4}
NET_TREE_HOP_US = {"LL": 5.0, "LL128": 8.5, "Simple": 14.0}  # ppn = 1: the tree's network latency
RING_PROTOCOL_BW = {"LL": 0.5, "LL128": 0.92, "Simple": 1.0}


def one_nic_busbw(cluster):
    """A group of one GPU per node owns one of the node's rails (labs.core.engine.topology's docstring)."""
    return cluster.rails / cluster.gpus_per_node * cluster.inter.effective_bytes_per_s


def pat_s(nbytes, n, busbw):
    return (8.0 + math.floor(math.log2(n)) * 14.0 / 3.5 + n * 2.8) * US + nbytes / (0.75 * busbw)


def ring_s(nbytes, n, busbw):
    """The cheapest protocol of the ring across n nodes, one GPU each."""
    return min((RING_BASE_US[p] + (n - 1) * NET_TREE_HOP_US[p]) * US + (n - 1) / n * nbytes / (RING_PROTOCOL_BW[p] * busbw)
               for p in RING_BASE_US)


@pytest.mark.parametrize("op", ["all_gather", "reduce_scatter"])
@pytest.mark.parametrize("n, nbytes", [(16, 1e6), (64, 1e5), (64, 16e6), (512, 64e6)])
def test_pat_prices_a_one_gpu_per_node_group_as_tuning_cc(op, n, nbytes):
    """DP behind TP = 8 on DGX H100s (stride 8): 'auto' takes PAT where it is cheaper than the ring,
    at PAT's price; 64 ranks, 1 MB: 8 + 6 x 4 + 179.2 = 211.2 us of latency against the ring's
    6.6 + 63 x 5.0 = 321.6 us under LL."""
    cluster = Cluster.get("dgx-h100", nodes=n)
    busbw = one_nic_busbw(cluster)
    pat, ring = pat_s(nbytes, n, busbw), ring_s(nbytes, n, busbw)
    assert pat < ring  # each case is one where PAT wins
    got = group_cost(op, nbytes, cluster, n, 8, "auto").total_s
    report(f"{op} {nbytes / 1e6:g} MB over {n} nodes x 1 GPU, auto (PAT)", got, pat)
    assert got == pytest.approx(pat, rel=1e-9)
    forced = group_cost(op, nbytes, cluster, n, 8, "ring").total_s
    report(f"{op} {nbytes / 1e6:g} MB over {n} nodes x 1 GPU, ring", forced, ring)
    assert forced == pytest.approx(ring, rel=1e-9)


def test_the_ring_wins_large_messages():
    """1 GB over 64 nodes: the ring's Simple protocol, 0.89 ms of hops + 63/64 GB at the NIC, beats
    PAT's 0.21 ms + 1 GB at 0.75 of it; NCCL's model keeps the ring, and so does 'auto'."""
    cluster = Cluster.get("dgx-h100", nodes=64)
    busbw = one_nic_busbw(cluster)
    ring, pat = ring_s(1e9, 64, busbw), pat_s(1e9, 64, busbw)
    got = group_cost("all_gather", 1e9, cluster, 64, 8, "auto").total_s
    report("1 GB all-gather over 64 nodes x 1 GPU, auto", got, ring)
    assert ring < pat
    assert got == pytest.approx(ring, rel=1e-9)


@pytest.mark.parametrize("stride", [1, 2, 4])
def test_no_pat_with_more_than_one_gpu_per_node(stride):
    """ncclPatEnable: nNodes != nRanks -> 0. 64 ranks packed 8, 4 or 2 to a node price the same
    under 'auto' as under NCCL before PAT."""
    cluster = Cluster.get("dgx-h100", nodes=64)
    for op in ("all_gather", "reduce_scatter"):
        for nbytes in (1e5, 1e6, 16e6):
            auto = group_cost(op, nbytes, cluster, 64, stride, "auto").total_s
            before = sum(float(x) for x in collective_columns(op, nbytes, cluster, 64, stride, PRE_PAT_AUTO))
            assert auto == pytest.approx(before, rel=1e-12), (op, nbytes, stride)


def test_no_pat_for_all_reduce():
    """tuning.cc: `if (coll == ncclFuncAllReduce && a == NCCL_ALGO_PAT) continue;`."""
    cluster = Cluster.get("dgx-h100", nodes=64)
    for nbytes in (1e5, 1e6, 16e6):
        auto = group_cost("all_reduce", nbytes, cluster, 64, 8, "auto").total_s
        before = sum(float(x) for x in collective_columns("all_reduce", nbytes, cluster, 64, 8, PRE_PAT_AUTO))
        assert auto == pytest.approx(before, rel=1e-12), nbytes


def test_only_todays_stack_has_pat():
    """PAT came with NCCL 2.23.4 (September 2024); every named stack of 2024 or before ran an older
    NCCL (labs.core.engine.eras: nccl_pat); era=None is today's software, and the stacks of 2025
    that name their NCCL (Megatron-Core's and torchtitan's, pytorch/pytorch#146073) run it."""
    assert stack_of(None).nccl_pat
    assert [name for name, era in ERAS.items() if era.nccl_pat] == ["megatron-core-2025", "torchtitan-2025"]
    # the same kernels otherwise, but for the experts' grouped GEMM launch of today's stacks (engine v4)
    assert replace(stack_of(None), name=DEFAULT_STACK, nccl_pat=False, grouped_gemm=ERAS[DEFAULT_STACK].grouped_gemm) == ERAS[DEFAULT_STACK]
    assert stack_of(None).grouped_gemm == "grouped"


def _bucketed_reduce(stack, dp_algorithm="auto"):
    """Llama 3 8B, TP 8 x DP 64 on 64 DGX H100s, ZeRO-1 with 25 MB buckets of fp32 gradients:
    each bucket's reduce-scatter runs over 64 nodes, one GPU each."""
    model, cluster = Model.get("llama3-8b"), Cluster.get("dgx-h100", nodes=64)
    plan = Plan(tp=8, dp=64, zero_stage=1, micro_batch=1, global_batch=128, grad_reduce_dtype="fp32", bucket_bytes=25e6)
    out = evaluate_plan(model, cluster, plan_columns(plan), dp_algorithm, stack)
    grads = model.params / 8 * 4  # the rank's dense parameters after TP, fp32
    calls = math.ceil(grads / 25e6)
    return out, calls, grads / calls, one_nic_busbw(cluster)


def test_a_bucketed_reduce_scatter_runs_pat_on_todays_stack_only():
    """Each of the 161 buckets (25 MB) pays PAT's price under era=None and the ring's under
    Megatron-Core 2024, whose NCCL predated PAT; forcing the ring gives the ring on both."""
    today, calls, nbytes, busbw = _bucketed_reduce(stack_of(None))
    assert today["coll_dp_reduce_calls"] == calls and today["coll_dp_reduce_members_per_node"] == 1
    report("ZeRO-1 bucket reduce-scatters, 64 nodes x 1 GPU, era=None", today["coll_dp_reduce_wire_s"], calls * pat_s(nbytes, 64, busbw))
    assert today["coll_dp_reduce_wire_s"] == pytest.approx(calls * pat_s(nbytes, 64, busbw), rel=1e-9)
    for stack, algorithm in ((ERAS[DEFAULT_STACK], "auto"), (stack_of(None), "ring"), (ERAS[DEFAULT_STACK], "ring")):
        out = _bucketed_reduce(stack, algorithm)[0]
        report(f"the same, {stack.name} nccl_pat={stack.nccl_pat} {algorithm}", out["coll_dp_reduce_wire_s"], calls * ring_s(nbytes, 64, busbw))
        assert out["coll_dp_reduce_wire_s"] == pytest.approx(calls * ring_s(nbytes, 64, busbw), rel=1e-9)
    assert today["step_time_s"] < _bucketed_reduce(ERAS[DEFAULT_STACK])[0]["step_time_s"]

"""Context and expert parallelism in the engine (Lab 11's physics): causal work per CP rank under
each split, DeepSpeed-Ulysses' degree bound and all-to-all bytes, the contiguous ring's
imbalance in the step model, the capacity factor's drop share, and EP's all-to-all bytes, each
against a count written out by hand."""

from math import exp

import numpy as np
import pytest

from labs.core import Cluster, Model, Plan, estimate
from labs.core.engine.context import causal_imbalance, causal_work, check_ulysses, kv_heads_per_tp_rank
from labs.core.engine.experts import poisson_drop_fraction, tokens_per_expert
from labs.core.engine.perf import CP_ALGORITHMS, plan_columns
from labs.core.engine.search import sweep
from labs.core.engine.step import evaluate

L3 = Model.get("llama3-8b")  # 32 heads, 8 KV heads, 8,192 tokens
H100_2 = Cluster.get("dgx-h100", nodes=2)


# ---- causal work per rank ---------------------------------------------------------------------
def test_causal_work_by_hand_on_eight_tokens():
    """8 tokens, 2 ranks; query t sees t + 1 keys. Contiguous: {0..3} 1+2+3+4 = 10, {4..7}
    5+6+7+8 = 26. Zig-zag (4 chunks of 2; rank 0 chunks 0 and 3, rank 1 chunks 1 and 2):
    (1+2)+(7+8) = 18 and (3+4)+(5+6) = 18. Striped (rank 0 even tokens): 1+3+5+7 = 16,
    2+4+6+8 = 20."""
    assert causal_work(2, "contiguous", 8).tolist() == [10, 26]
    assert causal_work(2, "zigzag", 8).tolist() == [18, 18]
    assert causal_work(2, "striped", 8).tolist() == [16, 20]
    assert causal_imbalance(2, "contiguous", 8) == pytest.approx(26 / 18)
    assert causal_imbalance(2, "striped", 8) == pytest.approx(20 / 18)


@pytest.mark.parametrize("cp", [2, 4, 16, 32])
def test_contiguous_split_approaches_two_minus_one_over_cp(cp):
    """Rank i of a contiguous split does i + 1/2 blocks' worth of pairs (large blocks): the
    last does cp - 1/2, the mean is cp/2, so the busiest does 2 - 1/cp times the mean."""
    assert causal_imbalance(cp, "contiguous", 1 << 20) == pytest.approx(2 - 1 / cp, rel=1e-4)
    assert causal_imbalance(cp, "zigzag", 1 << 20) == 1.0
    assert 1.0 < causal_imbalance(cp, "striped", 1 << 20) < 1.001
    assert causal_work(cp, "zigzag", 1 << 12).sum() == (1 << 12) * ((1 << 12) + 1) / 2  # every pair once


def test_split_refuses_what_it_cannot_cut():
    with pytest.raises(ValueError, match="seq_len"):
        causal_work(4, "zigzag", 12)  # 12 tokens do not make 8 chunks
    with pytest.raises(ValueError, match="split"):
        causal_work(4, "diagonal", 16)


# ---- Ulysses ------------------------------------------------------------------------------------
def test_ulysses_degree_is_bounded_by_query_heads_per_tp_rank():
    """Each CP rank needs whole query heads; K/V heads split over the CP ranks or repeat across
    them (verl #1226; Long-RL's _ExpandKVFunction). Llama 3 8B: 32 query and 8 K/V heads."""
    check_ulysses(L3, 1, 8)  # 8 K/V heads, no TP: one each
    check_ulysses(L3, 1, 16)  # 32 query heads: 2 each; each K/V head repeated to 2 ranks
    check_ulysses(L3, 8, 4)  # TP 8: 4 query heads and 1 K/V head per rank
    for tp, cp in ((8, 8), (1, 64), (1, 3), (2, 32)):
        with pytest.raises(ValueError, match="ulysses"):
            check_ulysses(L3, tp, cp)
    assert kv_heads_per_tp_rank(Model.get("deepseek-v3"), 8) == 16  # MLA: a K and V per query head


def test_ulysses_bytes_by_hand():
    """Llama 3 8B, TP 2, CP 4 (Ulysses), DP 2, 16 sequences, micro-batch 1: m = 8, 32 layers.
    Per pass one all-to-all of Q, K, V (s/cp tokens x (h + 2 kv)/t) and one of the output
    (s/cp x h/t), 2-byte values; each rank keeps 1/cp: sent (cp-1)/cp of both. Forward and
    backward: 2 passes, 2 calls each."""
    est = estimate(L3, H100_2, Plan(tp=2, cp=4, dp=2, global_batch=16, zero_stage=1, sequence_parallel=True, cp_algorithm="ulysses"))
    cp = next(c for c in est.collectives if c.key == "cp")
    m, s, h, kv = 8, 8192 // 4, 4096, 1024
    per_pass = 3 / 4 * (s * (h + 2 * kv) / 2 * 2 + s * h / 2 * 2)
    assert cp.op == "all-to-all" and cp.calls == m * 32 * 2 * 2
    assert cp.sent_bytes == pytest.approx(m * 32 * 2 * per_pass)
    assert cp.exposed_s == pytest.approx(cp.wire_s)  # DeepSpeed-Ulysses does not overlap them


def test_ring_and_all_gather_bytes_by_hand():
    """Same layout, CP 4. Ring: cp-1 K/V blocks (2 x s/cp x kv/t values) per pass forward, K/V and
    their gradients backward: 3 (cp-1) blocks per layer. All-gather: (cp-1)/cp of the whole
    sequence's K and V, gathered forward and reduce-scattered backward."""
    m, s, kv, t = 8, 8192, 1024, 2
    plans = {a: Plan(tp=t, cp=4, dp=2, global_batch=16, zero_stage=1, sequence_parallel=True, cp_algorithm=a) for a in ("ring", "all_gather", "ring_contiguous")}
    cps = {a: next(c for c in estimate(L3, H100_2, p).collectives if c.key == "cp") for a, p in plans.items()}
    block = 2 * s / 4 * kv / t * 2
    assert cps["ring"].sent_bytes == pytest.approx(m * 32 * 3 * 3 * block)
    assert cps["ring_contiguous"].sent_bytes == cps["ring"].sent_bytes
    assert cps["all_gather"].sent_bytes == pytest.approx(m * 32 * 2 * 3 / 4 * 2 * s * kv / t * 2)


def test_contiguous_ring_waits_for_the_last_rank():
    """Only the attention core grows, by 2 - 1/cp; nothing changes at cp = 1."""
    base = dict(tp=1, dp=2, global_batch=16, zero_stage=1)
    one = [estimate(L3, H100_2, Plan(cp=4, pp=2, **base, cp_algorithm=a)) for a in ("ring", "ring_contiguous")]
    assert one[1].time.compute > one[0].time.compute and one[1].mfu < one[0].mfu
    assert one[1].memory.total == one[0].memory.total
    flat = [estimate(L3, H100_2, Plan(cp=1, pp=1, tp=1, dp=16, global_batch=16, cp_algorithm=a)) for a in ("ring", "ring_contiguous", "ulysses")]
    assert flat[0].step_time_s == flat[1].step_time_s == flat[2].step_time_s


def test_absent_columns_are_todays_engine():
    """Callers that do not pass the new columns (older code) get the load-balanced ring."""
    plan = Plan(tp=2, cp=4, dp=2, global_batch=16, zero_stage=1, sequence_parallel=True)
    cols = {k: np.asarray([v]) for k, v in plan_columns(plan).items()}
    old = {k: v for k, v in cols.items() if k not in ("cp_ulysses", "cp_contiguous")}
    a, b = evaluate(L3, H100_2, cols), evaluate(L3, H100_2, old)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert CP_ALGORITHMS[:2] == ("ring", "all_gather")


def test_sweep_keeps_only_ulysses_degrees_the_heads_allow():
    df = sweep(L3, H100_2, global_batch=16, cp=[1, 2, 4, 8], tp=[1, 2, 4, 8], pp=[1], micro_batch=[1], cp_algorithm="ulysses")
    q, kv = 32 / df["tp"], 8 / df["tp"]
    assert len(df) and ((df["cp"] == 1) | ((q % df["cp"] == 0) & ((kv % df["cp"] == 0) | (df["cp"] % kv == 0)))).all()
    # the sweep offers cp = 2 only (4,096 tokens a rank at least): allowed at TP 4 (2 K/V heads a rank) and at
    # TP 8 (4 query heads, the one K/V head repeated to both CP ranks)
    assert ((df["tp"] == 4) & (df["cp"] == 2)).any() and ((df["tp"] == 8) & (df["cp"] == 2)).any()


# ---- experts --------------------------------------------------------------------------------------
def test_poisson_drop_by_hand():
    """lambda = 1, capacity 1 token: E[max(X - 1, 0)] = E[X] - P(X >= 1) = 1 - (1 - 1/e) = 1/e."""
    assert poisson_drop_fraction(1.0, 1.0) == pytest.approx(exp(-1))
    assert poisson_drop_fraction(8192, 1.25) < 1e-9 < poisson_drop_fraction(32, 1.25) < poisson_drop_fraction(32, 1.0)
    with pytest.raises(ValueError, match="capacity_factor"):
        poisson_drop_fraction(10, 0.5)


def test_tokens_per_expert_and_the_dense_twin():
    """DeepSeek-V3: 4,096 tokens a rank, EP 64, 8 of 256 experts: 64 x 4,096 x 8 / 256 = 8,192.
    The dense twin's FFN is the 8 routed + 1 shared experts' width, 9 x 2,048 = 18,432: the same
    matmul weights per token but the router's h x 256."""
    from labs.core.scenarios.lab11 import dense_twin

    moe = Model.get("deepseek-v3")
    assert tokens_per_expert(moe, 4096, 64) == 8192
    twin = dense_twin()
    assert twin.ffn == 9 * 2048 and not twin.experts
    assert moe.layer_matmul_params - twin.layer_matmul_params == pytest.approx(moe.moe_share * 7168 * 256)


def test_ep_all_to_all_bytes_by_hand():
    """DeepSeek-V3 as published: PP 16, DP 128, EP 64 (8 nodes of 8), micro-batch 1 of 4,096
    tokens, m = 15,360 / 128 = 120, ceil(61/16) = 4 layers a stage, 58 of 61 layers MoE. Per MoE
    layer and pass, dispatch and combine each send every token once to each other destination
    node (8 (1 - (7/8)^8) = 5.25 nodes on average, capped at 4 by node-limited routing, 7/8 of
    them remote) and fan it out to its 8 experts over NVLink (7/8 of them on other GPUs), in
    bf16. Forward and backward."""
    from labs.core.scenarios.lab11 import moe_estimate

    est = moe_estimate()
    ep = next(c for c in est.collectives if c.key == "ep")
    T, h = 4096, 7168
    per_direction = T * h * 2 * (4 * 7 / 8) + T * 8 * h * 2 * 7 / 8
    assert ep.sent_bytes == pytest.approx(120 * 4 * 2 * 58 / 61 * 2 * per_direction)
    assert ep.calls == 120 * 4 * 2 * 2 and ep.crosses_nodes and ep.nodes == 8

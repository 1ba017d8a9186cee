"""labs.core.engine.exercises: each call against a hand count or a published figure."""

import math

import pytest

from labs.core.engine import exercises as x
from labs.core.engine.hardware import Cluster
from labs.core.engine.models import Model
from labs.core.engine.plan import Plan
from labs.core.engine.reliability import LLAMA3_GPUS, LLAMA3_UNEXPECTED, LLAMA3_WINDOW_S


def test_ring_and_tree_at_line_rate_by_hand():
    # 1 GB over 64 ranks, 5 us a step, 50 GB/s: ring 2*63*5us + 2*63/64*1e9/50e9; tree 2*6*5us + 2*1e9/50e9
    ring = x.collective_time("all_reduce", 1e9, 64, 5e-6, 50e9)
    tree = x.collective_time("all_reduce", 1e9, 64, 5e-6, 50e9, "tree")
    assert ring.latency_s == pytest.approx(630e-6) and ring.bandwidth_s == pytest.approx(2 * 63 / 64 * 0.02)
    assert tree.latency_s == pytest.approx(60e-6) and tree.bandwidth_s == pytest.approx(0.04)


def test_hierarchical_all_reduce_by_hand():
    # 64 GPUs in 8 nodes: RS + AG of 1 GB over 8 at 450 GB/s, 3 us; AR of 125 MB over 8 nodes at 50 GB/s, 10 us
    got = x.collective_time("all_reduce", 1e9, 64, 3e-6, 450e9, "hierarchical", 8, 10e-6, 50e9)
    inside = 2 * (7 * 3e-6 + 7 / 8 * 1e9 / 450e9)
    across = 2 * 7 * 10e-6 + 2 * 7 / 8 * 125e6 / 50e9
    assert got.total_s == pytest.approx(inside + across)
    with pytest.raises(ValueError, match="gpus_per_node"):
        x.collective_time("all_reduce", 1e9, 60, 3e-6, 450e9, "hierarchical", 8)
    with pytest.raises(ValueError, match="op"):
        x.collective_time("all_gather", 1e9, 64, 3e-6, 450e9, "tree")
    with pytest.raises(ValueError, match="topology"):
        x.collective_time("all_reduce", 1e9, 64, 3e-6, 450e9, "mesh")


def test_nccl_time_on_one_dgx_reaches_the_measured_busbw():
    # nccl-tests on a DGX H100, 8 GPUs, large all-reduce: ring about 370 GB/s of bus bandwidth (PHYSICS.md)
    c = x.nccl_collective_time("all_reduce", 8e9, Cluster.get("dgx-h100", nodes=1), 8, "ring")
    busbw = 2 * 7 / 8 * 8e9 / c.total_s
    assert 330e9 < busbw < 400e9


def test_ring_tree_crossover_closed_form():
    # M* = N B alpha (N - 1 - log2 N) for a power of two N
    assert x.ring_tree_crossover_bytes(64, 5e-6, 50e9) == pytest.approx(64 * 50e9 * 5e-6 * 57, rel=1e-6)
    m = x.ring_tree_crossover_bytes(16, 2e-6, 100e9)
    ring = x.collective_time("all_reduce", m, 16, 2e-6, 100e9).total_s
    tree = x.collective_time("all_reduce", m, 16, 2e-6, 100e9, "tree").total_s
    assert ring == pytest.approx(tree, rel=1e-6)
    assert x.ring_tree_crossover_bytes(2, 2e-6, 100e9) == 0.0


def test_tp_hiding_degree_is_the_scaling_books_threshold_without_latency():
    m = Model.get("gpt3-175b")  # 12 h^2 matmul parameters a layer: t* = 1 + 3 h B / F
    assert x.tp_hiding_degree(m, 2048, 989e12, 450e9) == pytest.approx(1 + 3 * m.hidden * 450e9 / 989e12)
    t = x.tp_hiding_degree(m, 2048, 989e12, 450e9, 3e-6)
    act = 2048 * m.hidden * 2
    comm = 4 * ((t - 1) * 3e-6 + (t - 1) / t * act / 450e9)
    assert comm == pytest.approx(2 * 2048 * m.layer_matmul_params / 989e12 / t, rel=1e-9)


def test_dp_hiding_tokens_meet_the_backward_window():
    model, cluster = Model.get("llama2-7b"), Cluster.get("dgx-h100", nodes=8)
    plan = Plan.for_era("megatron-core-2024", tp=1, pp=1, dp=64, micro_batch=1, global_batch=64)
    h = x.dp_hiding_tokens_per_gpu(model, cluster, plan)
    assert h.tokens_per_gpu * h.backward_s_per_token == pytest.approx(h.dp_collective_s)
    # the scaling book's ~2,500 tokens per GPU on H100-class parts: same order
    assert 1_000 < h.tokens_per_gpu < 10_000


def test_memory_conventions_and_zero_table_1():
    counts = {k: c.bytes_per_param for k, c in x.MEMORY_CONVENTIONS.items()}
    assert counts == {"adam-16": 16, "adam-18": 18, "adam-20": 20, "adam-12": 12, "adam-10": 10, "sgd": 8, "sgd-momentum": 12}
    # ZeRO Table 1, 7.5B on N = 64: 120 / 31.4 / 16.6 / 1.88 GB
    got = [x.model_state_bytes_under(7.5e9, "adam-16", z, 64) / 1e9 for z in range(4)]
    assert got == pytest.approx([120, 31.40625, 16.640625, 1.875])
    # MaxText's 12 keeps fp32 weights: sharded only at stage 3
    assert x.model_state_bytes_under(1e9, "adam-12", 1, 4) == pytest.approx(4e9 + 8e9 / 4)
    with pytest.raises(ValueError, match="convention"):
        x.model_state_bytes_under(1e9, "adam-14")


def test_cp_activations_keep_the_scores_of_their_queries_against_every_key():
    s, b, h, a, cp = 8192, 1, 4096, 32, 4
    got = x.cp_activation_bytes_per_layer(s, b, h, a, cp)
    # Korthikanti without flash: (s/cp) b h 34 + 5 a (s/cp) s b
    assert got == pytest.approx((s / cp) * b * h * 34 + 5 * a * (s / cp) * s * b)
    with pytest.raises(ValueError, match="seq_len"):
        x.cp_activation_bytes_per_layer(1000, 1, h, a, 3)


def test_segment_checkpointing_by_hand():
    L, s, b, h, a = 64, 2048, 1, 4096, 32
    layer, boundary = s * b * h * (34 + 5 * a * s / h), 2 * s * b * h
    assert x.segment_checkpoint_bytes(L, 8, s, b, h, a) == pytest.approx(8 * boundary + 8 * layer)
    assert x.optimal_segments(L, s, b, h, a) == pytest.approx(math.sqrt(L * layer / boundary))


def test_failures_from_components_and_from_llama3():
    # 16,384 GPUs with a 50,000-hour GPU MTBF and 8-GPU hosts of 100,000 hours: 16384/50000 + 2048/100000 per hour
    mtbf = x.components_mtbf_s(16384, {"gpu": 50_000 * 3600, "host": 100_000 * 3600}, {"host": 1 / 8})
    assert mtbf / 3600 == pytest.approx(1 / (16384 / 50_000 + 2048 / 100_000))
    # Llama 3: 419 unexpected interruptions in 54 days on 16,384 GPUs: 3.09 hours
    assert x.llama3_mtbf_s(LLAMA3_GPUS) == pytest.approx(LLAMA3_WINDOW_S / LLAMA3_UNEXPECTED)
    with pytest.raises(ValueError, match="components"):
        x.component_failure_rates(8, {"psu": 1e6})


def test_critical_batch_is_kaplans_fit_and_the_tradeoff_mccandlishs():
    # Kaplan et al. 2020 Sec. 1.2 and 5.1: B_crit(L) = 2e8 / L^(1/0.21) tokens; at L = 2 nats: 2e8 / 2^4.76 = 7.37M tokens
    assert x.critical_batch_tokens(2.0) == pytest.approx(2e8 / 2 ** (1 / 0.21))
    assert 7.3e6 < x.critical_batch_tokens(2.0) < 7.5e6
    assert x.critical_batch_tokens(1.8) > x.critical_batch_tokens(2.0)  # grows as the loss falls
    # at B = B_crit both steps and tokens are twice their minimum; at 4 B_crit 1.25 x the steps, 5 x the tokens
    at = x.batch_cost(1e6, 1e6)
    assert (at.steps_over_min, at.tokens_over_min) == (2.0, 2.0)
    big = x.batch_cost(4e6, 1e6)
    assert (big.steps_over_min, big.tokens_over_min) == (1.25, 5.0)
    with pytest.raises(ValueError, match="loss_nats"):
        x.critical_batch_tokens(0)


def test_tp_layer_bytes_by_hand_and_as_the_step_model_counts_them():
    # 4,096 tokens x hidden 8,192 in bf16: A = 64 MiB; TP 8: 4 all-reduces of 2 x 7/8 A; with SP 8 gathers/scatters of 7/8 A, + 2 re-gathers
    a = 4096 * 8192 * 2
    assert x.tp_layer_bytes_sent(4096, 8192, 8) == pytest.approx(4 * 2 * 7 / 8 * a)
    assert x.tp_layer_bytes_sent(4096, 8192, 8, True, False) == pytest.approx(8 * 7 / 8 * a)
    assert x.tp_layer_bytes_sent(4096, 8192, 8, True) == pytest.approx(10 * 7 / 8 * a)
    assert x.tp_layer_bytes_sent(4096, 8192, 1) == 0.0
    # the step model counts the same bytes per layer, the re-gathers with them (labs.core.engine.stages.parallel)
    from labs.core.engine.perf import estimate

    model = Model.get("llama2-13b")
    for sp in (True, False):
        est = estimate(model, Cluster.get("dgx-h100", nodes=1), Plan(tp=8, pp=1, dp=1, micro_batch=1, global_batch=1, sequence_parallel=sp, recompute="selective"))
        assert est.comm_bytes_per_gpu["tp"] / model.layers == pytest.approx(x.tp_layer_bytes_sent(model.seq_len, model.hidden, 8, sp))

"""Invariants over random inputs (hypothesis)."""

import math

from hypothesis import given, settings, strategies as st

from labs.core.engine.collectives import all_gather_time, all_reduce_time, bytes_sent_per_rank, reduce_scatter_time
from labs.core.engine.memory import activation_bytes_per_layer, model_state_bytes
from labs.core.engine.pipeline import bubble_fraction

sizes = st.floats(min_value=0, max_value=1e12, allow_nan=False)
ranks = st.integers(min_value=1, max_value=4096)
bandwidths = st.floats(min_value=1e6, max_value=1e13)
latencies = st.floats(min_value=0, max_value=1e-3)


@given(sizes, ranks, bandwidths, latencies, st.sampled_from(["ring", "tree"]))
def test_all_reduce_is_reduce_scatter_plus_all_gather(nbytes, n, bw, lat, algorithm):
    whole = all_reduce_time(nbytes, n, bw, lat, algorithm)
    parts = reduce_scatter_time(nbytes, n, bw, lat, algorithm) + all_gather_time(nbytes, n, bw, lat, algorithm)
    assert math.isclose(whole, parts, rel_tol=1e-9, abs_tol=1e-15)
    assert math.isclose(bytes_sent_per_rank("all_reduce", nbytes, n), 2 * bytes_sent_per_rank("reduce_scatter", nbytes, n), rel_tol=1e-12, abs_tol=1e-9)


@given(sizes, ranks)
def test_ring_bytes_per_rank_saturate_below_2m(nbytes, n):
    assert 0 <= bytes_sent_per_rank("all_reduce", nbytes, n) < 2 * nbytes + 1e-9


@given(st.floats(min_value=1, max_value=1e12), st.integers(min_value=1, max_value=4096))
def test_memory_non_increasing_in_zero_stage(params, dp):
    values = [model_state_bytes(params, stage, dp) for stage in range(4)]
    assert all(a >= b - 1e-6 for a, b in zip(values, values[1:]))
    assert all(v > 0 and math.isfinite(v) for v in values)


@given(st.floats(min_value=1, max_value=1e12), st.integers(min_value=1, max_value=2048), st.integers(min_value=1, max_value=3))
def test_memory_non_increasing_in_dp_for_zero(params, dp, stage):
    assert model_state_bytes(params, stage, dp + 1) <= model_state_bytes(params, stage, dp)


@given(st.integers(1, 64), st.integers(1, 512), st.sampled_from(["gpipe", "1f1b", "zb-h1", "zb-h2"]))
def test_bubble_in_unit_interval_and_falls_with_m(p, m, schedule):
    b = bubble_fraction(p, m, schedule)
    assert 0 <= b < 1
    assert bubble_fraction(p, m + 1, schedule) <= b


@settings(max_examples=200)
@given(st.integers(128, 32768), st.integers(1, 16), st.sampled_from([1024, 4096, 12288]), st.sampled_from([8, 32, 96]),
       st.sampled_from([1, 2, 4, 8]), st.booleans(), st.sampled_from(["none", "selective", "full"]))
def test_activations_positive_and_shrink_with_recompute(s, b, h, a, t, sp, recompute):
    got = activation_bytes_per_layer(s, b, h, a, t, sp, recompute)
    assert got > 0 and math.isfinite(got)
    assert activation_bytes_per_layer(s, b, h, a, t, sp, "full") <= activation_bytes_per_layer(s, b, h, a, t, sp, "selective") <= activation_bytes_per_layer(s, b, h, a, t, sp, "none")

"""Korthikanti et al. 2022 Table 4, a 22B layer (h=6144, a=64, s=2048, b=4) at TP=8 on A100:
the baseline row is one of the fit's rows (with Table 5's 22B run), the other four are checks."""

import pytest

from conftest import report
from labs.core.engine import gemm
from labs.core.engine.stages import compute
from labs.core.engine.calibration import fit_layer_constants, table4_layer_ms


@pytest.mark.parametrize("row_id, kwargs, tolerance", [
    ("korthikanti_t4_baseline_no_recompute", {}, 0.05),
    ("korthikanti_t4_sequence_parallel", {"sequence_parallel": True}, 0.08),
    ("korthikanti_t4_selective_recompute", {"recompute": "selective"}, 0.08),
    ("korthikanti_t4_selective+sequence", {"recompute": "selective", "sequence_parallel": True}, 0.08),
    ("korthikanti_t4_full_recompute", {"recompute": "full"}, 0.08),
])
def test_table4_layer_timing(published, row_id, kwargs, tolerance):
    out = published[row_id]["outputs"]
    fwd, bwd = table4_layer_ms(**kwargs)
    assert abs(report(f"{row_id} forward ms", fwd, out["fwd_ms"])) < tolerance
    assert abs(report(f"{row_id} backward ms", bwd, out["bwd_ms"])) < tolerance


def test_recompute_costs_what_the_paper_measured(published):
    """Table 4's overheads against the baseline: selective +7%, full +39% (per layer, fwd + bwd)."""
    base = sum(table4_layer_ms())
    for row_id, kwargs in (("korthikanti_t4_selective_recompute", {"recompute": "selective"}), ("korthikanti_t4_full_recompute", {"recompute": "full"})):
        got = sum(table4_layer_ms(**kwargs)) / base - 1
        paper = published[row_id]["outputs"]["overhead_pct_vs_baseline"] / 100
        print(f"{row_id}: overhead engine {got:+.1%}, paper {paper:+.0%}")
        assert abs(got - paper) < 0.05


def test_constants_are_the_fit():
    """LAYER_GEMM_SHARE and ELEMENTWISE_TRAFFIC are what fit_layer_constants finds on its rows."""
    share, traffic = fit_layer_constants(grid=61)
    assert gemm.LAYER_GEMM_SHARE == pytest.approx(share, abs=0.006)
    assert compute.ELEMENTWISE_TRAFFIC == pytest.approx(traffic, abs=0.06)

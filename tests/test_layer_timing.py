"""The one measurement the layer model is fitted to, and the four it then predicts:
Korthikanti et al. 2022 Table 4, a 22B layer (h=6144, a=64, s=2048, b=4) at TP=8 on A100."""

import pytest

from conftest import report
from labs.core import Cluster, Model, Plan
from labs.core.perf import _layer_times

LAYER = Model("22B", 48, 6144, 64, 2048, 51200)
CLUSTER = Cluster.get("dgx-a100", nodes=1)


def layer_ms(**kwargs):
    plan = Plan(tp=8, pp=1, dp=1, micro_batch=4, global_batch=4, **kwargs)
    fwd, bwd, comm = _layer_times(LAYER, CLUSTER, plan)
    # Forward and backward each carry half the TP all-reduces (full recompute: a third more).
    share = 2 / 6 if plan.recompute == "full" else 0.5
    return (fwd + comm * share) * 1e3, (bwd + comm * (1 - share)) * 1e3


@pytest.mark.parametrize("row_id, kwargs, tolerance", [
    ("korthikanti_t4_baseline_no_recompute", {}, 0.02),
    ("korthikanti_t4_sequence_parallel", {"sequence_parallel": True}, 0.08),
    ("korthikanti_t4_selective_recompute", {"recompute": "selective"}, 0.08),
    ("korthikanti_t4_selective+sequence", {"recompute": "selective", "sequence_parallel": True}, 0.08),
    ("korthikanti_t4_full_recompute", {"recompute": "full"}, 0.08),
])
def test_table4_layer_timing(published, row_id, kwargs, tolerance):
    out = published[row_id]["outputs"]
    fwd, bwd = layer_ms(**kwargs)
    assert abs(report(f"{row_id} forward ms", fwd, out["fwd_ms"])) < tolerance
    assert abs(report(f"{row_id} backward ms", bwd, out["bwd_ms"])) < tolerance

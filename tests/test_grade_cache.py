"""The grader's caches change no result: a synthetic class graded cold (every labs cache cleared)
and warm gives the same table, and Lab 11's, 12's and 13's outcome functions, at the default
settings and at students' variants, equal a computation made with every cache cleared, whatever
was computed in between. Copies handed out by cached functions are the caller's own."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pandas as pd
import pytest

from labs import grade, variants
from labs.core.scenarios import lab11, lab12, lab13

ROOT = Path(__file__).resolve().parents[1]


def clear_caches() -> int:
    """Clear every functools cache of every loaded labs module; how many were cleared."""
    cleared = set()
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "labs" or name.startswith("labs.")):
            continue
        for obj in list(vars(module).values()):
            if callable(getattr(obj, "cache_clear", None)) and id(obj) not in cleared:
                obj.cache_clear()
                cleared.add(id(obj))
    return len(cleared)


def cold(fn, *args):
    clear_caches()
    return fn(*args)


LAB12_INPUTS = [dict(log2_loss_scale=k, outlier_scale=o, accumulation_k=a, accumulation_steps=s)
                for k, o, a, s in [(0, 1, 512, 1), (12, 100, 4096, 8), (24, 100_000, 16384, 64), (32, 10, 1024, 2)]]
LAB13_INPUTS = [dict(block=b, ranks=r, sequence_parallel=sp, width=w, gpu=g, overlap=ov)
                for b, r, sp, w, g, ov in [("mlp-gelu", 2, False, 512, "h100", True), ("attention", 8, True, 16384, "b200", False),
                                           ("attention", 1, False, 256, "h100", False), ("mlp-gelu", 4, True, 2048, "b200", True)]]
LAB11_INPUTS = [dict(seq_len=s, cp=c, kv_heads=k, algorithm=a, capacity=cap)
                for s, c, k, a, cap in [(131072, 16, 8, "ring", 1.25), (65536, 1, 8, "ring", 1.0), (262144, 8, 128, "ulysses", 2.0), (1048576, 32, 8, "all_gather", 1.1)]]
PREDICTIONS = {11: [{}, {"fit": "C", "moe": "A"}, {"fit": "A", "moe": "B"}],
               12: [{}, {"underflow": "40", "recompute": "B", "fp8": "1.4"}, {"underflow": "x", "recompute": "A"}],
               13: [{}, {"ring": "3.0", "scaling": "A", "tp_best": "B"}, {"ring": "1e9", "scaling": "C", "tp_best": "D"}]}
STUDENTS = [None, "ada", "grace hopper", "Student 007"]


@pytest.mark.parametrize("lab, outcome, inputs", [(11, lab11.context_outcomes, LAB11_INPUTS), (12, lab12.precision_outcomes, LAB12_INPUTS),
                                                   (13, lab13.split_outcomes, LAB13_INPUTS)])
def test_cached_outcomes_equal_a_cold_computation(lab, outcome, inputs):
    module = {11: lab11, 12: lab12, 13: lab13}[lab]
    cases = list(itertools.product(inputs, PREDICTIONS[lab], STUDENTS))
    expected = []
    for ins, preds, student in cases:
        clear_caches()
        v = None if student is None else variants.variant(module.LAB, student, salt="cache-test")
        expected.append(outcome(ins, preds, v))
    clear_caches()
    for (ins, preds, student), want in zip(reversed(cases), reversed(expected)):  # warm, and in another order
        v = None if student is None else variants.variant(module.LAB, student, salt="cache-test")
        assert outcome(ins, preds, v) == want, (ins, preds, student)
    assert any(v[k] for v in expected for k in v if k.endswith("_correct"))  # some predictions are judged right ...
    assert not all(v[k] for v in expected for k in v if k.endswith("_correct"))  # ... and some wrong


def test_cached_rows_are_the_callers_own():
    rows = lab13.tp_sweep("llama3-70b", "h100", "nodes")
    rows[0]["step_s"] = -1.0
    rows.append({})
    assert lab13.tp_sweep("llama3-70b", "h100", "nodes") == cold(lab13.tp_sweep, "llama3-70b", "h100", "nodes")
    report = lab13.split_report("mlp-gelu", 2)
    report["output_diff"] = 99.0
    assert lab13.split_report("mlp-gelu", 2)["output_diff"] < 1e-9
    for fn, arg in ((lab12.scaling_rows, 100), (lab12.accumulation_rows, 4096), (lab12.accumulation_estimates, 8), (lab12.recompute_estimates, False)):
        first = fn(arg)
        (first.clear() if isinstance(first, dict) else first[0].clear())
        assert fn(arg) == cold(fn, arg), fn.__name__
    legacy = lab12.legacy_questions()
    legacy.pop("fp8")
    assert set(lab12.legacy_questions()) == {"underflow", "recompute", "fp8"}
    with pytest.raises(ValueError):  # the shared gradient sample cannot be written through
        lab12.gradients(None)[0] = 1.0


def test_cache_keys_are_typed():
    """A value of the wrong type is refused even after the right one was cached."""
    lab12.scaling_rows(100)
    lab13.split_report("mlp-gelu", 2)
    with pytest.raises(ValueError, match="ranks"):
        lab13.split_report("mlp-gelu", 2.0)
    with pytest.raises(ValueError, match="accumulation_k"):
        lab12.precision_outcomes({**LAB12_INPUTS[0], "accumulation_k": 512.0}, {})
    lab11.context_outcomes(LAB11_INPUTS[0], {})
    with pytest.raises(ValueError, match="Ulysses"):  # refused by the engine each time, never a cached success
        lab11.context_outcomes({**LAB11_INPUTS[0], "algorithm": "ulysses", "cp": 32, "seq_len": 131072}, {})
    with pytest.raises(ValueError, match="Ulysses"):
        lab11.context_outcomes({**LAB11_INPUTS[0], "algorithm": "ulysses", "cp": 32, "seq_len": 131072}, {})


def test_a_class_grades_the_same_cold_and_warm(synthetic_class, monkeypatch):
    folder = synthetic_class.folder  # conftest's: hostile files included, graded the same cold and warm
    for name, value in synthetic_class.env.items():  # the signing key and the class salt
        monkeypatch.setenv(name, value)
    assert clear_caches() > 10
    cold_table, cold_problems = grade.grade([str(folder)])
    warm_table, warm_problems = grade.grade([str(folder)])
    assert {"12_precision_and_memory", "13_tensor_parallel"} <= set(cold_table["lab"])
    assert len(cold_table) > 100
    pd.testing.assert_frame_equal(cold_table, warm_table)
    assert cold_problems == warm_problems

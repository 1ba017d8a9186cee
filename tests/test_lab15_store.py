"""Lab 15's stored runs (labs/core/scenarios/lab15_runs.npz, written by scripts/route_lab15.py):
made by today's router for every setting the instruments reach, equal bit for bit to a fresh
route of the same settings, read by the lab and the grader instead of routing."""

from __future__ import annotations

import random

import numpy as np
import pytest

from labs.core.engine import routing
from labs.core.engine.routing import (
    RouterRun,
    RouterSetting,
    load_runs,
    route,
    route_many,
    save_runs,
)
from labs.core.scenarios import lab15

STALE = "the store was made by another router or for other settings: run `python scripts/route_lab15.py` and commit labs/core/scenarios/lab15_runs.npz"


def test_the_store_is_todays_and_holds_every_instrument_setting():
    keys = lab15.instrument_keys()
    assert len(keys) == len(set(keys)) == (1 + len(lab15.AUX_COEFFS) + len(lab15.GAMMAS)) * len(lab15.NODE_LIMITS) * len(lab15.SKEWS) * len(lab15.DRIFTS) == 252
    runs = load_runs(lab15.STORE, [lab15.setting(*k) for k in keys])
    assert runs is not None, STALE
    assert [r.setting for r in runs] == [lab15.setting(*k) for k in keys]


def test_every_run_a_question_or_a_default_reads_is_stored():
    """The variants' questions and the instruments' defaults read only stored runs: a class's
    grading routes nothing."""
    keys = set(lab15.instrument_keys())
    for v in lab15.every_variant_setting():
        assert {lab15._run_key(**k) for k in lab15._variant_keys(v).values()} <= keys, v
    knobs = {k: lab15.DEFAULT_INPUTS[k] for k in ("aux_coeff", "gamma", "skew", "drift")}
    for scheme in lab15.SCHEMES:
        for nodes in lab15.NODE_LIMITS:
            assert lab15._run_key(scheme=scheme, max_nodes=nodes, **knobs) in keys, (scheme, nodes)


def _sample() -> list[tuple]:
    """Five stored settings: every scheme, every node limit, drift and none, drawn with a fixed seed."""
    keys = lab15.instrument_keys()
    rng = random.Random(15)
    picked = [rng.choice([k for k in keys if k[0] == scheme and k[3] == nodes]) for scheme, nodes in (("none", 8), ("aux_loss", 4), ("bias", 2), ("bias", 1))]
    picked.append(rng.choice([k for k in keys if k[5] == 0.0 and k not in picked]))
    return picked


def test_stored_runs_equal_a_fresh_route_bit_for_bit():
    """Five settings routed now (one draw) against the store: every window the lab reads, the
    copies, the aux loss and the final bias are the same bits; so is what the lab shows (summary)."""
    keys = _sample()
    fresh = route_many(lab15.setting(*k) for k in keys)
    for k, run in zip(keys, fresh):
        kept = lab15.stored_run(k)
        assert kept is not None, STALE
        assert kept.every == lab15.STORE_EVERY and kept.loads.shape == (lab15.STEPS // lab15.STORE_EVERY, run.setting.experts)
        for window in (10, 50, 100, 500):
            assert np.array_equal(kept.window_loads(window), run.window_loads(window)), (k, window)
        for name in ("network_copies", "nvlink_copies", "bias"):
            assert np.array_equal(getattr(kept, name), getattr(run, name)), (k, name)
        assert (kept.aux_loss is None) == (run.aux_loss is None) and (run.aux_loss is None or np.array_equal(kept.aux_loss, run.aux_loss)), k
        assert lab15.summary(kept) == lab15.summary(run), k
        print(k, f"busiest expert {lab15.summary(run)['busiest_expert']:.4f}x, busiest GPU {lab15.summary(run)['busiest_gpu']:.4f}x: equal")


def test_the_lab_and_the_grader_route_nothing(monkeypatch):
    """With today's store, building every variant's questions, reading their answers and grading an
    outcome at every instrument default calls the router not once."""
    def refuse(settings):
        raise AssertionError(f"routed {list(settings)}")

    monkeypatch.setattr(lab15, "route_many", refuse)
    monkeypatch.setattr(lab15, "_RUNS", {})
    for v in lab15.every_variant_setting():
        questions = lab15.build_questions(v)
        assert questions["balance"].answer == pytest.approx(lab15.balance_answer(v))
        assert questions["drops"]().correct == lab15.drop_answer(v) and questions["cost"]().answer == pytest.approx(lab15.cost_answer(v))
    for scheme in lab15.SCHEMES:
        out = lab15.routing_outcomes({**lab15.DEFAULT_INPUTS, "scheme": scheme}, {})
        assert 1 < out["busiest_gpu"] < 3, (scheme, out)


def test_a_stored_run_reads_only_windows_of_its_rows():
    run = lab15.stored_run(lab15.instrument_keys()[0])
    with pytest.raises(ValueError, match="window must be a multiple of 10"):
        run.window_loads(5)
    with pytest.raises(ValueError, match="window must divide steps"):
        run.window_loads(30)


SMALL = {"experts": 16, "top_k": 2, "tokens": 32, "steps": 20, "gpus": 8, "nodes": 2, "skew": 0.5, "drift": 0.01}


def test_a_file_for_other_settings_or_another_router_is_not_read(tmp_path, monkeypatch):
    path = tmp_path / "runs.npz"
    settings = [RouterSetting(**SMALL, scheme=s) for s in routing.SCHEMES]
    save_runs(path, [route(s) for s in settings], every=5)
    runs = load_runs(path, settings)
    assert runs is not None and [r.every for r in runs] == [5, 5, 5] and runs[2] is runs[2]  # read once
    with pytest.raises(IndexError):
        runs[3]
    assert np.array_equal(runs[1].window_loads(10), route(settings[1]).window_loads(10))
    assert load_runs(path, settings[::-1]) is None  # other settings (the order names each row's setting)
    assert load_runs(path, [RouterSetting(**{**SMALL, "skew": 0.6}, scheme=s) for s in routing.SCHEMES]) is None
    assert load_runs(tmp_path / "missing.npz", settings) is None
    real = routing.runs_fingerprint
    monkeypatch.setattr(routing, "runs_fingerprint", lambda s, every: real(s, every) + "changed")  # another router's source
    assert load_runs(path, settings) is None


def test_save_runs_refuses_rows_that_do_not_fit(tmp_path):
    run = route(RouterSetting(**SMALL))
    with pytest.raises(ValueError, match="every must divide steps"):
        save_runs(tmp_path / "x.npz", [run], every=3)
    with pytest.raises(ValueError, match="every must divide steps"):
        big = RouterSetting(**{**SMALL, "tokens": 4096, "steps": 40})  # 4,096 tokens x 20 steps: a row could hold 81,920
        save_runs(tmp_path / "x.npz", [RouterRun(big, np.zeros((40, 16), np.int32), np.zeros(4), np.zeros(4), None, np.zeros(16))], every=20)

"""Pipeline: timelines against closed forms, seed milestones, zero-bubble Table 5."""

import pytest

from conftest import report
from labs.core.engine.pipeline import bubble_fraction, timeline

GRID = [(p, m) for p in (1, 2, 4, 8) for m in (1, 4, 8, 16, 32)]


# ZB-H1's closed form holds once there is a steady state, m >= p (Qi et al. 2024).
CASES = [(s, p, m) for s in ("gpipe", "1f1b", "zb-h1") for p, m in GRID if s != "zb-h1" or m >= p]


@pytest.mark.parametrize("schedule, p, m", CASES)
def test_timeline_idle_equals_closed_form(schedule, p, m):
    t = timeline(p, m, schedule)
    for convention in ("total", "ideal"):
        assert t.bubble_fraction(convention) == pytest.approx(bubble_fraction(p, m, schedule, 1, convention), abs=1e-12)


@pytest.mark.parametrize("p, m, v", [(2, 4, 2), (4, 8, 2), (4, 16, 4), (8, 16, 2), (8, 32, 4), (4, 4, 3)])
def test_interleaved_timeline_equals_closed_form(p, m, v):
    t = timeline(p, m, "interleaved", v)
    assert t.bubble_fraction("ideal") == pytest.approx((p - 1) / (v * m), abs=1e-12)


def test_readme_identities():
    assert bubble_fraction(8, 16, "1f1b", convention="ideal") == pytest.approx(7 / 16)
    assert bubble_fraction(8, 16, "zb-h1", convention="ideal") == pytest.approx(7 / 48)
    assert bubble_fraction(8, 16, "zb-h2", convention="ideal") == 0


def test_seed_milestone_two_stage_utilisation():
    """seeds/001 week 24: 2 stages, m=1: 50%; m=4: 80%; m=8: 89%."""
    for m, expected in ((1, 0.5), (4, 0.8), (8, 8 / 9)):
        assert abs(report(f"2 stages m={m} utilisation", 1 - timeline(2, m, "1f1b").bubble_fraction(), expected)) < 1e-12


def test_not_the_seed_notebooks_bubble():
    """PHYSICS.md: TP=8, PP=4, m=8 has a 27% bubble, not (p-1)/(p m) = 9.4%."""
    assert bubble_fraction(4, 8, "1f1b", convention="total") == pytest.approx(3 / 11)


def test_peak_in_flight_1f1b_vs_gpipe():
    assert list(timeline(4, 8, "1f1b").peak_in_flight()) == [4, 3, 2, 1]
    assert list(timeline(4, 8, "gpipe").peak_in_flight()) == [8, 8, 8, 8]
    assert timeline(4, 8, "interleaved", 2).peak_in_flight()[0] == pytest.approx(4 * (1 + 3 / 8))


# Qi et al. 2024 Table 1 FLOPs for the 1.5B model (h=2304, s=1024): F = sbh(24h + 4s),
# B = sbh(24h + 8s), W = 24 sbh^2; a p2p message costs 5% of T_F (the paper profiles it).
H, S = 2304, 1024
def test_64_stages_256_microbatches_builds():
    t = timeline(64, 256, "1f1b")
    assert len(t.op) == 2 * 64 * 256
    assert t.bubble_fraction("ideal") == pytest.approx(63 / 256)


@pytest.mark.parametrize("field, call", [
    ("schedule", lambda: timeline(4, 8, "pipedream")),
    ("p", lambda: timeline(0, 8)),
    ("m", lambda: bubble_fraction(4, -1)),
    ("v", lambda: timeline(4, 8, "1f1b", v=2)),
    ("m must be a multiple", lambda: timeline(4, 6, "interleaved", v=2)),
    ("convention", lambda: bubble_fraction(4, 8, convention="both")),
])
def test_bad_input_names_the_field(field, call):
    with pytest.raises(ValueError, match=field):
        call()


def test_whole_number_op_costs_play_as_their_float_twins():
    """OpCosts given as whole numbers (1, 1, 1) play exactly as (1.0, 1.0, 1.0): the timeline's
    typed arrays are doubles, so integer durations must be converted, not reinterpreted (a bubble
    of -0.99 before). 1F1B at p=4, m=8 with equal passes: (p-1)/(m+p-1) = 3/11."""
    from labs.core.engine.pipeline import OpCosts, timeline

    for schedule in ("1f1b", "gpipe", "zb-h1", "zb-h2", "interleaved"):
        v = 2 if schedule == "interleaved" else 1
        whole = timeline(4, 8, schedule, v=v, costs=OpCosts(1, 1, 1)).bubble_fraction()
        floats = timeline(4, 8, schedule, v=v, costs=OpCosts(1.0, 1.0, 1.0)).bubble_fraction()
        assert whole == floats and 0 <= whole < 1, schedule
    assert timeline(4, 8, "1f1b", costs=OpCosts(1, 1, 1)).bubble_fraction() == 3 / 11

"""The timeline played level by level (labs.core.engine.pipeline._play_levels, numpy) against the
same order played in turn (_play_in_turn, the loop a schedule runs): the same rows in the same
order and the same start and end times to the bit, since every op takes the same max and sum
either way; and the same refusal of an order that waits on itself."""

import itertools

import numpy as np
import pytest

from labs.core.engine import pipeline
from labs.core.engine.pipeline import OpCosts, timeline

FIELDS = ("stage", "microbatch", "chunk", "op", "start", "end")
COSTS = [OpCosts(1.0, 1.0, 1.0), OpCosts(1.0, 1.3, 0.7), OpCosts(0.9, 2.0, 0.5, 0.05), OpCosts(1.7, 0.6, 1.1, 0.3)]
CASES = [(s, p, m, 1, None) for s, p, m in itertools.product(("gpipe", "1f1b", "zb-h1", "zb-h2"), (1, 2, 5, 32, 64), (1, 3, 8, 64, 255))]
CASES += [("interleaved", p, m, v, g) for p, m, v, g in ((1, 4, 2, None), (2, 4, 3, None), (4, 12, 2, 6), (8, 40, 2, 16), (32, 64, 3, None), (64, 128, 2, None),
                                                         (64, 256, 2, None), (64, 256, 4, 128))]


def played(monkeypatch, levels: bool, *args):
    monkeypatch.setattr(pipeline, "LEVELS_FROM_STAGES", 0 if levels else 1 << 30)
    monkeypatch.setattr(pipeline, "LEVELS_FROM_OPS", 0 if levels else 1 << 30)
    try:
        return timeline(*args)
    except (ValueError, RuntimeError) as err:
        return f"{type(err).__name__}: {err}"


@pytest.mark.parametrize("schedule, p, m, v, group", CASES)
def test_level_by_level_is_the_play_in_turn_to_the_bit(monkeypatch, schedule, p, m, v, group):
    for costs in COSTS:
        a, b = played(monkeypatch, False, p, m, schedule, v, costs, group), played(monkeypatch, True, p, m, schedule, v, costs, group)
        if isinstance(a, str) or isinstance(b, str):
            assert a == b
            continue
        for name in FIELDS:
            x, y = getattr(a, name), getattr(b, name)
            assert x.dtype == y.dtype and np.array_equal(x, y), (name, costs, np.flatnonzero(x != y)[:5])


@pytest.mark.parametrize("p, m, v, n", [(4, 8, 2, 2), (16, 64, 4, 4)])
def test_an_order_that_waits_on_itself_is_refused_either_way(monkeypatch, p, m, v, n):
    """Megatron's order with a group below p deadlocks (test_engine_v3_mechanisms): the levels
    never settle, and the play in turn names it."""
    monkeypatch.setattr(pipeline, "LEVELS_FROM_STAGES", 0)
    monkeypatch.setattr(pipeline, "LEVELS_FROM_OPS", 0)
    with pytest.raises(RuntimeError, match="deadlocked"):
        pipeline._play(p, m, "interleaved", v, OpCosts(), n)


def test_the_lab_s_largest_timelines_play_level_by_level():
    """p = 64 (Lab 07's deepest pipeline) is wide enough to play level by level by default; the
    busiest stage idles exactly the closed form's (p - 1)(T_F + T_B + T_W) / v at equal costs."""
    assert 64 >= pipeline.LEVELS_FROM_STAGES and 64 * 256 >= pipeline.LEVELS_FROM_OPS
    for schedule, v in (("1f1b", 1), ("interleaved", 2)):
        t = timeline(64, 256, schedule, v)
        idle = t.idle_per_stage()
        print(schedule, idle.min(), idle.max())
        assert np.all(idle == 63 * 3.0 / v)

"""Draw.choices (a problem set's settings drawn in one call) picks what Draw.choice picks."""

from __future__ import annotations

import pytest

from labs.core.problemset import Problem, ProblemSet
from labs.core.scenarios import PROBLEM_SETS
from labs.core.variants import Draw

SEEDS = [f"{i:016x}" for i in range(0, 4000, 7)]


def test_choices_picks_what_choice_picks_for_every_kind_of_values():
    named = [("a", "p1.a", (1, 2, 3)), ("b", "p1.b", [0.5, 1.0]), ("c", "p2.c", range(3, 40, 3)), ("d", "p2.é", ("x",)),
             ("e", "p3.e", ("ring", "tree", "hier", "nvls", "pat"))]
    as_bytes = [(k, name.encode("utf-8"), values) for k, name, values in named]
    picked = {k: set() for k, _, _ in named}
    for seed in SEEDS:
        d = Draw(seed)
        got = d.choices(as_bytes)
        assert got == {k: d.choice(name, values) for k, name, values in named}
        assert list(got) == [k for k, _, _ in named]
        for k, value in got.items():
            picked[k].add(value)
    assert picked["e"] == {"ring", "tree", "hier", "nvls", "pat"}  # every value drawn for some seed: the pick moves with the seed
    assert len(picked["c"]) == len(range(3, 40, 3))


@pytest.mark.parametrize("name", sorted(PROBLEM_SETS))
def test_a_problem_set_draws_each_setting_by_its_name(name):
    chapter = PROBLEM_SETS[name]
    for seed in SEEDS[:150]:
        d = Draw(seed)
        expected = {p.id: {k: d.choice(f"{p.id}.{k}", values) for k, values in p.draws.items()} for p in chapter.problems}
        got = chapter.draw(d)
        assert got == expected
        assert [type(v) for s in got.values() for v in s.values()] == [type(v) for s in expected.values() for v in s.values()]


@pytest.mark.parametrize("draws", [{"n": ()}, {"n": {1, 2}}, {"n": 3}])
def test_a_problem_drawing_from_nothing_or_an_unordered_set_is_refused_by_name(draws):
    problem = Problem("p1", "T", draws, lambda s: "", lambda s: 1.0, lambda s: 1.0, lambda s: "", "s")
    with pytest.raises(ValueError, match=r"ps99_x: p1\.n must draw from a non-empty tuple"):
        ProblemSet("ps99_x", "X", (problem,))

"""A variant's questions are built when first read (labs.core.variants.Questions and Specs): Lab 05's
Act II question, whose distractors come from a class-wide search, is not built before the page's
first question. Reading lazily, in any order, gives the variant that building every question at
once gives: the same options, order and key, for every lab and problem set."""

from __future__ import annotations

import pytest

from labs.core import scenarios
from labs.core.scenarios import lab05
from labs.core.variants import Choice, Draw, Numeric, Option, Question, Questions, Specs
from labs.variants import variant

IDS = [f"lazy-{i:02d}" for i in range(25)]
SALTS = ("", "lazy-salt")


def eager(v) -> dict[str, Question]:
    """Every question of `v` built at once from its recipe, as the registry did before questions were
    built when read: each spec (a function given for one called now) with its options in Draw.order."""
    given = scenarios.registry()[v.lab].recipe(v.version)[1](v.settings)
    draw, out = Draw(v.seed), {}
    for q, spec in given.items():
        spec = spec() if callable(spec) else spec
        out[q] = Question(q, spec, () if isinstance(spec, Numeric) else tuple(draw.order(q, [o.key for o in spec.options])))
    return out


@pytest.mark.parametrize("lab", sorted(scenarios.registry()))
def test_reading_lazily_in_any_order_gives_the_eager_variant(lab):
    for salt in SALTS:
        for i, student in enumerate(IDS):
            v, want = variant(lab, student, salt), None
            names = list(v.questions)
            for q in (names[::-1] if i % 2 else names):  # half the ids read the last question first
                want = want or eager(v)
                assert (v.questions[q].spec, v.questions[q].order, v.questions[q].key) == (want[q].spec, want[q].order, want[q].key), (lab, student, salt, q)
            assert names == list(want) and dict(v.questions) == want and v.record() == {**v.record(), "questions": {
                q: {"answer": w.spec.answer, "tolerance": w.spec.tolerance} if w.numeric else {"order": list(w.order)} for q, w in want.items()}}


@pytest.fixture
def act2_builds(monkeypatch):
    """The settings Lab 05's Act II question is built for, in order, on variants drawn afresh."""
    calls = []

    def counted(settings):
        calls.append(dict(settings))
        return real(settings)

    real = lab05.design_question_v6
    monkeypatch.setattr(lab05, "design_question_v6", counted)
    scenarios._built.cache_clear()
    scenarios._variant.cache_clear()
    yield calls
    scenarios._built.cache_clear()  # no Specs holding the counting function outlives the test
    scenarios._variant.cache_clear()


def test_lab05s_first_question_does_not_build_act_ii(act2_builds):
    v = variant("05", "lazy-first-question", "lazy-salt")
    cause = v.questions["cause"]
    assert cause.key is not None and len(cause.options) == 3
    assert "design" in v.questions and list(v.questions) == ["cause", "design"] and len(v.questions) == 2
    assert act2_builds == [], "reading Act I's question (or which questions there are) built Act II's"
    design = v.questions["design"]
    assert act2_builds == [v.settings]
    again = scenarios._variant.__wrapped__(v.lab, v.student, "lazy-salt", v.version)  # another variant of the same settings
    assert again.questions["design"] == design and act2_builds == [v.settings], "one setting's question is built once"
    assert design == eager(v)["design"] and design.key in "ABCD"
    assert v.record()["questions"]["design"] == {"order": list(design.order)}


def test_a_question_given_as_a_function_is_built_once_when_first_read():
    calls = []

    def later():
        calls.append(1)
        return Choice("Which?", (Option("x", "one", "m1"), Option("y", "two", "m2")), "y")

    specs = Specs({"now": Choice("Now?", (Option("a", "yes", "m"), Option("b", "no", "n")), "a"), "later": later})
    first, second = Questions(specs, Draw("seed-1")), Questions(specs, Draw("seed-2"))
    assert first["now"].key in "AB" and "later" in first and "missing" not in first and calls == []
    assert first["later"].spec.correct == "y" and second["later"].spec is first["later"].spec and calls == [1]
    assert first["later"].order == tuple(Draw("seed-1").order("later", ["x", "y"]))
    with pytest.raises(KeyError):
        first["missing"]


# ---- a lab imports its own scenario module, not every lab's ------------------------------------------
def _registry_lab_name(lab) -> str:
    """lab_name as it was, from the registry alone (every module imported)."""
    labs = scenarios.registry()
    if lab in labs:
        return lab
    matches = [name for name in labs if name.split("_", 1)[0] == str(lab).zfill(2)]
    if len(matches) != 1:
        raise ValueError(lab)
    return matches[0]


def test_a_lab_is_found_in_its_own_module_as_the_registry_finds_it():
    names = sorted(scenarios.registry())
    asked = [*names, *(n.split("_", 1)[0] for n in names), "5", 7, "15"]  # "ps01" too: a problem set by its number
    for lab in asked:
        assert scenarios.lab_name(lab) == _registry_lab_name(lab), lab
        assert scenarios._recipe(scenarios.lab_name(lab)) is scenarios.registry()[_registry_lab_name(lab)], lab
    for bad in ("05_wrong", "99", "ps99", "", "5_parallelism", "ps01_memory", "ps_collectives"):
        with pytest.raises(ValueError, match="lab must be one of"):
            scenarios.lab_name(bad)
    assert {f"lab{n.split('_', 1)[0]}" for n in names if n[0].isdigit()} == set(scenarios.LAB_MODULES)


def test_a_lab_page_imports_no_other_labs_scenarios():
    """A fresh process drawing Lab 05's variant and reading its first question imports Lab 05's
    scenario module and what it imports, no other lab's; the grader's tables then import them all."""
    import subprocess
    import sys

    code = ("import sys\nfrom labs.core.scenarios import variant\nvariant('05', 'fresh').questions['cause']\n"
            "print(sorted(m for m in sys.modules if m.startswith('labs.core.scenarios.')))\n"
            "from labs.core.scenarios import OUTCOMES, PROBLEM_SETS, QUESTION_OPTIONS, LAB_MODULES\n"
            "print(len(OUTCOMES), len(PROBLEM_SETS), len(QUESTION_OPTIONS), all(f'labs.core.scenarios.{m}' in sys.modules for m in LAB_MODULES))")
    first, tables = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert eval(first) == ["labs.core.scenarios.common", "labs.core.scenarios.lab05"]
    problem_set = ("import sys\nfrom labs.core.scenarios import variant\nvariant('ps02_memory', 'fresh').questions\n"
                   "print(sorted(m for m in sys.modules if m.startswith('labs.core.scenarios.')))")
    assert eval(subprocess.run([sys.executable, "-c", problem_set], capture_output=True, text=True, check=True).stdout) == [
        "labs.core.scenarios.problems_memory"]
    assert tables == f"{len(scenarios.OUTCOMES)} {len(scenarios.PROBLEM_SETS)} {len(scenarios.QUESTION_OPTIONS)} True"
    assert len(scenarios.PROBLEM_SETS) == len(scenarios.PROBLEM_MODULES) and all(step in scenarios.OUTCOMES for step in scenarios.lab05.OUTCOMES)

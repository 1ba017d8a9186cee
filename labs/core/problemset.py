"""Problem sets (labs/problems/): a chapter is data, a tuple of Problem, and this module is the
one way every chapter is drawn, asked, judged and graded.

A Problem names the settings it draws (each from a few values where its lesson holds), how it
states them, the engine's answer at the problem's stated assumptions (graded: right within
+-tolerance of it), the back-of-envelope formula its worked solution writes out (a test draws 50
ids and checks the two agree within `agree`, which the solution states), and, where the engine
knows more than the problem states (NCCL's achieved rates, the step model), the refined answer
and one line on why it differs. `texts` names a public text's printed answer that is wrong, where
the problem resembles it. A problem whose lesson is a decision carries options and `decide`.

    CHAPTER = ProblemSet("ps01_collectives", "Collectives and alpha-beta", (Problem(...), ...))
    VARIANTS = CHAPTER.variants          # in its scenario module: the registry finds it
    OUTCOMES = CHAPTER.outcomes_table    # (set, "answers") -> the grader's recomputation
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from labs.core.variants import LETTERS, Choice, LabVariants, Numeric, Option, Question, judged

STEP = "answers"


@dataclass(frozen=True)
class Problem:
    id: str
    title: str
    draws: dict[str, tuple]  # setting -> the values it is drawn from (the first is the default)
    statement: Callable[[dict], str]  # markdown, the student's numbers in it
    answer: Callable[[dict], float]  # the engine's answer at the stated assumptions, in `unit`
    envelope: Callable[[dict], float]  # the worked solution's formula, in `unit`
    solution: Callable[[dict], str]  # the worked back-of-envelope, markdown
    unit: str
    tolerance: float = 0.05  # relative: right within +-tolerance x |answer| (absolute when `absolute`)
    agree: float = 1e-6  # relative: how close envelope and answer are, as the solution says
    refined: Callable[[dict], float] | None = None  # the engine knowing more (NCCL, the step model), in `unit`
    refined_label: str = ""  # what `refined` is ("NCCL's achieved rates on a DGX H100")
    why: str = ""  # one line: why the refined answer differs from the formula
    texts: str = ""  # a public text's wrong printed answer to a problem like this one, and what is wrong
    absolute: bool = False
    options: tuple[Option, ...] = ()  # a decision: the options, by internal id
    decide: Callable[[dict], str] | None = None  # the option the engine's numbers bear out

    def __post_init__(self):
        if self.agree > self.tolerance and not self.options:
            raise ValueError(f"{self.id}: agree ({self.agree}) must be within the tolerance ({self.tolerance}), so the worked formula is graded right")

    def tolerance_at(self, answer: float) -> float:
        """The graded tolerance around the engine's answer `answer`."""
        return self.tolerance if self.absolute else self.tolerance * abs(answer)

    def tolerance_text(self) -> str:
        return f"±{self.tolerance:g} {self.unit}" if self.absolute else f"±{self.tolerance:.0%}"

    def question(self, settings: dict) -> Numeric | Choice:
        prompt = f"**{self.title}{'' if self.title.endswith(('?', '!', '.')) else '.'}** {self.statement(settings)}"
        if self.options:
            return Choice(prompt, self.options, self.decide(settings))
        answer = self.answer(settings)
        return Numeric(f"{prompt} Answer in {self.unit} (right within {self.tolerance_text()}).", answer, self.tolerance_at(answer), self.unit)


@dataclass(frozen=True, eq=False)
class ProblemSet:
    name: str  # the notebook's name, labs/problems/<name>.py; the set's name in the ledger
    title: str
    problems: tuple[Problem, ...]
    reading: str = ""
    _by_id: dict = field(default_factory=dict, compare=False, repr=False)
    _asked: dict = field(default_factory=dict, compare=False, repr=False)  # (problem, its settings) -> its question, built once
    _named: list = field(default_factory=list, compare=False, repr=False)  # per problem, (its id, ((setting, its draw's name, values), ...))

    def __post_init__(self):
        ids = [p.id for p in self.problems]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{self.name}: problem ids must be unique, got {ids}")
        self._by_id.update({p.id: p for p in self.problems})
        for p in self.problems:
            for k, values in p.draws.items():
                if not isinstance(values, (tuple, list, range)) or not values:
                    raise ValueError(f"{self.name}: {p.id}.{k} must draw from a non-empty tuple, list or range, got {values!r}")
        self._named.extend((p.id, tuple((k, f"{p.id}.{k}".encode(), values) for k, values in p.draws.items())) for p in self.problems)

    def problem(self, pid: str) -> Problem:
        if pid not in self._by_id:
            raise ValueError(f"problem must be one of {list(self._by_id)}, got {pid!r}")
        return self._by_id[pid]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.problems)

    def draw(self, d) -> dict:
        choices = d.choices  # each setting drawn by its name, "<problem>.<setting>" (as d.choice draws it)
        return {pid: choices(named) for pid, named in self._named}

    def default_settings(self) -> dict:
        return {p.id: {k: values[0] for k, values in p.draws.items()} for p in self.problems}

    def check_settings(self, settings: dict) -> dict:
        """A variant's settings, each problem's against the values it draws from."""
        self._check_names(settings)
        for p in self.problems:
            _check_problem(p, settings[p.id])
        return settings

    def _check_names(self, settings) -> None:
        if not isinstance(settings, dict) or settings.keys() != self._by_id.keys():
            raise ValueError(f"settings must name the problems {list(self.ids)}")

    def build(self, settings: dict) -> dict:
        """Each problem's question at its settings (check_settings' checks: a problem's settings
        are checked the first time they are asked, then found among those asked)."""
        self._check_names(settings)
        return {p.id: self._question(p, settings[p.id]) for p in self.problems}

    def _question(self, p: Problem, mine: dict) -> Numeric | Choice:
        """p.question(mine), built once per problem and setting: a chapter's settings as a whole
        are nearly unique per student, each problem's are few (a class of 1,000 rebuilt every
        problem of every student's set, 59% of the grader's variant rebuilds, Nov 2026)."""
        try:
            key = _asked_key(p, mine)
            return self._asked[key]
        except (AttributeError, KeyError, TypeError):  # not a dict, a setting missing, unhashable: checked below
            pass
        _check_problem(p, mine)
        key = _asked_key(p, mine)
        self._asked[key] = p.question(mine)
        return self._asked[key]

    @property
    def variants(self) -> LabVariants:
        return LabVariants(self.name, self.draw, self.build)

    def legacy_questions(self) -> dict[str, Question]:
        """The questions at the default settings, options in written order (a step saved without a variant)."""
        return _legacy(self)

    def outcomes(self, inputs: dict, predictions: dict, variant=None) -> dict:
        """Each answer judged at the student's variant (None: the default settings)."""
        if inputs:
            raise ValueError(f"a problem set's answers step takes no inputs, got {sorted(inputs)[:5]}")
        legacy = self.legacy_questions() if variant is None else None
        return {f"{pid}_correct": judged(variant, pid, predictions, lambda a, pid=pid: legacy is not None and a is not None and legacy[pid].judge(a))
                for pid in self.ids}

    def question_options(self) -> dict:
        """The decisions' options lettered in written order, by (set, problem): the class dashboard's view."""
        return {(self.name, p.id): tuple(Option(LETTERS[i], o.label, o.misconception) for i, o in enumerate(p.options))
                for p in self.problems if p.options}

    @property
    def outcomes_table(self) -> dict:
        return {(self.name, STEP): self.outcomes}

    def report(self, settings: dict, pid: str) -> dict:
        """What the solution shows: the engine's answer, the formula's, the refined one, and how far apart."""
        p, s = self.problem(pid), self.check_settings(settings)[pid]
        answer, envelope = p.answer(s), p.envelope(s)
        refined = p.refined(s) if p.refined is not None else None
        return {"answer": answer, "envelope": envelope, "refined": refined, "gap": _gap(envelope, answer),
                "refined_gap": None if refined is None else _gap(refined, answer)}


def _check_problem(p: Problem, mine) -> None:
    if not isinstance(mine, dict) or set(mine) != set(p.draws):
        raise ValueError(f"settings.{p.id} must name {sorted(p.draws)}")
    for k, values in p.draws.items():
        if mine[k] not in values:
            raise ValueError(f"settings.{p.id}.{k} must be one of {list(values)}, got {mine[k]!r}")


def _asked_key(p: Problem, mine: dict) -> tuple:
    """A problem's settings as _asked finds them: its values in the order it draws them, with their
    types (1 and 1.0 kept apart); only settings that passed _check_problem are kept under one, so
    one found there names exactly the problem's settings (as many, each drawn from its values)."""
    if len(mine) != len(p.draws):
        raise KeyError("settings other than the problem's")
    values = tuple(map(mine.__getitem__, p.draws))
    return p.id, values, tuple(map(type, values))


def _gap(a: float, b: float) -> float:
    """a relative to b (0 when both are 0)."""
    return 0.0 if a == b else (a - b) / abs(b) if b else math.inf


@lru_cache(maxsize=None)
def _legacy(pset: ProblemSet) -> dict[str, Question]:
    specs = pset.build(pset.default_settings())
    return {q: Question(q, spec, () if isinstance(spec, Numeric) else tuple(o.key for o in spec.options)) for q, spec in specs.items()}


def fmt(value: float, digits: int = 3) -> str:
    """A number as a solution prints it: 3 significant digits, thousands separated."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    places = max(0, digits - 1 - int(math.floor(math.log10(abs(value)))))
    return f"{value:,.{places}f}"

"""Per-student variants, the machinery: each student's lab is drawn from a seed made of their id
and a class salt, so two students see different numbers and, mostly, different keys; the key is
computed by the engine at the variant, never stored. The registry of every lab's variants and the
drawing of a student's (`variant`, `regenerate`) live in labs.core.scenarios, which imports the
labs' scenario modules; `python -m labs.variants` prints one.
The seed is SHA-256 over (lab, class salt, normalised student id): never Python's hash() or
random, so the same id and salt give the same lab on every machine and Python version. The salt
is LABS_CLASS_SALT (or --salt); the ledger records only its fingerprint.

How a lab plugs in. Its scenario module (labs/core/scenarios/labNN.py) defines

    VARIANTS = LabVariants(LAB, draw=draw_settings, build=build_questions)

- `draw_settings(d: Draw) -> dict`: the lab's settings, each picked with `d.choice(name, values)`
  from values where the lesson holds (a test walks every combination: keep them few and discrete);
  JSON-able (numbers, text, booleans).
- `build_questions(settings) -> {question_id: Choice | Numeric}`, computed by the engine:
  `Choice(prompt, options, correct)` with options as `Option(id, label, misconception)` (the id is
  internal and stable, every option carries a misconception, the one used when it is judged
  wrong) and `correct` the id the engine's numbers bear out; `Numeric(prompt, answer,
  tolerance, unit)` for a quantity typed in, right within +-tolerance (in the unit shown).
  Keep option labels of comparable length and hedging. A question that is costly to build may be
  given as a function of no arguments returning it (`functools.partial(question, settings)`):
  it is built when first read (`Specs`), so a lab's first question does not wait for a later one.
- its outcome functions take `variant=None` and judge with `judged(variant, q, predictions,
  legacy)`: a ledger without a variant (older ones) is graded by `legacy`, as before.
- a lab that changes how it draws or builds keeps the earlier edition:
  `LabVariants(LAB, draw, build, version=2, older={1: (draw_v1, build_v1)})`. New records name
  their edition ("version"; the first edition's name none), and `regenerate()` (the grader, the
  grade book) rebuilds the edition a ledger names, so old ledgers grade as their students saw them.

Nothing else registers: every module of labs.core.scenarios with a VARIANTS is found (labs.core.scenarios.registry). The lab
notebook calls `ui.lab_variant(LAB, student_input.value)` in a cell after the identity cell, shows
`variant.settings` in its stakeholder cell, builds its questions with
`ui.variant_question(variant.questions[q])` and commits with
`ui.commit_prediction(..., variant=variant)`, which records the variant in the ledger.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from labs.core.state import normalise_student

SALT_ENV = "LABS_CLASS_SALT"
SCHEME = "labs-variant/1"  # changes only if the way a seed is drawn changes
LETTERS = "ABCDEFGH"


@dataclass(frozen=True)
class Option:
    """A prediction option: a key and its label, and the misconception it stands for when the
    engine judges it wrong (a short name the class dashboard's heat map counts). Every option
    carries one, the right one too, so the source does not say which is right: the engine
    decides, at each student's variant."""

    key: str
    label: str
    misconception: str = ""


def class_salt(salt: str | None = None) -> str:
    """The class salt: the one given, else LABS_CLASS_SALT, else none."""
    return salt if salt is not None else os.environ.get(SALT_ENV, "")


@lru_cache(maxsize=64)  # a class has one salt; the grader asks for it once a variant
def salt_fingerprint(salt: str) -> str:
    """What a ledger records of the salt: enough to tell two salts apart, not the salt."""
    return hashlib.sha256(f"{SCHEME}/salt/{salt}".encode()).hexdigest()[:12]


def seed_of(lab: str, student: str, salt: str) -> str:
    return normalised_seed(lab, normalise_student(student), salt)


def normalised_seed(lab: str, student: str, salt: str) -> str:
    """seed_of for a student id already normalised."""
    return hashlib.sha256("\0".join((SCHEME, lab, salt, student)).encode("utf-8")).hexdigest()[:16]


class Draw:
    """Stable picks from a seed: each named pick hashes "seed/name" with SHA-256 (an order, each
    id's "seed/order/name/id")."""

    def __init__(self, seed: str):
        self.seed = seed
        self._prefix = f"{seed}/".encode("utf-8")

    def choice(self, name: str, values):
        if not isinstance(values, (tuple, list, range)):  # those index as their tuple does
            values = tuple(values)
        if not values:
            raise ValueError(f"{name}: nothing to choose from")
        digest = hashlib.sha256(self._prefix + str(name).encode("utf-8")).digest()
        return values[int.from_bytes(digest[:8], "big") % len(values)]

    def choices(self, named) -> dict:
        """{key: self.choice(name, values)} for each (key, name, values) of `named`, where each
        name is already UTF-8 bytes and each values a non-empty tuple, list or range (a problem
        set's ~160 settings a student, drawn without a call each)."""
        prefix, sha256, from_bytes = self._prefix, hashlib.sha256, int.from_bytes
        return {key: values[from_bytes(sha256(prefix + name).digest()[:8], "big") % len(values)] for key, name, values in named}

    def order(self, name: str, ids) -> list[str]:
        """`ids` in an order of this seed's own."""
        prefix = self._prefix + f"order/{name}/".encode("utf-8")
        return sorted(ids, key=lambda i: hashlib.sha256(prefix + str(i).encode("utf-8")).digest())


@dataclass(frozen=True)
class Choice:
    """A multiple-choice question: options by internal id, and the id the engine judges right."""

    prompt: str
    options: tuple[Option, ...]
    correct: str | None
    explanations: dict[str, str] = field(default_factory=dict)  # by internal id


@dataclass(frozen=True)
class Numeric:
    """A quantity the student types: right within +-tolerance of the engine's answer."""

    prompt: str
    answer: float
    tolerance: float
    unit: str
    explanation: str = ""

    def __post_init__(self):
        if not (math.isfinite(self.answer) and math.isfinite(self.tolerance) and self.tolerance > 0):
            raise ValueError(f"a numeric question needs a finite answer and a positive tolerance, got {self.answer!r} +- {self.tolerance!r}")


def parse_number(answer) -> float | None:
    """A typed answer as a number, or None when it is not one (or not finite)."""
    if answer is None or isinstance(answer, bool):
        return None
    try:
        value = float(str(answer).strip().rstrip("%").replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class Question:
    """One question as one student sees it: options lettered in their order, the key computed."""

    id: str
    spec: Choice | Numeric
    order: tuple[str, ...] = ()  # internal option ids in the student's order (Choice only)

    @property
    def numeric(self) -> bool:
        return isinstance(self.spec, Numeric)

    @property
    def prompt(self) -> str:
        return self.spec.prompt

    @property
    def options(self) -> tuple:
        by_id = {o.key: o for o in self.spec.options} if not self.numeric else {}
        return tuple(Option(LETTERS[i], by_id[oid].label, by_id[oid].misconception) for i, oid in enumerate(self.order))

    def option_id(self, letter: str | None) -> str | None:
        if letter is None or self.numeric or len(letter) != 1 or letter not in LETTERS[: len(self.order)]:
            return None
        return self.order[LETTERS.index(letter)]

    def misconception(self, letter: str | None) -> str:
        """The misconception the option at `letter` stands for in this variant ("" for none)."""
        oid = self.option_id(letter)
        return next((o.misconception for o in self.spec.options if o.key == oid), "") if oid else ""

    @property
    def key(self) -> str | None:
        if self.numeric or self.spec.correct is None:
            return None
        return LETTERS[self.order.index(self.spec.correct)]

    @property
    def explanations(self) -> dict[str, str]:
        """The reveal's line per letter (Choice)."""
        return {LETTERS[i]: self.spec.explanations.get(oid, "") for i, oid in enumerate(self.order)}

    def judge(self, answer) -> bool:
        if self.numeric:
            value = parse_number(answer)
            return value is not None and abs(value - self.spec.answer) <= self.spec.tolerance
        return self.key is not None and answer == self.key

    def describe(self) -> dict:
        if self.numeric:
            return {"prompt": self.prompt, "answer": self.spec.answer, "tolerance": self.spec.tolerance, "unit": self.spec.unit}
        return {"prompt": self.prompt, "options": [o.label for o in self.options], "ids": list(self.order), "key": self.key}


class _BuiltOnRead(Mapping):
    """A mapping over the keys of `source` whose values are made by `_make` when first read, once;
    listing or testing a key builds nothing (Mapping's __contains__ would)."""

    def __init__(self, source: Mapping):
        self._source = source
        self._built: dict = {}

    def _make(self, q: str):
        raise NotImplementedError

    def __getitem__(self, q: str):
        try:
            return self._built[q]
        except KeyError:
            self._built[q] = value = self._make(q)
            return value

    def __contains__(self, q) -> bool:
        return q in self._source

    def __iter__(self) -> Iterator[str]:
        return iter(self._source)

    def __len__(self) -> int:
        return len(self._source)


class Specs(_BuiltOnRead):
    """A build's questions by id (Choice or Numeric), each given either built or as a function of no
    arguments that builds it, called once, when the question is first read. The variants of one
    setting share one Specs (labs.core.scenarios._built), so it is built once for all of them."""

    def __init__(self, given: Mapping):
        super().__init__(dict(given))

    def _make(self, q: str):
        spec = self._source[q]
        return spec() if callable(spec) else spec


class Questions(_BuiltOnRead):
    """One variant's questions by id, each built from `specs` when first read and its options put in
    the seed's order (Draw.order, keyed by the question's id: the order does not depend on which
    question was read first, so reading them lazily gives the variant building them all would)."""

    def __init__(self, specs: Mapping, draw: Draw):
        super().__init__(specs)
        self._draw = draw

    def _make(self, q: str) -> Question:
        spec = self._source[q]
        order = () if isinstance(spec, Numeric) else tuple(self._draw.order(q, [o.key for o in spec.options]))
        return Question(q, spec, order)

    def __repr__(self) -> str:
        return f"Questions({list(self._source)})"


@dataclass(frozen=True)
class LabVariants:
    """A lab's variant recipe: how its settings are drawn and its questions built from them.

    `version` is the recipe's edition. A lab that changes how it draws or builds raises it and
    keeps each earlier edition's (draw, build) in `older`, by version: a ledger records the
    version its variant was drawn with (version 1 records none), and the grader regenerates
    that edition, so an old ledger grades as the lab its student saw."""

    lab: str
    draw: Callable[[Draw], dict]
    build: Callable[[dict], dict]
    version: int = 1
    older: dict[int, tuple[Callable[[Draw], dict], Callable[[dict], dict]]] = field(default_factory=dict)

    def editions(self) -> tuple[int, ...]:
        return tuple(sorted({*self.older, self.version}))

    def recipe(self, version: int | None = None) -> tuple[Callable[[Draw], dict], Callable[[dict], dict]]:
        """(draw, build) of an edition: the current one by default."""
        if version is None or version == self.version:
            return self.draw, self.build
        if isinstance(version, int) and not isinstance(version, bool) and version in self.older:
            return self.older[version]
        raise ValueError(f"version must be one of {list(self.editions())} for {self.lab}, got {version!r}")


@dataclass(frozen=True)
class Variant:
    lab: str
    student: str
    salt: str  # the salt's fingerprint
    seed: str
    settings: dict
    questions: Mapping[str, Question]  # Questions: each built when first read
    version: int = 1  # the edition of the lab's recipe it was drawn with

    def record(self) -> dict:
        """What the ledger keeps: the seed's inputs, the settings, each question's order or number,
        and the recipe's edition when it is not the first (first-edition records carry none)."""
        return {
            "scheme": SCHEME, "seed": self.seed, "student": self.student, "salt": self.salt, "settings": dict(self.settings),
            "questions": {q: ({"answer": v.spec.answer, "tolerance": v.spec.tolerance} if v.numeric else {"order": list(v.order)}) for q, v in self.questions.items()},
            **({"version": self.version} if self.version != 1 else {}),
        }

    def is_recorded_by(self, recorded: dict) -> bool:
        """recorded == self.record(), read field by field without building the record (the grader
        asks once a ledger's lab; a False here only sends mismatches the long way)."""
        if len(recorded) != (6 if self.version == 1 else 7) or (self.version != 1 and recorded.get("version") != self.version):
            return False
        if not (recorded.get("scheme") == SCHEME and recorded.get("seed") == self.seed and recorded.get("student") == self.student
                and recorded.get("salt") == self.salt and recorded.get("settings") == self.settings):
            return False
        questions, mine = recorded.get("questions"), self.questions
        if type(questions) is not dict or len(questions) != len(mine):
            return False
        for q in mine:  # each read by its id (Mapping's items() view adds a call a question)
            v, got = mine[q], questions.get(q)
            if type(got) is not dict:
                return False
            if v.numeric:
                if len(got) != 2 or got.get("answer") != v.spec.answer or got.get("tolerance") != v.spec.tolerance:
                    return False
            elif len(got) != 1 or got.get("order") != list(v.order):
                return False
        return True

    def mismatches(self, recorded) -> list[str]:
        """Where a ledger's recorded variant differs from this one (regenerated): field names."""
        if not isinstance(recorded, dict):
            return ["variant"]
        if self.is_recorded_by(recorded):  # as a ledger written at this variant has it: every field the same
            return []
        mine, out = self.record(), []
        if recorded == mine:
            return out
        if recorded.get("version", 1) != self.version:
            out.append("version")
        for name in ("scheme", "seed", "student", "salt"):
            if recorded.get(name) != mine[name]:
                out.append(name)
        theirs = recorded.get("settings") if isinstance(recorded.get("settings"), dict) else {}
        out += [f"settings.{k}" for k in sorted(set(mine["settings"]) | set(theirs)) if not _same(theirs.get(k), mine["settings"].get(k))]
        qs = recorded.get("questions") if isinstance(recorded.get("questions"), dict) else {}
        for q, expected in mine["questions"].items():
            got = qs.get(q) if isinstance(qs.get(q), dict) else {}
            out += [f"{q}.{k}" for k in expected if not _same(got.get(k), expected[k])]
        return out

    def as_json(self) -> dict:
        return {"lab": self.lab, "variant": self.seed, "version": self.version, "student": self.student, "salt": self.salt, "settings": self.settings,
                "questions": {q: v.describe() for q, v in self.questions.items()}}


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    return a == b


def recorded_version(recorded) -> int:
    """The recipe edition a ledger's recorded variant names (a record without one is the first)."""
    return recorded.get("version", 1) if isinstance(recorded, dict) else 1


def judged(variant_: Variant | None, question: str, predictions: dict, legacy: Callable[[str | None], bool]) -> bool:
    """A prediction judged at the student's variant; a ledger without a variant by `legacy`
    (the lab as it was before variants)."""
    answer = predictions.get(question)
    if variant_ is None:
        return legacy(answer)
    return answer is not None and variant_.questions[question].judge(answer)

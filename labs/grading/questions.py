"""Every prediction question a lab asks (the grader's SPECS), with the engine's answer computed
(never inferred from the students who got it right) and the one line that says why: the option
whose claim the engine's numbers bear out, or the number it computes. A student's own variant
(labs.variants) gives their answer; without one, the lab's default setting does, as the grader
grades a ledger without a variant."""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

from labs.core.scenarios import QUESTION_OPTIONS, lab05, lab06, lab07, lab08, lab09, lab10, lab11, lab12, lab13
from labs.core.scenarios import lab15
from labs.core.scenarios import lab14
from labs.core.scenarios import PROBLEM_SETS

# The default-setting answer of the labs written before variants: (lab, question) -> its function
ANSWERS: dict[tuple[str, str], Callable[[], str | None]] = {
    ("05_parallelism", "cause"): lab05.act1_correct_option,
    ("05_parallelism", "design"): lab05.act2_best_option,
    ("06_zero_sweep", "fit"): lab06.fit_answer,
    ("06_zero_sweep", "zero2"): lab06.zero2_answer,
    ("07_pipeline_visualizer", "utilisation"): lab07.utilisation_answer,
    ("07_pipeline_visualizer", "microbatches"): lab07.microbatch_answer,
    (lab08.LAB, "ring"): lab08.ring_answer,
    (lab08.LAB, "bucket"): lab08.bucket_answer,
    (lab09.LAB, "dp64"): lab09.dp64_answer,
    (lab10.LAB, "mtbf"): lab10.mtbf_answer,
    (lab10.LAB, "cadence"): lab10.cadence_answer,
    (lab11.LAB, "fit"): lab11.fit_answer,
    (lab11.LAB, "moe"): lab11.moe_answer,
}
# Labs built with variants from the start: their questions at the default setting
LEGACY_QUESTIONS = {lab12.LAB: lab12.legacy_questions, lab13.LAB: lab13.legacy_questions}
LEGACY_QUESTIONS[lab15.LAB] = lab15.legacy_questions
LEGACY_QUESTIONS[lab14.LAB] = lab14.legacy_questions
LEGACY_QUESTIONS.update({name: chapter.legacy_questions for name, chapter in PROBLEM_SETS.items()})  # problem sets (issue 40)

# Free-text inputs an instructor marks by hand: (lab, step) -> fields (Lab 09's one-line reasons
# and its paragraph). Their points are in the points table; the marks in a marks file.
FREE_TEXT: dict[tuple[str, str], tuple[str, ...]] = {
    (lab09.LAB, "worksheet"): (*lab09.REASONS, "paragraph"),
}


@lru_cache(maxsize=1)
def questions() -> list[tuple[str, str]]:
    """Every (lab, question) the grader judges, in lab order."""
    from labs.grading.specs import SPECS

    return sorted({(lab, q) for (lab, _step), spec in SPECS.items() for q in spec.questions})


@lru_cache(maxsize=None)
def _legacy(lab: str):
    return LEGACY_QUESTIONS[lab]()


def _question(lab: str, question: str, variant=None):
    """The labs.variants Question a student answered (their variant's, else the default's), or
    None for a question judged by a legacy answer function."""
    if variant is not None and question in variant.questions:
        return variant.questions[question]
    if (lab, question) not in ANSWERS and lab in LEGACY_QUESTIONS:
        return _legacy(lab).get(question)
    return None


@lru_cache(maxsize=None)
def _legacy_answer(lab: str, question: str) -> str | None:
    return ANSWERS[(lab, question)]()


def engine_answer(lab: str, question: str, variant=None) -> str | None:
    """The engine's answer: an option's letter, or a number as text (None when no option's claim holds)."""
    q = _question(lab, question, variant)
    if q is None:
        return _legacy_answer(lab, question)
    return f"{q.spec.answer:g}" if q.numeric else q.key


def answer_or_none(lab: str, question: str, variant=None) -> str | None:
    """engine_answer, or None when the engine cannot compute it (one question must not stop a grade book)."""
    try:
        return engine_answer(lab, question, variant)
    except Exception:  # noqa: BLE001
        return None


def why(lab: str, question: str, variant=None) -> str:
    """One line: the engine's answer and what it says."""
    try:
        q = _question(lab, question, variant)
        if q is not None and q.numeric:
            return f"{q.spec.answer:g} {q.spec.unit} (right within ±{q.spec.tolerance:g})" + (f": {q.spec.explanation}" if q.spec.explanation else "")
        answer = engine_answer(lab, question, variant)
        options = q.options if q is not None else QUESTION_OPTIONS.get((lab, question), ())
    except Exception as err:  # noqa: BLE001
        return f"the engine could not compute its answer ({type(err).__name__})"
    label = next((o.label for o in options if o.key == answer), "")
    return f"{answer}: {label}" if answer is not None else "no option's claim holds at the engine's numbers"


def student_variant(lab: str, student: str, salt: str | None, recorded=None):
    """The student's variant of a lab (labs.variants), or None when the lab has none; with the
    ledger's `recorded` variant, at the edition of the lab's recipe it names."""
    from labs import variants

    if lab not in variants.registry():
        return None
    return variants.variant(lab, student, salt) if recorded is None else variants.regenerate(lab, student, recorded, salt)[0]

"""Every prediction question a lab asks, with the engine's answer computed (never inferred from
the students who got it right) and the one line that says why: the label of the option whose
claim the engine's numbers bear out. New questions go into ANSWERS beside
`labs.core.scenarios.QUESTION_OPTIONS`."""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

from labs.core.scenarios import QUESTION_OPTIONS, lab05, lab06, lab07, lab08, lab09, lab10, lab11

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

# Free-text inputs an instructor marks by hand: (lab, step) -> fields (Lab 09's one-line reasons
# and its paragraph). Their points are in the points table; the marks in a marks file.
FREE_TEXT: dict[tuple[str, str], tuple[str, ...]] = {
    (lab09.LAB, "worksheet"): (*lab09.REASONS, "paragraph"),
}


@lru_cache(maxsize=None)
def engine_answer(lab: str, question: str) -> str | None:
    """The option the engine's numbers bear out (None when no option's claim holds)."""
    return ANSWERS[(lab, question)]()


def answer_or_none(lab: str, question: str) -> str | None:
    """engine_answer, or None when the engine cannot compute it (one question must not stop a grade book)."""
    try:
        return engine_answer(lab, question)
    except Exception:  # noqa: BLE001
        return None


def why(lab: str, question: str) -> str:
    """One line: the engine's option and its label."""
    try:
        answer = engine_answer(lab, question)
    except Exception as err:  # noqa: BLE001
        return f"the engine could not compute its answer ({type(err).__name__})"
    label = next((o.label for o in QUESTION_OPTIONS.get((lab, question), ()) if o.key == answer), "")
    return f"{answer}: {label}" if answer is not None else "no option's claim holds at the engine's numbers"


def questions() -> list[tuple[str, str]]:
    """Every (lab, question), in lab order."""
    return sorted(ANSWERS)

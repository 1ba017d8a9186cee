"""One module per lab: its stakeholder setting, its prediction options and the outcome functions
the lab shows and the grader recomputes from a ledger's recorded inputs (so a stored outcome or
"correct" flag is never trusted). OUTCOMES is the one registry the grader reads:
(lab, step) -> outcome function. The engine modules never import these."""

from labs.core.scenarios import lab05, lab06, lab07
from labs.core.scenarios import lab10
from labs.core.scenarios import lab08
from labs.core.scenarios import lab09

OUTCOMES = {**lab05.OUTCOMES, **lab06.OUTCOMES, **lab07.OUTCOMES}
OUTCOMES.update(lab10.OUTCOMES)
OUTCOMES.update(lab08.OUTCOMES)
OUTCOMES.update(lab09.OUTCOMES)

__all__ = ["OUTCOMES", "lab05", "lab06", "lab07"]
__all__ += ["lab10"]
__all__ += ["lab08"]
__all__ += ["lab09"]

# The prediction questions' options by (lab, question): the class dashboard counts answers over
# them and names each wrong one's misconception (Option.misconception).
QUESTION_OPTIONS = {
    ("05_parallelism", "cause"): lab05.ACT1_OPTIONS,
    ("05_parallelism", "design"): lab05.ACT2_OPTIONS,
    ("06_zero_sweep", "fit"): lab06.FIT_OPTIONS,
    ("06_zero_sweep", "zero2"): lab06.ZERO2_OPTIONS,
    ("07_pipeline_visualizer", "utilisation"): lab07.UTILISATION_OPTIONS,
    ("07_pipeline_visualizer", "microbatches"): lab07.MICROBATCH_OPTIONS + lab07.MICROBATCH_VARIANT_OPTIONS,  # A-D before variants, ids after
    (lab08.LAB, "ring"): lab08.RING_OPTIONS,
    (lab08.LAB, "bucket"): lab08.BUCKET_OPTIONS,
    (lab09.LAB, "dp64"): lab09.DP64_OPTIONS,
    (lab10.LAB, "mtbf"): lab10.MTBF_OPTIONS,
    (lab10.LAB, "cadence"): lab10.CADENCE_OPTIONS,
}
__all__ += ["QUESTION_OPTIONS"]

# Lab 11 (issue 18): long context and mixture of experts.
from labs.core.scenarios import lab11  # noqa: E402

OUTCOMES.update(lab11.OUTCOMES)
QUESTION_OPTIONS[(lab11.LAB, "fit")] = lab11.FIT_OPTIONS
QUESTION_OPTIONS[(lab11.LAB, "moe")] = lab11.MOE_OPTIONS
__all__ += ["lab11"]

# Labs 12 and 13 (issue 28): precision and memory; inside tensor parallelism. Their questions are
# drawn per student (labs.variants); the dashboard sees the options in their written order.
from labs.core.scenarios import lab12, lab13  # noqa: E402

OUTCOMES.update(lab12.OUTCOMES)
OUTCOMES.update(lab13.OUTCOMES)
QUESTION_OPTIONS[(lab12.LAB, "recompute")] = lab12.legacy_options("recompute")
QUESTION_OPTIONS[(lab13.LAB, "scaling")] = lab13.legacy_options("scaling")
QUESTION_OPTIONS[(lab13.LAB, "tp_best")] = lab13.legacy_options("tp_best")
__all__ += ["lab12", "lab13"]

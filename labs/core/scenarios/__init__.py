"""One module per lab: its stakeholder setting, its prediction options and the outcome functions
the lab shows and the grader recomputes from a ledger's recorded inputs (so a stored outcome or
"correct" flag is never trusted). OUTCOMES is the one registry the grader reads:
(lab, step) -> outcome function; `registry()` every lab's per-student variants (labs.core.variants),
and `variant()` a student's. The engine modules never import these."""

import importlib
import json
import pkgutil
import sys
from functools import lru_cache

from labs.core.engine import precision
from labs.core.state import normalise_student
from labs.core.variants import Draw, LabVariants, Questions, Specs, Variant, class_salt, normalised_seed, recorded_version, salt_fingerprint, seed_of

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

# Lab 14 (issue 39): debugging at scale. Its questions are drawn per student (labs.variants).
from labs.core.scenarios import lab14  # noqa: E402

OUTCOMES.update(lab14.OUTCOMES)
QUESTION_OPTIONS[(lab14.LAB, "kind")] = lab14.legacy_options("kind")
QUESTION_OPTIONS[(lab14.LAB, "culprit")] = lab14.legacy_options("culprit")
__all__ += ["lab14"]

# Lab 15 (issue 39): MoE routing and balance. Its questions are drawn per student (labs.variants).
from labs.core.scenarios import lab15  # noqa: E402

OUTCOMES.update(lab15.OUTCOMES)
QUESTION_OPTIONS[(lab15.LAB, "drops")] = lab15.legacy_options("drops")
__all__ += ["lab15"]

# Problem sets (issue 40): one module per chapter, its CHAPTER a labs.core.problemset.ProblemSet;
# the answers step's outcomes and the decisions' options come from it.
from labs.core.scenarios import problems_collectives, problems_failures, problems_memory  # noqa: E402
from labs.core.scenarios import problems_dataparallel  # noqa: E402
from labs.core.scenarios import problems_tensorparallel  # noqa: E402
from labs.core.scenarios import problems_pipelines  # noqa: E402

PROBLEM_SETS = {m.CHAPTER.name: m.CHAPTER for m in (problems_collectives, problems_memory, problems_dataparallel, problems_tensorparallel, problems_pipelines, problems_failures)}
from labs.core.scenarios import problems_context_experts  # noqa: E402  (problem set 6)

PROBLEM_SETS[problems_context_experts.CHAPTER.name] = problems_context_experts.CHAPTER
from labs.core.scenarios import problems_precision  # noqa: E402  (problem set 7)

PROBLEM_SETS[problems_precision.CHAPTER.name] = problems_precision.CHAPTER
from labs.core.scenarios import problems_hardware  # noqa: E402  (problem set 9)

PROBLEM_SETS[problems_hardware.CHAPTER.name] = problems_hardware.CHAPTER
for _chapter in PROBLEM_SETS.values():
    OUTCOMES.update(_chapter.outcomes_table)
    QUESTION_OPTIONS.update(_chapter.question_options())
__all__ += ["PROBLEM_SETS"]

# ---- the registry ------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def registry() -> dict[str, LabVariants]:
    """Every scenario module's VARIANTS, by lab."""
    import labs.core.scenarios as package  # this package: its lab modules are imported above

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        recipe = getattr(module, "VARIANTS", None)
        if isinstance(recipe, LabVariants):
            found[recipe.lab] = recipe
    return found


def lab_name(lab: str) -> str:
    """A lab's full name from its name or its number ("07" -> "07_pipeline_visualizer")."""
    labs = registry()
    if lab in labs:
        return lab
    matches = [name for name in labs if name.split("_", 1)[0] == str(lab).zfill(2)]
    if len(matches) != 1:
        raise ValueError(f"lab must be one of {', '.join(sorted(labs))} (or its number), got {lab!r}")
    return matches[0]


@lru_cache(maxsize=16384)  # every lab's settings together: 10,502 drawn for the 1,000-ledger class (Nov 2026: Lab 14's and the problem sets' are
# nearly one a student), so the grade book and the dashboard after the grader find them; a problem set's entry is its problems' shared questions
def _built(lab: str, version: int, settings_json: str) -> Specs:
    return Specs(registry()[lab].recipe(version)[1](json.loads(settings_json)))  # each question built when first read


def settings_for(lab: str, student: str, salt: str | None = None, version: int | None = None) -> tuple[str, dict]:
    seed = seed_of(lab_name(lab), student, class_salt(salt))
    return seed, registry()[lab_name(lab)].recipe(version)[0](Draw(seed))


_SETTINGS_TEXT = json.JSONEncoder(sort_keys=True)  # json.dumps(settings, sort_keys=True)'s text, without a new encoder a variant
VARIANTS_KEPT = 32768  # a class's students x labs (20,000 for 1,000 students): the grade book and the feedback pages, after the grader,
# ask every student's every lab again (4,096 evicted them: 36,000 variants redrawn and 22,000 settings rebuilt for one --feedback run)
VARIANTS_OF_ONE_LEDGER = 64  # a ledger's labs and problem sets, each asked a few times while it is graded


@lru_cache(maxsize=VARIANTS_KEPT)
def _variant(lab: str, student: str, salt: str, version: int) -> Variant:
    seed = normalised_seed(lab, student, salt)  # variant() normalised the id
    draw = Draw(seed)
    settings = registry()[lab].recipe(version)[0](draw)
    questions = Questions(_built(lab, version, _SETTINGS_TEXT.encode(settings)), draw)
    return Variant(lab, student, salt_fingerprint(salt), seed, settings, questions, version)


def keep_variants(keep: bool) -> None:
    """Whether this process keeps a class's variants (the default: the dashboard, and the grade
    book and feedback pages after the grader, ask every student's labs again) or only one ledger's.
    The grader without them asks each variant while it grades its ledger: a class's 18,000 kept
    were ~36 MB of a 1,000-ledger run's peak. Their settings' questions stay kept either way."""
    global _variant
    size = VARIANTS_KEPT if keep else VARIANTS_OF_ONE_LEDGER
    if _variant.cache_parameters()["maxsize"] != size:
        _variant = lru_cache(maxsize=size)(_variant.__wrapped__)


def forget_computed() -> None:
    """Drop what the engine and the labs' scenarios computed and keep per process (their
    functools caches: router runs, Lab 12's samples, Lab 13's blocks, Lab 14's jitter field...),
    keeping the variants and their questions. The grader calls it once every ledger is graded and
    before it builds the class's table, which needs the room: ~25 MB of a 1,000-ledger run's peak."""
    for name, module in list(sys.modules.items()):
        if name.startswith(("labs.core.engine", "labs.core.scenarios")):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)) and value is not _built and value is not _variant:
                    value.cache_clear()
    precision.forget_streams()


def variant(lab: str, student: str, salt: str | None = None, version: int | None = None) -> Variant:
    """The student's variant of a lab (of the recipe's edition `version`, the current one by
    default); the same id, salt and edition always give the same one."""
    name = lab_name(lab)
    recipe = registry()[name]
    recipe.recipe(version)  # an edition the lab does not have is refused here, by name
    return _variant(name, normalise_student(student), class_salt(salt), recipe.version if version is None else version)


def regenerate(lab: str, student: str, recorded, salt: str | None = None) -> tuple[Variant, list[str]]:
    """The variant a ledger's record stands for, regenerated from the student's id, the salt and
    the edition the record names; and the fields where the record differs from it. A record
    naming an edition the lab never had is regenerated at the current one and flagged."""
    try:
        fresh = variant(lab, student, salt, recorded_version(recorded))
    except ValueError:
        fresh = variant(lab, student, salt)
        return fresh, ["version", *(m for m in fresh.mismatches(recorded) if m != "version")]
    return fresh, fresh.mismatches(recorded)

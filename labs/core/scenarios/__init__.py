"""One module per lab: its stakeholder setting, its prediction options and the outcome functions
the lab shows and the grader recomputes from a ledger's recorded inputs (so a stored outcome or
"correct" flag is never trusted). OUTCOMES is the one registry the grader reads:
(lab, step) -> outcome function; `registry()` every lab's per-student variants (labs.core.variants),
and `variant()` a student's. The engine modules never import these.

The lab modules are imported when first needed, not with this package: a lab's page imports its
own (and what that imports), and `variant()` finds a lab's recipe in its own module
(labs.core.scenarios.labNN for "NN_..."); OUTCOMES, QUESTION_OPTIONS and PROBLEM_SETS, which read
every lab and problem set, are made on first use (the grader, the dashboard). Importing all of
them was ~0.15 s of CPU before every lab's first question (sources compiled at each start)."""

import importlib
import pkgutil
import sys
import threading
from functools import lru_cache

import msgspec

from labs.core.engine import precision
from labs.core.state import normalise_student
from labs.core.variants import Draw, LabVariants, Questions, Specs, Variant, class_salt, normalised_seed, recorded_version, salt_fingerprint, seed_of

LAB_MODULES = ("lab05", "lab06", "lab07", "lab10", "lab08", "lab09", "lab11", "lab12", "lab13", "lab14", "lab15")  # OUTCOMES' order
PROBLEM_MODULES = ("problems_collectives", "problems_memory", "problems_dataparallel", "problems_tensorparallel", "problems_pipelines",
                   "problems_failures", "problems_context_experts", "problems_precision", "problems_hardware")  # PROBLEM_SETS' order


def _module(name: str):
    return importlib.import_module(f"{__name__}.{name}")


def _problem_sets() -> dict:
    """Problem sets (issue 40): one module per chapter, its CHAPTER a labs.core.problemset.ProblemSet."""
    return {m.CHAPTER.name: m.CHAPTER for m in map(_module, PROBLEM_MODULES)}


def _outcomes() -> dict:
    """(lab, step) -> outcome function, every lab's and then every problem set's answers step."""
    out = {}
    for name in LAB_MODULES:
        out.update(_module(name).OUTCOMES)
    for chapter in _table("PROBLEM_SETS").values():
        out.update(chapter.outcomes_table)
    return out


def _question_options() -> dict:
    """The prediction questions' options by (lab, question): the class dashboard counts answers over
    them and names each wrong one's misconception (Option.misconception)."""
    lab05, lab06, lab07, lab08, lab09, lab10, lab11, lab12, lab13, lab14, lab15 = (
        _module(f"lab{n}") for n in ("05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15"))
    out = {
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
        (lab11.LAB, "fit"): lab11.FIT_OPTIONS,  # Lab 11 (issue 18): long context and mixture of experts
        (lab11.LAB, "moe"): lab11.MOE_OPTIONS,
        # Labs 12 and 13 (issue 28), 14 and 15 (issue 39): their questions are drawn per student
        # (labs.variants); the dashboard sees the options in their written order.
        (lab12.LAB, "recompute"): lab12.legacy_options("recompute"),
        (lab13.LAB, "scaling"): lab13.legacy_options("scaling"),
        (lab13.LAB, "tp_best"): lab13.legacy_options("tp_best"),
        (lab14.LAB, "kind"): lab14.legacy_options("kind"),
        (lab14.LAB, "culprit"): lab14.legacy_options("culprit"),
        (lab15.LAB, "drops"): lab15.legacy_options("drops"),
    }
    for chapter in _table("PROBLEM_SETS").values():  # a problem set's decisions' options
        out.update(chapter.question_options())
    return out


_TABLES = {"PROBLEM_SETS": _problem_sets, "OUTCOMES": _outcomes, "QUESTION_OPTIONS": _question_options}
_TABLES_LOCK = threading.RLock()  # one table for every thread (a class server's sessions) that asks first
__all__ = ["OUTCOMES", "PROBLEM_SETS", "QUESTION_OPTIONS", "lab05", "lab06", "lab07", "lab08", "lab09", "lab10", "lab11", "lab12", "lab13", "lab14", "lab15"]


def _table(name: str) -> dict:
    with _TABLES_LOCK:
        if name not in globals():
            globals()[name] = _TABLES[name]()
        return globals()[name]


def __getattr__(name: str):
    """OUTCOMES, QUESTION_OPTIONS and PROBLEM_SETS made on first use; a lab's module imported when asked for."""
    if name in _TABLES:
        return _table(name)
    if name in LAB_MODULES or name in PROBLEM_MODULES:
        return _module(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- the registry ------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def registry() -> dict[str, LabVariants]:
    """Every scenario module's VARIANTS, by lab (every module imported)."""
    import labs.core.scenarios as package  # this package

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        recipe = getattr(module, "VARIANTS", None)
        if isinstance(recipe, LabVariants):
            found[recipe.lab] = recipe
    return found


@lru_cache(maxsize=64)
def _own_recipe(lab) -> LabVariants | None:
    """The recipe of the lab `lab` names or numbers ("07", "07_pipeline_visualizer"), or of the
    problem set it names ("ps01_collectives"), read from its own module (labNN, problems_NAME)
    without importing every other; None where that module has none for it (a problem set's
    number, a name nothing has): the registry answers those."""
    number, _, rest = str(lab).partition("_")
    if number.startswith("ps") and f"problems_{rest}" in PROBLEM_MODULES:
        recipe = getattr(_module(f"problems_{rest}"), "VARIANTS", None)
        return recipe if isinstance(recipe, LabVariants) and recipe.lab == lab else None
    if f"lab{number.zfill(2)}" not in LAB_MODULES:
        return None
    recipe = getattr(_module(f"lab{number.zfill(2)}"), "VARIANTS", None)
    if isinstance(recipe, LabVariants) and (recipe.lab == lab or recipe.lab.split("_", 1)[0] == str(lab).zfill(2)):
        return recipe
    return None


def _recipe(name: str) -> LabVariants:
    """The recipe of the lab or problem set with this full name."""
    own = _own_recipe(name)
    return own if own is not None and own.lab == name else registry()[name]


def lab_name(lab: str) -> str:
    """A lab's full name from its name or its number ("07" -> "07_pipeline_visualizer")."""
    own = _own_recipe(lab)
    if own is not None:
        return own.lab
    labs = registry()
    if lab in labs:
        return lab
    matches = [name for name in labs if name.split("_", 1)[0] == str(lab).zfill(2)]
    if len(matches) != 1:
        raise ValueError(f"lab must be one of {', '.join(sorted(labs))} (or its number), got {lab!r}")
    return matches[0]


@lru_cache(maxsize=16384)  # every lab's settings together: 10,502 drawn for the 1,000-ledger class (Nov 2026: Lab 14's and the problem sets' are
# nearly one a student), so the grade book and the dashboard after the grader find them; a problem set's entry is its problems' shared questions
def _built(lab: str, version: int, settings_json: bytes) -> Specs:
    return Specs(_recipe(lab).recipe(version)[1](msgspec.json.decode(settings_json)))  # each question built when first read


def settings_for(lab: str, student: str, salt: str | None = None, version: int | None = None) -> tuple[str, dict]:
    seed = seed_of(lab_name(lab), student, class_salt(salt))
    return seed, _recipe(lab_name(lab)).recipe(version)[0](Draw(seed))


_SETTINGS_TEXT = msgspec.json.Encoder(order="sorted")  # settings as one key for _built (json.dumps(sort_keys=True) took 5x as long)
VARIANTS_KEPT = 32768  # a class's students x labs (20,000 for 1,000 students): the grade book and the feedback pages, after the grader,
# ask every student's every lab again (4,096 evicted them: 36,000 variants redrawn and 22,000 settings rebuilt for one --feedback run)
VARIANTS_OF_ONE_LEDGER = 64  # a ledger's labs and problem sets, each asked a few times while it is graded


@lru_cache(maxsize=VARIANTS_KEPT)
def _variant(lab: str, student: str, salt: str, version: int) -> Variant:
    seed = normalised_seed(lab, student, salt)  # variant() normalised the id
    draw = Draw(seed)
    settings = _recipe(lab).recipe(version)[0](draw)
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
    recipe = _recipe(name)
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

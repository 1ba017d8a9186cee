"""What the grader checks and recomputes for each (lab, step) of a ledger: the inputs' fields and
their allowed values (each refused by name, as the engine refuses it), the outcome function that
recomputes the step from them (labs.core.scenarios.OUTCOMES), the prediction questions it judges,
and the work it may cost."""


from __future__ import annotations

import dataclasses
import math
import numbers
import typing
from dataclasses import dataclass
from typing import Callable


from labs.core.engine.hardware import GPUS, LINKS
from labs.core.engine.models import MODELS
from labs.core.scenarios.lab06 import SWEEP_FIELDS
from labs.core.engine.perf import Plan, check_plan_field
from labs.core.engine.pipeline import SCHEDULES, OpCosts, check_timeline_size
from labs.core.scenarios.lab05 import dp_wall_estimate
from labs.core.engine.layout import RANK_ORDERS
from labs.core.engine.reliability import STRATEGIES as CHECKPOINT_STRATEGIES
from labs.core.scenarios import lab08, lab09, lab10, lab11
from labs.core.scenarios import lab12, lab13
from labs.core.scenarios import lab14
from labs.core.scenarios import lab15
from labs.core.scenarios import PROBLEM_SETS
from labs.core.problemset import STEP as PROBLEM_STEP
from labs.core.state import MAX_LEDGER_BYTES
from labs.core.engine.validation import MAX_COUNT, check_bool, check_choice, check_positive, check_str

MAX_BYTES = MAX_LEDGER_BYTES
TOLERANCE = 1e-6
MAX_TEXT = 100  # characters of a string input
FLOAT_RANGE = (1e-9, 1e15)  # a finite float input is 0 or within this range in magnitude
BASE_COLUMNS = ["file", "student", "lab", "step", "saved", "status", "tampered", "identity", "trust", "trust_flag", "changes", "right", "judged", "skipped", "answers_from"]


# ---- what each step's inputs may be -------------------------------------------------------
def _integer(name, value):
    check_positive(name, value, integer=True, maximum=MAX_COUNT)


def _real(name, value):
    check_positive(name, value, maximum=FLOAT_RANGE[1])
    if value < FLOAT_RANGE[0]:
        raise ValueError(f"{name} must be at least {FLOAT_RANGE[0]:g}, got {value!r}")


def _op_time(name, value):
    """A pipeline op time: a real input the engine's OpCosts accepts (its own limit, by name)."""
    _real(name, value)
    OpCosts(**{name: value})


def _text(name, value):
    check_str(name, value)
    if len(value) > MAX_TEXT:
        raise ValueError(f"{name} is longer than {MAX_TEXT} characters")


def _plan(field: str) -> Callable:
    return lambda name, value: check_plan_field(field, value)


def _choice(options) -> Callable:
    return lambda name, value: (_text(name, value), check_choice(name, value, options))


def _scalar(name, value):
    """What any input must be before anything else: a bool, a bounded number, short text or null."""
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, numbers.Integral):
        if abs(value) > MAX_COUNT:
            raise ValueError(f"{name} must be at most {MAX_COUNT:g} in size, got a number of {len(str(abs(value)))} digits")
    elif isinstance(value, float):
        if not math.isfinite(value) or (value != 0 and not FLOAT_RANGE[0] <= abs(value) <= FLOAT_RANGE[1]):
            raise ValueError(f"{name} must be 0 or between {FLOAT_RANGE[0]:g} and {FLOAT_RANGE[1]:g} in size, got {value!r}")
    elif isinstance(value, str):
        _text(name, value)
    else:
        raise ValueError(f"{name} must be a number, true/false or text, got {type(value).__name__}")


@dataclass(frozen=True)
class StepSpec:
    """The inputs a step may hold (each with its check), those it must hold, the prediction
    questions and the outcome that judges each, and an optional check across fields."""

    fields: dict[str, Callable]
    required: tuple[str, ...]
    questions: dict[str, str]
    across: Callable[[dict], None] | None = None
    prose: tuple[str, ...] = ()  # free-text inputs kept for the instructor: longer than MAX_TEXT, checked by their own field check
    work: Callable[[dict], int] | None = None  # what judging checked inputs once costs, in timeline ops (None: too little to count)

    def check(self, inputs: dict) -> None:
        unknown = sorted(set(inputs) - set(self.fields))
        if unknown:
            shown = ", ".join(repr(k[:40]) for k in unknown[:5])
            raise ValueError(f"{len(unknown)} unknown input(s): {shown}{' ...' if len(unknown) > 5 else ''}")
        missing = [k for k in self.required if k not in inputs]
        if missing:
            raise ValueError(f"missing input(s) {missing}")
        for name, value in inputs.items():
            if name not in self.prose:
                _scalar(name, value)
            self.fields[name](name, value)
        if self.across is not None:
            self.across(inputs)


def _act1_spec() -> StepSpec:
    """Lab 05 Act I's inputs are dp_wall_estimate's arguments, checked as the Plan checks the
    fields they become (gpus is the DP size, algorithm the DP algorithm...)."""
    import inspect

    plan_field = {"gpus": "dp", "global_batch": "global_batch", "algorithm": "dp_algorithm", "overlap": "dp_overlap", "grad_reduce_dtype": "grad_reduce_dtype"}
    by_type = {int: _integer, bool: lambda n, v: check_bool(n, v), str: _text, float: _real}
    hints = typing.get_type_hints(dp_wall_estimate)
    fields, required = {}, []
    for name, param in inspect.signature(dp_wall_estimate).parameters.items():
        if name in plan_field:
            fields[name] = _plan(plan_field[name])
        elif name == "fabric":
            fields[name] = _choice(LINKS)
        else:
            fields[name] = by_type.get(hints.get(name), _scalar)
        if param.default is inspect.Parameter.empty:
            required.append(name)
    return StepSpec(fields, tuple(required), {"cause": "prediction_correct"})


def _timeline_size(inputs: dict) -> None:
    check_timeline_size(inputs["p"], inputs["m"], inputs.get("v", 1))


def _timeline_ops(inputs: dict) -> int:
    return inputs["p"] * inputs["m"] * inputs.get("v", 1)


# What the grader spends on one file, in timeline ops: the largest timeline Lab 07's sliders make
# (p 64, m 256, v 4: labs/07_pipeline_visualizer.py) judged twice (the stored answers and the
# committed ones), about 0.8 s. The engine builds up to pipeline.MAX_TIMELINE_OPS (200,000: 3-4 s);
# a ledger past this limit was not written by the lab and is named instead of graded.
MAX_WORK_PER_FILE = 2 * 64 * 256 * 4


class WorkLimitReached(Exception):
    """A file's steps would cost the grader more than MAX_WORK_PER_FILE."""


def _optional(check: Callable) -> Callable:
    return lambda name, value: None if value is None else check(name, value)


def _paragraph(name, value):
    check_str(name, value)
    if len(value) > lab09.PARAGRAPH_CHARS:
        raise ValueError(f"{name} is longer than {lab09.PARAGRAPH_CHARS} characters")


SPECS: dict[tuple[str, str], StepSpec] = {
    ("05_parallelism", "act1"): _act1_spec(),
    ("05_parallelism", "act2"): StepSpec({f.name: _plan(f.name) for f in dataclasses.fields(Plan)}, (), {"design": "prediction_correct"}),
    ("06_zero_sweep", "sweep"): StepSpec(
        {
            "model": _choice(MODELS), "gpu": _choice(GPUS), "optimizer_state": _plan("optimizer_state"), "micro_batch": _plan("micro_batch"),
            "seq_len": _integer, "recompute": _plan("recompute"), "flash_attention": _plan("flash_attention"), "offload": lambda n, v: check_bool(n, v),
            "dp": _plan("dp"), "zero_stage": _plan("zero_stage"), "microbatches": _integer,
        },
        tuple(SWEEP_FIELDS),
        {"fit": "fit_correct", "zero2": "zero2_correct"},
    ),
    ("07_pipeline_visualizer", "pipeline"): StepSpec(
        {"p": _integer, "m": _integer, "v": _integer, "schedule": _choice(SCHEDULES), "tf": _op_time, "tb": _op_time, "tw": _op_time},
        ("p", "m", "schedule", "tf", "tb", "tw"),
        {"utilisation": "utilisation_correct", "microbatches": "microbatches_correct"},
        _timeline_size,
        work=_timeline_ops,
    ),
    # the ring stepper's setting; across the fields, the lab's own check (2-16 ranks, a step the
    # ring has, a link the stepper offers)
    (lab08.LAB, lab08.STEP): StepSpec(
        {"n": _integer, "nbytes": _real, "link": _choice(lab08.STEPPER_LINKS), "step": lambda n, v: check_positive(n, v, integer=True, allow_zero=True, maximum=MAX_COUNT)},
        ("n", "nbytes", "link", "step"),
        {"ring": "ring_correct", "bucket": "bucket_correct"},
        lab08.check_ring_inputs,
    ),
    # the worksheet's degrees and order, one-line reasons, the spoken bottleneck and the paragraph
    # (kept, not graded); the outcomes recompute the dominant collective from the engine's map
    (lab09.LAB, "worksheet"): StepSpec(
        {
            "scenario": _choice(lab09.JOBS), "tp": _plan("tp"), "pp": _plan("pp"),
            "zero_stage": _plan("zero_stage"), "micro_batch": _plan("micro_batch"), "rank_order": _choice(RANK_ORDERS),
            **{k: _text for k in lab09.REASONS},
            "bottleneck": _optional(_choice(tuple(lab09.BOTTLENECK_CHOICES.values()))),
            "bottleneck_link": _optional(_choice(tuple(lab09.LINK_CHOICES.values()))),
            "bottleneck_time_ms": _optional(_real), "paragraph": _paragraph,
        },
        ("scenario", "tp", "pp", "zero_stage"),
        {"dp64": "prediction_correct", "pp_free": "pp_free_correct"},  # pp_free: edition 3 on (review X8)
        lambda inputs: lab09.worksheet_plan(inputs["tp"], inputs["pp"], inputs["zero_stage"], inputs.get("micro_batch", 1), inputs.get("rank_order", RANK_ORDERS[0])),
        ("paragraph",),
    ),
    # the cadence controls; across the fields, the engine refuses what it cannot price (a GPU
    # count the layout does not divide, storage too fast)
    (lab10.LAB, "cadence"): StepSpec(
        {
            "model": _choice(lab10.LAYOUTS), "gpus": _integer, "zero_stage": _plan("zero_stage"), "strategy": _choice(CHECKPOINT_STRATEGIES),
            "storage_gbps": _real, "relaunch_min": _real, "swap_min": _real, "hot_spares": lambda n, v: check_bool(n, v), "interval_min": _real,
        },
        ("model", "gpus", "zero_stage", "strategy", "storage_gbps", "relaunch_min", "swap_min", "hot_spares", "interval_min"),
        {"mtbf": "mtbf_correct", "cadence": "cadence_correct"},
        lambda inputs: lab10.cadence_outcomes(inputs, {}),
    ),
    # Lab 11: the context-parallel instrument's setting and the capacity factor; across the
    # fields, the lab's choices and the engine's refusal of what it cannot run (Ulysses past the
    # query heads per TP rank)
    (lab11.LAB, lab11.STEP): StepSpec(
        {"seq_len": _integer, "cp": _plan("cp"), "kv_heads": _integer, "algorithm": _plan("cp_algorithm"), "capacity": _real},
        ("seq_len", "cp", "kv_heads", "algorithm", "capacity"),
        {"fit": "fit_correct", "moe": "moe_correct"},
        lab11.check_setting,
    ),
    # Labs 12 and 13: the instruments' settings; across the fields, each against the values the
    # lab offers (the variant is regenerated from the student's id, not read from the inputs)
    (lab12.LAB, lab12.STEP): StepSpec(
        {"log2_loss_scale": lambda n, v: check_positive(n, v, integer=True, allow_zero=True, maximum=MAX_COUNT), "outlier_scale": _real,
         "accumulation_k": _integer, "accumulation_steps": _integer},
        lab12.INPUT_FIELDS,
        {"underflow": "underflow_correct", "recompute": "recompute_correct", "fp8": "fp8_correct"},
        lab12.check_inputs,
    ),
    (lab13.LAB, lab13.STEP): StepSpec(
        {"block": _choice(lab13.tpm.BLOCKS), "ranks": _integer, "sequence_parallel": lambda n, v: check_bool(n, v), "width": _integer,
         "gpu": _choice(tuple(lab13.SWEEP_GPU_KEYS)), "overlap": lambda n, v: check_bool(n, v)},
        lab13.INPUT_FIELDS,
        {"ring": "ring_correct", "scaling": "scaling_correct", "tp_best": "tp_best_correct"},
        lab13.check_inputs,
    ),
    # Lab 14 (issue 39): the instruments' settings; the fault is regenerated from the student's id
    (lab14.LAB, lab14.STEP): StepSpec(
        {"view_axis": _choice(lab14.dbg.PG_AXES), "timeout_min": _integer, "outlier_group": _choice(lab14.OUTLIER_GROUPS), "threshold_pct": _real},
        lab14.INPUT_FIELDS,
        {"culprit": "culprit_correct", "kind": "kind_correct", "timeout": "timeout_correct"},
        lab14.check_inputs,
    ),
    # Lab 15 (issue 39): the router's knobs and the capacity factor, each against the values the
    # lab offers; the router is re-run from them (cached per setting)
    (lab15.LAB, lab15.STEP): StepSpec(
        {"scheme": _choice(lab15.SCHEMES), "aux_coeff": _real, "gamma": _real, "max_nodes": _integer, "skew": _real, "drift": _real, "capacity": _real},
        lab15.INPUT_FIELDS,
        {"balance": "balance_correct", "drops": "drops_correct", "cost": "cost_correct"},
        lab15.check_inputs,
    ),
}
# Problem sets (issue 40): the answers step takes no inputs; each problem is one question
SPECS.update({(name, PROBLEM_STEP): StepSpec({}, (), {pid: f"{pid}_correct" for pid in chapter.ids}) for name, chapter in PROBLEM_SETS.items()})
# ---- reading ------------------------------------------------------------------------------

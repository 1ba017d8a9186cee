"""Lab 07, the pipeline visualizer: its prediction options, the published rates it shows and
the outcome function `python -m labs.grade` recomputes.

What depends only on a few numbers (a small pipeline's utilisation, a 1F1B bubble, the fewest
micro-batches under a target) is computed once per process (functools.lru_cache): the grader
rebuilds every student's questions, and a class draws the same few settings again and again."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from functools import lru_cache
from labs.core.engine.datafiles import data_dir
from labs.core.scenarios.common import Option, cached_call
from labs.core.scenarios.lab05 import ACT2_DESIGNS, design_inputs
from labs.core.variants import Choice, LabVariants, Numeric, judged

# ---- Lab 07, pipeline visualizer -------------------------------------------------------------
# The lab before per-student variants (older ledgers are graded against it): p = 2, m = 4.
UTILISATION_OPTIONS = (Option("A", "50%", "the bubble is half the step"), Option("B", "67%", "the bubble costs p slots, not p - 1"),
                       Option("C", "80%", "counts the fill and drain once, not per stage"), Option("D", "89%", "underestimates the bubble"))
UTILISATION_VALUES = {"A": 0.50, "B": 2 / 3, "C": 0.80, "D": 8 / 9}
SEED_P, SEED_M = 2, 4  # seeds/001 week 24: two stages, four micro-batches
BUBBLE_TARGET, DEEP_P = 0.05, 16
MICROBATCH_OPTIONS = (Option("A", "32", "a few micro-batches per stage hide the bubble"), Option("B", "96", "a few micro-batches per stage hide the bubble"),
                      Option("C", "288", "solves the bubble formula for m without the rounding"), Option("D", "1024", "overshoots: more micro-batches than the target needs"))
INTERLEAVE_CHUNKS = (1, 2, 4)  # v for "deep pipelines run interleaved"
TABLE5_PROFILE = "zb_t5_profiled_1.5B"  # tests/data/zero_bubble.json
TABLE5_SCHEDULES = (("1f1b", "1F1B"), ("zb-h1", "ZB-H1"), ("zb-h2", "ZB-H2"))
_DATA = data_dir()  # tests/data, or its copy inside the wheel


@lru_cache(maxsize=256, typed=True)
def seed_utilisation(p: int = SEED_P, m: int = SEED_M) -> float:
    """Utilisation of a p-stage, m-micro-batch 1F1B pipeline, counted on its generated timeline."""
    from labs.core.engine.pipeline import timeline

    return 1 - timeline(p, m, "1f1b").bubble_fraction("total")


def utilisation_answer() -> str:
    measured = seed_utilisation()
    return min(UTILISATION_VALUES, key=lambda k: abs(UTILISATION_VALUES[k] - measured))


def under_target(bubble: float, target: float = BUBBLE_TARGET) -> bool:
    """"Under 5%" means strictly below: a bubble of exactly 5.0% is not under."""
    return bubble < target


def share_against(x: float, target: float = BUBBLE_TARGET) -> str:
    """x as a percentage with as many decimals as it takes to show which side of `target` it is
    on (4.95%, not a 5.0% that is under 5%); exactly the target prints as the target."""
    for digits in range(1, 7):
        shown = round(100 * x, digits)
        if x == target or (shown < round(100 * target, digits)) == under_target(x, target) and shown != round(100 * target, digits):
            return f"{100 * x:.{digits}f}%"
    return f"{100 * x:.6f}%"


def microbatch_bubbles(p: int = DEEP_P, options=MICROBATCH_OPTIONS) -> dict[str, float]:
    """Each option's 1F1B bubble, of the wall time, at p stages."""
    return {o.key: _bubble_1f1b(p, int(o.label)) for o in options}


@lru_cache(maxsize=1024, typed=True)
def _bubble_1f1b(p: int, m: int) -> float:
    from labs.core.engine.pipeline import bubble_fraction

    return bubble_fraction(p, m, "1f1b", 1, "total")


def microbatch_answer(p: int = DEEP_P, target: float = BUBBLE_TARGET, options=MICROBATCH_OPTIONS) -> str | None:
    """The fewest micro-batches among the options that keep a p-stage 1F1B bubble strictly under
    `target` of the wall time (None if none does)."""
    bubbles = microbatch_bubbles(p, options)
    ok = [o for o in options if under_target(bubbles[o.key], target)]
    return min(ok, key=lambda o: int(o.label)).key if ok else None


def microbatch_explanations(p: int = DEEP_P, target: float = BUBBLE_TARGET, options=MICROBATCH_OPTIONS) -> dict[str, str]:
    """The reveal's line for each option: its bubble, printed so that its side of the target shows."""
    bubbles, answer = microbatch_bubbles(p, options), microbatch_answer(p, target, options)
    lines = {}
    for o in options:
        b = bubbles[o.key]
        if o.key == answer:
            verdict = f"under {target:.0%}, the fewest of the options that are."
        elif under_target(b, target):
            verdict = f"under {target:.0%}, but more micro-batches than needed (a bigger global batch, or smaller micro-batches)."
        else:
            verdict = f"not under {target:.0%}."
        lines[o.key] = f"m = {o.label}: bubble {share_against(b, target)} of the wall time, {verdict}"
    return lines


@lru_cache(maxsize=256, typed=True)
def fewest_microbatches(p: int, v: int = 1, target: float = BUBBLE_TARGET, multiple_of_p: bool = False, limit: int = 1 << 20) -> int:
    """The fewest micro-batches whose closed-form bubble (of the wall time) is strictly under
    `target`: 1F1B for v = 1, interleaved with v chunks otherwise; multiple_of_p: only m the
    interleaved schedule runs (a multiple of p)."""
    from labs.core.engine.pipeline import bubble_fraction

    schedule = "interleaved" if v > 1 else "1f1b"
    step = p if multiple_of_p or (v > 1 and p > 1) else 1

    def under(k: int) -> bool:  # k steps of micro-batches; the bubble falls as m grows, so bisect
        return under_target(bubble_fraction(p, k * step, schedule, v, "total"), target)

    last = limit // step
    hi = 1
    while not under(hi):
        if hi >= last:
            raise ValueError(f"no m up to {limit} brings p={p}, v={v} under {target:.0%}")
        hi = min(2 * hi, last)
    lo = hi // 2  # not under the target (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if under(mid) else (mid, hi)
    return hi * step


def interleaving_rows(p: int = DEEP_P, target: float = BUBBLE_TARGET, chunks=INTERLEAVE_CHUNKS) -> list[dict]:
    """Deep pipelines run interleaved: per v, the fewest micro-batches under the target (by the
    closed form, then the fewest the schedule runs), the bubble counted on that timeline, and
    the stage-0 activations held (in micro-batches' worth of its layers, labs.core.engine.memory)."""
    from labs.core.engine.pipeline import timeline

    rows = []
    for v in chunks:
        schedule = "interleaved" if v > 1 else "1f1b"
        formula_m = fewest_microbatches(p, v, target, multiple_of_p=False) if v == 1 else _fewest_any_m(p, v, target)
        runs_m = fewest_microbatches(p, v, target, multiple_of_p=v > 1)
        t = timeline(p, runs_m, schedule, v)
        rows.append({
            "v": v, "schedule": schedule, "fewest_m_formula": formula_m, "fewest_m_runs": runs_m,
            "bubble_counted": t.bubble_fraction("total"), "held_stage0": stage0_in_flight(schedule, p, runs_m, v),
            "p2p_messages": 2 * v * runs_m,  # per stage boundary and step: one activation and one gradient per chunk pass
        })
    return rows


def _fewest_any_m(p: int, v: int, target: float) -> int:
    """The fewest m, any integer, under the interleaved closed form (p - 1)/v of idle stage-steps."""
    from labs.core.engine.pipeline import OpCosts, idle_time

    c = OpCosts()
    idle = float(idle_time(p, 1, 2, v, c.tf, c.tb, c.tw))  # schedule code 2: interleaved
    m = 1
    while not under_target(idle / (m * (c.tf + c.tb + c.tw) + idle), target):
        m += 1
    return m


def stage0_in_flight(schedule: str, p: int, m: int, v: int = 1, group: int | None = None) -> float:
    """Micro-batches' worth of its layers stage 0 holds at its peak, from the engine's per-rank
    model (labs.core.engine.memory.in_flight_columns): interleaved warm-up (p - 1) x 2 + (v - 1) x N
    chunks with N the micro-batch group size, p by default as in the timelines played here."""
    from labs.core.engine.memory import in_flight_columns
    from labs.core.engine.pipeline import SCHEDULES

    return float(in_flight_columns(SCHEDULES.index(schedule), p, m, v, 0, p if group is None else group))


def closed_form_holds(p: int, m: int, schedule: str, costs) -> bool:
    """Where the closed-form bubble is what the timeline counts (no messages): always for GPipe,
    1F1B and interleaved; ZB-H2 (in stage windows) once m >= 2p; ZB-H1 (of the makespan) once
    m >= p and T_B >= min(T_F, T_W): with T_B the shortest pass, the ramp before the last stage
    starts, (p-1) T_F, outlasts the (p-1) T_B that the stage-window form counts. Checked against
    the timelines over the lab's slider ranges (tests/test_lab07.py)."""
    if schedule not in ("zb-h1", "zb-h2") or p == 1:
        return True
    if schedule == "zb-h2":
        return m >= 2 * p
    return m >= p and costs.tb >= min(costs.tf, costs.tw)


def run_report(t) -> dict:
    """What the lab shows for one generated timeline: the bubble counted on it (of the step, of
    the busy time, and in stage windows as Qi et al. count it), the closed form where it holds
    (else None), and stage 0's peak in flight from the engine's memory model."""
    from labs.core.engine.pipeline import bubble_fraction

    holds = closed_form_holds(t.p, t.m, t.schedule, t.costs)
    return {
        "counted_total": t.bubble_fraction("total"),
        "counted_ideal": t.bubble_fraction("ideal"),
        "counted_stage": t.bubble_fraction("total", window="stage"),
        "formula_total": bubble_fraction(t.p, t.m, t.schedule, t.v, "total", t.costs) if holds else None,
        "formula_ideal": bubble_fraction(t.p, t.m, t.schedule, t.v, "ideal", t.costs) if holds else None,
        "utilisation": 1 - t.bubble_fraction("total"),
        "held_stage0": stage0_in_flight(t.schedule, t.p, t.m, t.v),
    }


ACTIVATION_PLAN = "C"  # Act II's design C: TP 8, sequence parallel, selective recompute, micro-batch 1
COSTS_M_PER_STAGE = 4  # the schedule-cost table runs m = 4p micro-batches
COSTS_SCHEDULES = (("GPipe", "gpipe", 1), ("1F1B", "1f1b", 1), ("interleaved, v=2", "interleaved", 2), ("ZB-H1", "zb-h1", 1), ("ZB-H2", "zb-h2", 1))


def stage_activation_bytes(p: int, held: float) -> float:
    """Activation bytes stage 0 holds for GPT-3 175B layers, L/p of them, `held` micro-batches'
    worth, laid out as Act II's design C (TP, sequence parallelism, selective recompute, its
    micro-batch)."""
    from labs.core.engine.memory import activation_bytes_per_layer

    model, _ = design_inputs()
    plan = ACT2_DESIGNS[ACTIVATION_PLAN]
    per_layer = activation_bytes_per_layer(model.seq_len, plan.micro_batch, model.hidden, model.heads, plan.tp, plan.sequence_parallel, plan.recompute)
    return per_layer * model.layers / p * held


def activation_setting() -> str:
    """The activation setting of stage_activation_bytes, in words."""
    plan = ACT2_DESIGNS[ACTIVATION_PLAN]
    return f"TP {plan.tp}, {'sequence parallel, ' if plan.sequence_parallel else ''}{plan.recompute} recompute, micro-batch {plan.micro_batch}"


def schedule_cost_rows(p: int) -> list[dict]:
    """What each schedule pays for its bubble at p stages and m = COSTS_M_PER_STAGE x p, with
    T_F = T_B = T_W: the closed-form bubble (which holds there: m >= 2p, equal costs; ZB-H2's
    in each stage's window, its ramp outside) and stage 0's activations (engine memory model)."""
    from labs.core.engine.pipeline import bubble_fraction

    m = COSTS_M_PER_STAGE * p
    rows = []
    for label, schedule, v in COSTS_SCHEDULES:
        held = stage0_in_flight(schedule, p, m, v)
        rows.append({"label": label, "schedule": schedule, "p": p, "m": m, "v": v, "held_stage0": held,
                     "activation_bytes": stage_activation_bytes(p, held), "bubble": bubble_fraction(p, m, schedule, v, "total")})
    return rows


def table5_profile() -> dict:
    """Qi et al. 2024 Table 5's profiled inputs (1.5B model, p = 8) with the published bubble
    rates: tests/data/zero_bubble.json and published_numbers.json."""
    from labs.core.engine.calibration import load_rows

    prof = next(r for r in json.loads((_DATA / "zero_bubble.json").read_text()) if r["id"] == TABLE5_PROFILE)
    published = {r["id"]: r for r in load_rows()}
    return {"inputs": prof["inputs"], "source": prof["source"],
            "rows": [{**r, "published": published[r["published_id"]]["outputs"]} for r in prof["rows"]]}


def table5_rows() -> list[dict]:
    """Per profiled row and schedule: the closed form (no messages), the timeline counted in
    stage windows with the profiled T_F, T_B, T_W, T_comm (Table 5's definition), and the paper's
    rate; for ZB-H2 also its idle per stage in ms."""
    from labs.core.engine.pipeline import OpCosts, bubble_fraction, timeline

    prof = table5_profile()
    p = prof["inputs"]["pp"]
    out = []
    for r in prof["rows"]:
        m = r["microbatches"]
        costs = OpCosts(r["TF_ms"], r["TB_ms"], r["TW_ms"], r["Tcomm_ms"])
        bare = OpCosts(r["TF_ms"], r["TB_ms"], r["TW_ms"])
        for schedule, key in TABLE5_SCHEDULES:
            t = timeline(p, m, schedule, costs=costs)
            out.append({
                "schedule": key, "p": p, "m": m, "tf_ms": r["TF_ms"], "tb_ms": r["TB_ms"], "tw_ms": r["TW_ms"], "comm_ms": r["Tcomm_ms"],
                "formula": bubble_fraction(p, m, schedule, 1, "total", bare),
                "counted": t.bubble_fraction("total", window="stage"),
                "paper": r["published"][key],
                "idle_per_stage_ms": float(t.stage_windows().max() - m * (r["TF_ms"] + r["TB_ms"] + r["TW_ms"])),
            })
    return out


def pipeline_outcomes(inputs: dict, predictions: dict, variant=None) -> dict:
    p, m, v = int(inputs["p"]), int(inputs["m"]), int(inputs.get("v", 1))
    schedule, costs = inputs["schedule"], (float(inputs["tf"]), float(inputs["tb"]), float(inputs["tw"]))
    measured, formula, peak = cached_call(_pipeline_numbers, p, m, schedule, v, *costs)
    return {
        "bubble_measured": measured,
        "bubble_formula": formula,
        "peak_in_flight_stage0": peak,
        "utilisation_correct": judged(variant, "utilisation", predictions, lambda a: a == utilisation_answer()),
        "microbatches_correct": judged(variant, "microbatches", predictions, lambda a: a == microbatch_answer()),
    }


def pipeline_setting(p: int, m: int, schedule: str, v: int, tb: float, tw: float) -> dict:
    """The instruments' setting as the ledger records it (pipeline_outcomes' inputs): v only
    under interleaving (1 for the other schedules), T_F the unit of time."""
    return dict(p=p, m=m, schedule=schedule, v=v if schedule == "interleaved" else 1, tf=1.0, tb=tb, tw=tw)


@lru_cache(maxsize=1024, typed=True)
def _pipeline_numbers(p: int, m: int, schedule: str, v: int, tf: float, tb: float, tw: float) -> tuple[float, float, float]:
    """The timeline's bubble (of the wall time), the closed form's and stage 0's peak in flight."""
    from labs.core.engine.pipeline import OpCosts, bubble_fraction, timeline

    costs = OpCosts(tf, tb, tw)
    t = timeline(p, m, schedule, v, costs)
    return t.bubble_fraction("total"), bubble_fraction(p, m, schedule, v, "total", costs), float(t.peak_in_flight()[0])


OUTCOMES = {("07_pipeline_visualizer", "pipeline"): pipeline_outcomes}


# ---- per-student variants (labs.variants) ------------------------------------------------------
LAB = "07_pipeline_visualizer"
VARIANT_SEED_P = (2, 3, 4, 6, 8)  # the small pipeline of the utilisation question
VARIANT_M_PER_STAGE = (1, 2)  # its micro-batches, per stage: (p-1)/m and (p-1)/(m+p-1) stay 5+ points apart
VARIANT_DEEP_P = (8, 12, 16, 24, 32)
VARIANT_TARGETS = (0.05, 0.10)
UTILISATION_TOLERANCE = 1.5  # percentage points: the misreadings (p-1)/m and p/(m+p) land outside it


def draw_settings_v1(d) -> dict:
    p = d.choice("seed_p", VARIANT_SEED_P)
    return {"seed_p": p, "seed_m": p * d.choice("seed_m_per_stage", VARIANT_M_PER_STAGE),
            "deep_p": d.choice("deep_p", VARIANT_DEEP_P), "target": d.choice("target", VARIANT_TARGETS)}


def microbatch_options_v1(p: int, target: float) -> tuple[Option, ...]:
    """The first edition's micro-batch options at p stages (review 38bda0b W1: two distractors also
    kept the bubble under the target, and the key was always the second-smallest): the fewest m under the target (engine),
    two counts that solve a misread bubble (against the ideal time; p slots instead of p - 1),
    both under the target but not the fewest, and two micro-batches per stage, not under it."""
    fewest, t = fewest_microbatches(p, 1, target), Fraction(str(target))
    ideal = math.floor((p - 1) / t) + 1  # (p-1)/m < target
    slots = math.floor(p * (1 - t) / t) + 1  # p/(m+p) < target
    return (
        Option("per_stage", str(2 * p), "a few micro-batches per stage hide the bubble"),
        Option("fewest", str(fewest), "solves the bubble formula for m without checking the timeline"),
        Option("ideal", str(ideal), "counts the bubble against the ideal time, not the wall time"),
        Option("slots", str(slots), "the bubble costs p slots, not p - 1"),
    )


# The micro-batch options by id, as the class dashboard names them (their numbers vary per student)
MICROBATCH_VARIANT_OPTIONS = tuple(Option(o.key, label, o.misconception) for o, label in zip(
    microbatch_options_v1(DEEP_P, BUBBLE_TARGET), ("2 per stage", "the fewest under the target", "(p-1)/m under the target", "p/(m+p) under the target")))


def build_questions_v1(s: dict) -> dict:
    p, m, deep, target = int(s["seed_p"]), int(s["seed_m"]), int(s["deep_p"]), float(s["target"])
    measured = seed_utilisation(p, m)
    options = microbatch_options_v1(deep, target)
    return {
        "utilisation": Numeric(
            f"{p} stages, {m} micro-batches, 1F1B, forward and backward of equal size per stage: what share of the time is each GPU busy? "
            f"Type a percentage (right within {UTILISATION_TOLERANCE:g} points).",
            100 * measured, UTILISATION_TOLERANCE, "%",
            f"the timeline counts {measured:.1%}: m/(m+p-1) = {m}/{m + p - 1}.",
        ),
        "microbatches": Choice(
            f"With {deep} stages and 1F1B, how many micro-batches keep the bubble under {target:.0%} of the wall time "
            f"(strictly below: a bubble of exactly {target:.1%} is not under)?",
            options, microbatch_answer(deep, target, options), microbatch_explanations(deep, target, options),
        ),
    }


# Edition 2 (review 38bda0b, W1): the prompt asks for the fewest micro-batches, and the key's rank
# among the options is drawn: `MICROBATCH_BELOW` of the distractors sit below the fewest (their
# bubble is over the target), the rest above it (under the target, but not the fewest).
MICROBATCH_BELOW = (0, 1, 2, 3)  # how many distractors are smaller than the key: its rank, ascending
MICROBATCH_UNDER_POOL = ("interleaved", "per_stage_2", "per_stage_4")  # over the target
MICROBATCH_OVER_POOL = ("ideal", "slots", "whole_stages")  # under the target, more than the fewest


def draw_settings(d) -> dict:
    below = d.choice("microbatch_below", MICROBATCH_BELOW)
    return {**draw_settings_v1(d), "microbatch_distractors": [*d.order("microbatch_under", MICROBATCH_UNDER_POOL)[:below],
                                                              *d.order("microbatch_over", MICROBATCH_OVER_POOL)[:3 - below]]}


def microbatch_candidates(p: int, target: float) -> dict[str, Option]:
    """Every micro-batch count the question may offer at p stages, by id: the fewest m whose
    bubble (p-1)/(m+p-1) is strictly under the target (engine), three counts below it whose bubble
    is over the target, and three above it that are under the target but not the fewest."""
    fewest, t = fewest_microbatches(p, 1, target), Fraction(str(target))
    whole = (fewest // p + 1) * p  # the next whole number of micro-batches per stage past the fewest
    return {o.key: o for o in (
        Option("fewest", str(fewest), "solves the bubble formula for m without checking the timeline"),
        Option("interleaved", str(math.floor((p - 1) / (2 * t)) + 1), "uses the interleaved schedule's (p-1)/(v m) with v = 2, not 1F1B's"),
        Option("per_stage_2", str(2 * p), "a few micro-batches per stage hide the bubble"),
        Option("per_stage_4", str(4 * p), "four micro-batches per stage hide the bubble"),
        Option("ideal", str(math.floor((p - 1) / t) + 1), "counts the bubble against the ideal time, not the wall time"),
        Option("slots", str(math.floor(p * (1 - t) / t) + 1), "the bubble costs p slots, not p - 1"),
        Option("whole_stages", str(whole), "rounds up to whole micro-batches per stage, past the fewest"),
    )}


def microbatch_options(p: int, target: float, distractors) -> tuple[Option, ...]:
    """The fewest under the target and the drawn distractors, in ascending order of m."""
    pool = microbatch_candidates(p, target)
    return tuple(sorted((pool["fewest"], *(pool[k] for k in distractors)), key=lambda o: int(o.label)))


def build_questions(s: dict) -> dict:
    q = build_questions_v1(s)
    deep, target = int(s["deep_p"]), float(s["target"])
    options = microbatch_options(deep, target, s["microbatch_distractors"])
    return {**q, "microbatches": Choice(
        f"With {deep} stages and 1F1B, what is the fewest micro-batches that keep the bubble under {target:.0%} of the wall time "
        f"(strictly below: a bubble of exactly {target:.1%} is not under)?",
        options, microbatch_answer(deep, target, options), microbatch_explanations(deep, target, options),
    )}


# Edition 2's ids the first lacks, named for the dashboard (their numbers vary per student)
MICROBATCH_VARIANT_OPTIONS += tuple(Option(o.key, label, o.misconception) for o, label in zip(
    (microbatch_candidates(DEEP_P, BUBBLE_TARGET)[k] for k in ("interleaved", "per_stage_2", "per_stage_4", "whole_stages")),
    ("(p-1)/(2m) under the target", "2 per stage", "4 per stage", "the next whole number per stage")))


# Edition 3 (issue 38 item 2, review 38bda0b W1): the fewest micro-batches is typed, not picked.
# Offered as four counts it cannot have exactly one option under the target without being the
# largest, and edition 2's way out (the key's rank drawn, the counts above it under the target but
# not the fewest) left it recognisable: the longest number found it for 40% of 200 ids, and "the
# smallest of the counts within 10% of another" for 86%, since the misreadings that over-count
# (against the ideal time, p slots, whole micro-batches per stage) land just above the fewest and
# none lands just below it. Typed, the answer is the one count the engine finds, exactly.
MICROBATCH_TOLERANCE = 0.5  # micro-batches: the fewest, exactly (the question asks for a count)


def microbatch_question(deep: int, target: float) -> Numeric:
    """The fewest micro-batches under the target at `deep` stages, typed; the reveal gives the
    bubble there and one below it, and the counts the usual misreadings give."""
    fewest = fewest_microbatches(deep, 1, target)
    near = microbatch_candidates(deep, target)
    misread = ", ".join(f"{near[k].label} ({why})" for k, why in (
        ("ideal", "the bubble against the ideal time, (p-1)/m"), ("slots", "p slots idle, p/(m+p)"),
        ("whole_stages", "rounded up to whole micro-batches per stage")))
    return Numeric(
        f"With {deep} stages and 1F1B, what is the fewest micro-batches that keep the bubble under {target:.0%} of the wall time "
        f"(strictly below: a bubble of exactly {target:.1%} is not under)? Type a whole number (exactly).",
        float(fewest), MICROBATCH_TOLERANCE, "micro-batches",
        f"the bubble (p-1)/(m+p-1) is {deep - 1}/{fewest + deep - 1} = {share_against(_bubble_1f1b(deep, fewest), target)} of the wall time at "
        f"m = **{fewest}**, under {target:.0%}; at m = {fewest - 1} it is {share_against(_bubble_1f1b(deep, fewest - 1), target)}, not under. "
        f"The usual misreadings give {misread}.",
    )


def build_questions_v3(s: dict) -> dict:
    return {**build_questions_v1(s), "microbatches": microbatch_question(int(s["deep_p"]), float(s["target"]))}


VARIANTS = LabVariants(LAB, draw_settings_v1, build_questions_v3, version=3,
                       older={1: (draw_settings_v1, build_questions_v1), 2: (draw_settings, build_questions)})

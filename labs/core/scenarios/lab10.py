"""Lab 10, failures at scale: the stakeholder's run, the prediction options and the claims the
engine judges them by, the checkpoint settings the lab offers, and the outcome function
`python -m labs.grade` recomputes. Every number comes from labs.core.engine.reliability."""

from __future__ import annotations

from functools import lru_cache

from labs.core.engine.hardware import Cluster
from labs.core.engine.models import Model
from labs.core.engine.reliability import DAY, HOUR, MINUTE
from labs.core.scenarios.common import Option, cached_call
from labs.core.variants import Choice, LabVariants, Numeric, judged

LAB = "10_failures_at_scale"

# ---- the stakeholder's run: Llama 3 405B's scale (arXiv:2407.21783 Sec. 3.3) ---------------------
RUN_MODEL = "llama3-405b"
RUN_GPUS = 16_384
RUN_DAYS = 54  # days of useful compute the run needs, as long as Llama 3's snapshot
CLUSTER = "meta-h100-roce"  # Grand Teton servers, 400 Gb/s RoCE per GPU
# Layouts per model (TP, PP); the data-parallel degree fills the 16,384 GPUs. 405B: Llama 3's
# TP 8 x PP 16 (Sec. 3.3.2, Table 4); the smaller models use the fewest that their layers need.
LAYOUTS = {"llama3-8b": (1, 1), "llama3-70b": (8, 1), "llama3-405b": (8, 16)}
SHARDINGS = {"ZeRO-1 (optimizer sharded)": 1, "ZeRO-2 (+ gradients)": 2, "FSDP / ZeRO-3 (+ weights)": 3, "none (plain DP)": 0}
STRATEGY_LABELS = {"sync (gathered to one writer)": "sync", "sharded (every GPU writes its slice)": "sharded", "async (copy to host, write in background)": "async"}
# The seed's claim (seeds/002, "Checkpointing strategies"): a sync checkpoint of a 70B model
# pauses training 10-30 minutes.
SEED_CLAIM_MODEL = "llama3-70b"
SEED_CLAIM_MINUTES = (10, 30)

# ---- prediction 1: is the job's time between failures the GPU's? ------------------------------
# The lab before per-student variants asked this as ranges (older ledgers are graded against them);
# a variant asks for the number of interruptions, typed in.
MTBF_OPTIONS = (
    Option("A", "About the same as one GPU's: years", "a cluster fails as rarely as one GPU"),
    Option("B", "Weeks: a big cluster is a little less reliable", "failure rate does not scale with N"),
    Option("C", "Hours: it falls as 1/N, the job stops when any GPU does", "counts every failure as job-stopping"),
    Option("D", "Minutes: something is always broken", "overestimates the failure rate"),
)
# Each option's range of the job's MTBF, in seconds: [low, high)
MTBF_RANGES = {"A": (365 * DAY, float("inf")), "B": (DAY, 365 * DAY), "C": (HOUR, DAY), "D": (0.0, HOUR)}


def run_cluster(gpus: int = RUN_GPUS) -> Cluster:
    return Cluster.get(CLUSTER, nodes=max(1, gpus // 8))


def mtbf_answer(gpus: int = RUN_GPUS) -> str:
    from labs.core.engine.reliability import job_mtbf_s

    m = job_mtbf_s(gpus)
    return next(k for k, (lo, hi) in MTBF_RANGES.items() if lo <= m < hi)


def _span(seconds: float) -> str:
    if seconds >= 365 * DAY:
        return f"{seconds / (365 * DAY):.1f} years"
    if seconds >= DAY:
        return f"{seconds / DAY:.1f} days"
    if seconds >= HOUR:
        return f"{seconds / HOUR:.1f} hours"
    return f"{seconds / MINUTE:.0f} minutes"


def mtbf_explanations(gpus: int = RUN_GPUS) -> dict[str, str]:
    from labs.core.engine.reliability import LLAMA3_UNEXPECTED, LLAMA3_WINDOW_S, gpu_mtbf_s, job_mtbf_s

    job, gpu = job_mtbf_s(gpus), gpu_mtbf_s()
    return {
        "A": f"one GPU goes {_span(gpu)} between job-stopping failures; {gpus:,} of them share the job, and the job stops when any one does.",
        "B": f"weeks would need each GPU to last {_span(7 * DAY * gpus)}; Llama 3's fleet shows {_span(gpu)} per GPU, so the job gets {_span(job)}.",
        "C": f"{_span(gpu)} / {gpus:,} = **{_span(job)}** between unexpected interruptions, as Llama 3 saw "
             f"({LLAMA3_WINDOW_S / DAY:.0f} days x 24 h / {LLAMA3_UNEXPECTED}).",
        "D": f"minutes would mean every GPU fails every {_span(30 * MINUTE * gpus)}; measured, it is {_span(gpu)}, so the job gets {_span(job)}.",
    }


# ---- prediction 2: checkpointing more often is always safer? ---------------------------------
CADENCE_OPTIONS = (
    Option("A", "Yes: every extra checkpoint saves rework, so goodput keeps rising as the interval shrinks", "more checkpoints are always safer"),
    Option("B", "No: below some interval, the checkpoint stalls cost more than the rework they save", "stalls and rework trade off nowhere"),
    Option("C", "It stops mattering once checkpoints are asynchronous: the interval is then free", "async checkpoints are free"),
    Option("D", "Once a day is enough: at this failure rate, rework is a small cost", "a cluster fails as rarely as one GPU"),
)
# The setting the claims are judged in: the stakeholder's run, 405B FSDP, on Llama 3's storage,
# a 10-minute relaunch and an hour to replace a node without spares.
CLAIM_SETTING = dict(model=RUN_MODEL, gpus=RUN_GPUS, zero_stage=3, storage_gbps=2000, relaunch_min=10, swap_min=60, hot_spares=False)
CLAIM_INTERVALS_MIN = (1, 1440)  # "very often" and "once a day"
NEGLIGIBLE = 0.01  # goodput differences below one point do not count as mattering


def setting_costs(model: str, gpus: int, zero_stage: int, strategy: str, storage_gbps: float, relaunch_min: float, swap_min: float, hot_spares: bool) -> dict:
    """The run's MTBF, its checkpoint (size, cost) and its mean restart R (relaunch + the
    checkpoint read + a node swap where needed), for one setting of the lab's controls."""
    from labs.core.engine.reliability import checkpoint_cost, checkpoint_size, job_mtbf_s, mean_restart_s, restart_by_cause, restore_s

    if not isinstance(model, str) or model not in LAYOUTS:
        raise ValueError(f"model must be one of {', '.join(LAYOUTS)}; got {model!r}")
    tp, pp = LAYOUTS[model]
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < tp * pp or gpus % (tp * pp):
        raise ValueError(f"gpus must be a multiple of tp x pp = {tp * pp} for {model}, got {gpus!r}")
    cluster = run_cluster(gpus)
    size = checkpoint_size(Model.get(model), tp, pp, gpus // (tp * pp), zero_stage)
    storage = storage_gbps * 1e9
    cost = checkpoint_cost(size, strategy, storage, cluster)
    read = restore_s(size, storage, cluster)
    restarts = restart_by_cause(relaunch_min * MINUTE + read, swap_min * MINUTE, hot_spares)
    return {"mtbf_s": job_mtbf_s(gpus), "size": size, "cost": cost, "restore_s": read, "restarts": restarts, "restart_s": mean_restart_s(restarts), "cluster": cluster}


def cadence_margins(gpus: int = RUN_GPUS) -> dict[str, float]:
    """The goodput gaps the cadence claims turn on, in CLAIM_SETTING at `gpus`: the optimum over
    a checkpoint every minute and over once a day (sharded), and the spread of async goodput
    between those intervals. The tests ask each to clear its threshold with room."""
    from labs.core.engine.reliability import goodput, optimal_interval

    often, daily = (m * MINUTE for m in CLAIM_INTERVALS_MIN)
    setting = {**CLAIM_SETTING, "gpus": gpus}
    sync = setting_costs(strategy="sharded", **setting)
    m, r = sync["mtbf_s"], sync["restart_s"]
    c = sync["cost"].stall_s
    best = optimal_interval(c, m)
    g = lambda tau, stall=c: goodput(tau, stall, r, m)  # noqa: E731
    asy = setting_costs(strategy="async", **setting)["cost"]
    spread = [goodput(t, asy.stall_at(t), r, m) for t in (often, optimal_interval(asy.stall_at(best), m), daily)]
    return {"best_over_often": g(best) - g(often), "best_over_daily": g(best) - g(daily), "async_spread": max(spread) - min(spread)}


def cadence_claims(gpus: int = RUN_GPUS) -> dict[str, bool]:
    """Each option's claim, judged by the engine in CLAIM_SETTING at `gpus`."""
    f = cadence_margins(gpus)
    return {
        "A": f["best_over_often"] <= 0,  # "keeps rising as the interval shrinks": the shortest would be best
        "B": f["best_over_often"] > 0 and f["best_over_daily"] > 0,
        "C": f["async_spread"] < NEGLIGIBLE,
        "D": f["best_over_daily"] < NEGLIGIBLE,
    }


@lru_cache(maxsize=16)  # a constant of the engine per GPU count, asked for by every cadence outcome (and the grader)
def cadence_answer(gpus: int = RUN_GPUS) -> str | None:
    """The option whose claim holds, when exactly one does (None otherwise)."""
    held = [k for k, v in cadence_claims(gpus).items() if v]
    return held[0] if len(held) == 1 else None


def cadence_explanations(gpus: int = RUN_GPUS) -> dict[str, str]:
    from labs.core.engine.reliability import goodput, optimal_interval

    s = setting_costs(strategy="sharded", **{**CLAIM_SETTING, "gpus": gpus})
    a = setting_costs(strategy="async", **{**CLAIM_SETTING, "gpus": gpus})["cost"]
    m, r, c = s["mtbf_s"], s["restart_s"], s["cost"].stall_s
    best = optimal_interval(c, m)
    often, daily = (x * MINUTE for x in CLAIM_INTERVALS_MIN)
    g = lambda tau, stall=c: goodput(tau, stall, r, m)  # noqa: E731
    ga = lambda tau: goodput(tau, a.stall_at(tau), r, m)  # noqa: E731
    return {
        "A": f"with a {c:.1f} s sharded checkpoint, every {CLAIM_INTERVALS_MIN[0]} min gives {g(often):.1%} goodput, the optimum "
             f"({best / MINUTE:.0f} min) {g(best):.1%}: stalls add up faster than rework shrinks.",
        "B": f"goodput peaks at {best / MINUTE:.0f} min ({g(best):.1%}); every {CLAIM_INTERVALS_MIN[0]} min gives {g(often):.1%}, once a day {g(daily):.1%}.",
        "C": f"async cuts the stall to {a.stall_s * 1e3:.0f} ms (its {a.write_s:.1f} s write runs in the background), so short intervals cost "
             f"little; the interval still sets the rework: {ga(often):.1%} at {CLAIM_INTERVALS_MIN[0]} min, {ga(daily):.1%} once a day.",
        "D": f"with an interruption every {m / HOUR:.1f} h, a day of work between checkpoints almost never finishes: {g(daily):.1%} goodput against {g(best):.1%}.",
    }


# ---- what the lab shows -------------------------------------------------------------------------
def checkpoint_rows(zero_stage: int, storage_gbps: float, gpus: int = RUN_GPUS) -> list[dict]:
    """Per model and strategy: the checkpoint's bytes, its stall and write time, its restore."""
    rows = []
    for model in LAYOUTS:
        for label, strategy in STRATEGY_LABELS.items():
            s = setting_costs(model, gpus, zero_stage, strategy, storage_gbps, 0, 0, True)
            rows.append({"model": Model.get(model).name, "strategy": label, "job_bytes": s["size"].job_bytes, "per_gpu_bytes": s["size"].per_gpu_bytes,
                         "stall_s": s["cost"].stall_s, "write_s": s["cost"].write_s, "restore_s": s["restore_s"]})
    return rows


def seed_claim_bandwidths(zero_stage: int = 1) -> tuple[float, float, float]:
    """The seed's 70B sync checkpoint: its bytes, and the storage bandwidths (bytes/s) at which a
    sync write takes 10 and 30 minutes."""
    from labs.core.engine.reliability import checkpoint_size

    tp, pp = LAYOUTS[SEED_CLAIM_MODEL]
    size = checkpoint_size(Model.get(SEED_CLAIM_MODEL), tp, pp, RUN_GPUS // (tp * pp), zero_stage)
    lo, hi = SEED_CLAIM_MINUTES
    return size.job_bytes, size.job_bytes / (lo * MINUTE), size.job_bytes / (hi * MINUTE)


def max_checkpoint_for(target: float, restart_s: float, mtbf_s: float) -> float | None:
    """The largest checkpoint stall C whose best goodput still reaches `target` at this R and M
    (bisection: best goodput falls as C grows); None when even a free checkpoint cannot."""
    from labs.core.engine.reliability import best_goodput

    if mtbf_s / (mtbf_s + restart_s) <= target:
        return None
    lo, hi = 0.0, mtbf_s
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid > 0 and best_goodput(mid, restart_s, mtbf_s) >= target else (lo, mid)
    return lo


def inverse_rows(restart_minutes=(1, 5, 10, 15, 20, 30), target: float | None = None) -> list[dict]:
    """Llama 3's 'over 90% effective training time' read as goodput against unexpected
    interruptions only: the checkpoint stalls it allows at each restart cost."""
    from labs.core.engine.reliability import LLAMA3_EFFECTIVE_TRAINING, job_mtbf_s, optimal_interval

    target = LLAMA3_EFFECTIVE_TRAINING if target is None else target
    m = job_mtbf_s(RUN_GPUS)
    rows = []
    for minutes in restart_minutes:
        c = max_checkpoint_for(target, minutes * MINUTE, m)
        rows.append({"restart_min": minutes, "max_checkpoint_s": c, "interval_s": optimal_interval(c, m) if c else None})
    return rows


def cadence_outcomes(inputs: dict, predictions: dict, variant=None) -> dict:
    setting = (inputs["model"], int(inputs["gpus"]), int(inputs["zero_stage"]), inputs["strategy"], float(inputs["storage_gbps"]),
               float(inputs["relaunch_min"]), float(inputs["swap_min"]), bool(inputs["hot_spares"]))
    tau = float(inputs["interval_min"]) * MINUTE
    return {
        **dict(zip(CADENCE_NUMBERS, cached_call(_cadence_numbers, setting, tau))),
        "mtbf_correct": judged(variant, "mtbf", predictions, lambda a: a == mtbf_answer()),
        "cadence_correct": judged(variant, "cadence", predictions, lambda a: a == cadence_answer()),
    }


CADENCE_NUMBERS = ("job_mtbf_h", "checkpoint_tb", "stall_s", "restart_s", "goodput", "young_min", "daly_min", "best_goodput")
_setting_costs = lru_cache(maxsize=256, typed=True)(setting_costs)  # its dict read, never edited


@lru_cache(maxsize=1024, typed=True)
def _cadence_numbers(setting: tuple, tau: float) -> tuple[float, ...]:
    return _numbers(cached_call(_setting_costs, *setting), tau)


def _numbers(s: dict, tau: float) -> tuple[float, ...]:
    """cadence_outcomes' CADENCE_NUMBERS for setting_costs `s` and a checkpoint every `tau` seconds."""
    from labs.core.engine.reliability import daly_interval, goodput, optimal_interval, young_interval

    m, r, cost = s["mtbf_s"], s["restart_s"], s["cost"]
    c = cost.stall_at(tau)
    return (m / HOUR, s["size"].job_bytes / 1e12, c, r, goodput(tau, c, r, m), young_interval(cost.stall_s, m) / MINUTE,
            daly_interval(cost.stall_s, m) / MINUTE, goodput(optimal_interval(cost.stall_s, m), cost.stall_s, r, m))


OUTCOMES = {(LAB, "cadence"): cadence_outcomes}


# ---- per-student variants (labs.variants) ------------------------------------------------------
VARIANT_GPUS = (4096, 8192, 16384, 32768)  # multiples of every layout's TP x PP, on the lab's GPU slider
VARIANT_DAYS = (30, 45, 54, 60, 90)
INTERRUPTIONS_TOLERANCE = 0.10  # of the engine's count: the rate is a fit on one 54-day window


def draw_settings_v1(d) -> dict:
    return {"gpus": d.choice("gpus", VARIANT_GPUS), "days": d.choice("days", VARIANT_DAYS)}


def build_questions_v1(s: dict) -> dict:
    from labs.core.engine.reliability import job_mtbf_s

    gpus = int(s["gpus"])
    return {
        "mtbf": mtbf_question(s),
        "cadence": Choice(
            f"Your {gpus:,}-GPU job stops every {_span(job_mtbf_s(gpus))}. Checkpointing more often is always safer. True?",
            CADENCE_OPTIONS, cadence_answer(gpus), cadence_explanations(gpus),
        ),
    }


def mtbf_question(s: dict) -> Numeric:
    from labs.core.engine.reliability import expected_interruptions, gpu_mtbf_s, job_mtbf_s

    gpus, days = int(s["gpus"]), int(s["days"])
    count = expected_interruptions(gpus, days * DAY)["unexpected"]
    years = gpu_mtbf_s() / (365 * DAY)
    return Numeric(
            f"Each GPU runs {years:.1f} years between job-stopping failures on average (Llama 3's interruptions of every cause, software "
            "and network included, counted per GPU: assume every cause grows with the GPUs), and the job stops when any of its GPUs does. "
            f"How many unexpected interruptions should a {gpus:,}-GPU job expect in {days} days? "
            f"Type a number (right within {INTERRUPTIONS_TOLERANCE:.0%}).",
            count, max(INTERRUPTIONS_TOLERANCE * count, 0.5), "interruptions",
            f"{gpus:,} GPUs x {days} days / ({years:.1f} years x 365 days) = **{count:.0f}**: one every "
            f"{_span(job_mtbf_s(gpus))}, the GPU's {_span(gpu_mtbf_s())} divided by {gpus:,}.",
        )


# ---- variants, second edition: the best cadence at the student's MTBF and checkpoint stall -------------
# The first edition asked "more often is always safer?", whose answer (no) was the same for every
# student. Now each student's file system has its own bandwidth (a value of the lab's slider),
# which with the job's MTBF sets the checkpoint stall C and the best interval (about sqrt(2CM),
# Young 1974): the question asks which of four intervals gives the most goodput. Per GPU count,
# the bandwidths are those where one interval leads the next best by half a point of goodput or more.
CADENCE_INTERVALS_MIN = (2, 5, 15, 45)
VARIANT_STORAGE_GBPS = {4096: (20, 50, 100, 500), 8192: (20, 200, 500, 2000), 16384: (20, 100, 200, 1000), 32768: (100, 500, 1000, 7000)}
CADENCE_LEAD = 0.005  # of goodput: the best interval's lead over the next


def cadence_setting(settings: dict) -> dict:
    """The setting a variant's cadence question is judged in: CLAIM_SETTING at the student's GPUs
    and file-system bandwidth (the first edition drew no bandwidth: CLAIM_SETTING's)."""
    return {**CLAIM_SETTING, "gpus": int(settings["gpus"]), "storage_gbps": float(settings.get("storage_gbps", CLAIM_SETTING["storage_gbps"]))}


@lru_cache(maxsize=64)
def cadence_interval_facts(gpus: int, storage_gbps: float) -> dict:
    """Goodput at each offered interval (sharded checkpoints), the best of them and its lead,
    the exact optimum and Young's sqrt(2CM), and the stall C, restart R and MTBF M behind them."""
    from labs.core.engine.reliability import goodput, optimal_interval, young_interval

    s = setting_costs(strategy="sharded", **cadence_setting({"gpus": gpus, "storage_gbps": storage_gbps}))
    m, r, c = s["mtbf_s"], s["restart_s"], s["cost"].stall_s
    g = {minutes: goodput(minutes * MINUTE, c, r, m) for minutes in CADENCE_INTERVALS_MIN}
    ranked = sorted(g.values(), reverse=True)
    return {"goodput": g, "best": max(g, key=g.get), "lead": ranked[0] - ranked[1], "optimum_s": optimal_interval(c, m),
            "young_s": young_interval(c, m), "stall_s": c, "restart_s": r, "mtbf_s": m, "bytes": s["size"].job_bytes}


def cadence_interval_options(gpus: int, storage_gbps: float) -> tuple[Option, ...]:
    """One option per offered interval; each wrong one stands for the side it errs on."""
    best = cadence_interval_facts(gpus, storage_gbps)["best"]
    return tuple(
        Option("ABCD"[i], f"Every {minutes} minutes of training",
               "checkpoints too often: the stalls cost more than the rework they save" if minutes < best
               else ("checkpoints too rarely: the rework costs more than the stalls saved" if minutes > best else "misjudges where the stalls and the rework balance"))
        for i, minutes in enumerate(CADENCE_INTERVALS_MIN)
    )


def cadence_interval_answer(gpus: int, storage_gbps: float) -> str:
    return "ABCD"[CADENCE_INTERVALS_MIN.index(cadence_interval_facts(gpus, storage_gbps)["best"])]


def cadence_interval_explanations(gpus: int, storage_gbps: float) -> dict[str, str]:
    f = cadence_interval_facts(gpus, storage_gbps)
    g, best = f["goodput"], f["best"]
    out = {}
    for i, minutes in enumerate(CADENCE_INTERVALS_MIN):
        checkpoints = 60 / minutes
        if minutes == best:
            why = (f"the best of the four, {f['lead'] * 100:.1f} points ahead of the next; the exact optimum is "
                   f"{f['optimum_s'] / MINUTE:.1f} min, Young's sqrt(2CM) {f['young_s'] / MINUTE:.1f} min.")
        elif minutes < best:
            why = (f"{(g[best] - g[minutes]) * 100:.1f} points below every {best} min: {checkpoints:g} stalls of {f['stall_s']:.1f} s an hour "
                   "cost more than the rework they save.")
        else:
            why = (f"{(g[best] - g[minutes]) * 100:.1f} points below every {best} min: each interruption redoes half an interval, "
                   f"{minutes / 2:g} min on average, more than the stalls saved.")
        out["ABCD"[i]] = f"{g[minutes]:.1%} goodput: {why}"
    return out


def draw_settings(d) -> dict:
    gpus = d.choice("gpus", VARIANT_GPUS)
    return {"gpus": gpus, "days": d.choice("days", VARIANT_DAYS), "storage_gbps": d.choice("storage_gbps", VARIANT_STORAGE_GBPS[gpus])}


def build_questions(s: dict) -> dict:
    gpus, storage = int(s["gpus"]), float(s["storage_gbps"])
    f = cadence_interval_facts(gpus, storage)
    return {
        "mtbf": mtbf_question(s),
        "cadence": Choice(
            f"Your {gpus:,}-GPU job stops every {_span(f['mtbf_s'])} on average. A sharded checkpoint of {Model.get(RUN_MODEL).name} "
            f"({f['bytes'] / 1e12:.1f} TB) to a file system delivering {storage:g} GB/s stalls training {f['stall_s']:.1f} s, and a restart "
            f"(relaunch, reading the checkpoint back, a node swap where one is needed) costs {f['restart_s'] / MINUTE:.0f} min on average. "
            "Which checkpoint interval gives the most goodput?"
            + (f" (Near the optimum goodput is flat: here the best option leads the next by {f['lead']:.1%} of the time, so compute it.)"
               if f["lead"] < 0.01 else ""),  # P10, review 38bda0b
            cadence_interval_options(gpus, storage), cadence_interval_answer(gpus, storage), cadence_interval_explanations(gpus, storage),
        ),
    }


VARIANTS = LabVariants(LAB, draw_settings, build_questions, version=2, older={1: (draw_settings_v1, build_questions_v1)})

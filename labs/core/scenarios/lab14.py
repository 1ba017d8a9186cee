"""Lab 14, debugging at scale: the stakeholder's job (Llama 3 70B on 4,096 H100s, Llama 3's
cluster), the faults drawn per student, the questions and the outcome `python -m labs.grade`
recomputes. Every record, timing and loss comes from labs.core.engine.debugging."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from labs.core.engine import debugging as dbg
from labs.core.engine.hardware import Cluster
from labs.core.engine.models import Model
from labs.core.engine.perf import Plan
from labs.core.engine.reliability import MINUTE, checkpoint_cost, checkpoint_size
from labs.core.engine.validation import check_choice, check_positive
from labs.core.scenarios.common import Option
from labs.core.variants import Choice, LabVariants, Numeric, judged

LAB = "14_debugging_at_scale"
STEP = "diagnosis"
# ---- the job: Llama 3 70B, TP 8 x PP 4 x DP 128 on 512 Grand Teton nodes (arXiv:2407.21783 Sec. 3.3) --
RUN_MODEL, CLUSTER, NODES = "llama3-70b", "meta-h100-roce", 512
PLAN = dict(tp=8, pp=4, dp=128, micro_batch=1, global_batch=1024)
ERA = "llama3-2024"
RECORD_ENTRIES = 8  # entries of a rank's dump the lab shows
TIMEOUT_SETTINGS_MIN = (1, 2, 3, 5, 7, 10, 15, 20, 30, 45, 60)  # the slider's settings of the collective timeout
RELAUNCH_MIN = 10  # a restart after the watchdog fires (Lab 10's setting of the cadence answer)
TIMEOUT_TOLERANCE_MIN = 0.25  # settings differ by a minute or more
AXIS_LABELS = {"tp": "TP group", "pp": "PP group", "dp": "DP group", "world": "the world group"}

# ---- per-student draws ------------------------------------------------------------------------------
VARIANT_STEPS = (4_200, 8_800, 12_345, 17_600, 23_456)  # steps the job had run before it stopped
VARIANT_SITES = tuple(i / 8 for i in range(8))  # where in the step the fault strikes (fault_site's draw)
VARIANT_SYNC_STORAGE_GBPS = (0.5, 1, 2, 5)  # the NFS share rank 0 writes its sync checkpoint to
VARIANT_CHECKPOINT_MIN = (30, 60)  # a sync checkpoint every this many minutes
SLOW_MAGNITUDES = {"throttled_gpu": (450.0, 500.0), "slow_nic": (0.25, 0.5), "unbalanced_stage": (2.0, 3.0),
                   "host_contention": (0.08, 0.12), "slow_storage": (0.02, 0.05)}
KIND_MISCONCEPTIONS = {
    "skipped_collective": "a mismatch is a broken wire",
    "size_mismatch": "a mismatch is a broken wire",
    "dead_nic": "a transport error is a program bug",
    "flapping_nic": "a transport error is a program bug",
    "gpu_fell_off_bus": "a missing dump is a slow rank",
    "order_deadlock": "every hang has one missing rank",
    "dataloader_stall": "a rank that is not in NCCL is not the cause",
}


@lru_cache(maxsize=8)
def run_job(step_index: int = VARIANT_STEPS[0]) -> dbg.Job:
    model = Model.get(RUN_MODEL)
    return dbg.job(model, Cluster.get(CLUSTER, nodes=NODES), Plan.for_era(ERA, **PLAN), step_index)


@lru_cache(maxsize=128)  # 7 kinds x 8 sites drawn: a class asks each many times
def fault_at(kind: str, site: float) -> int:
    return dbg.fault_site(run_job(), kind, site)  # a step's program is the same at every step index


@lru_cache(maxsize=64)
def hang_of(kind: str, rank: int, site: float, step_index: int) -> dbg.Hang:
    return dbg.hang(run_job(step_index), dbg.Fault(kind, rank, fault_at(kind, site)))


def variant_hang(settings: dict) -> dbg.Hang:
    return hang_of(settings["hang"], int(settings["rank"]), float(settings["site"]), int(settings["step"]))


def culprit(h: dbg.Hang) -> tuple[int, str, int]:
    """(rank, axis, group) the engine names: the faulty rank and the group it holds up."""
    axis = dbg.culprit_axis(h)
    return h.fault.rank, axis, int(h.job.group_ids[axis][h.fault.rank])


def group_label(j: dbg.Job, axis: str, group: int) -> str:
    return f"{AXIS_LABELS[axis]} {dbg.pg_name(j, axis, group)} ({dbg.PG_DESC[axis]})"


watchdog_rank = dbg.watchdog_rank  # the rank whose watchdog message the log prints (the notebook opens its dump first)


def culprit_options(h: dbg.Hang) -> tuple[Option, ...]:
    """The faulty rank in its group, and three wrong pairs that each stand for a misreading."""
    j = h.job
    rank, axis, group = culprit(h)
    waiter = watchdog_rank(h)
    other = "dp" if axis != "dp" else "tp"
    neighbour = int(next(r for r in j.members(axis, group) if r != rank and r != waiter))
    return (
        Option("culprit", f"rank {rank}, in {group_label(j, axis, group)}", "the rank that holds the group up"),
        Option("watchdog", f"rank {waiter}, in {group_label(j, axis, int(j.group_ids[axis][waiter]))}", "the rank that printed the timeout is the culprit"),
        Option("other_group", f"rank {rank}, in {group_label(j, other, int(j.group_ids[other][rank]))}", "any group of the rank will do"),
        Option("neighbour", f"rank {neighbour}, in {group_label(j, axis, group)}", "the group's lowest waiting member is the culprit"),
    )


def kind_options(kind: str, others: tuple[str, ...]) -> tuple[Option, ...]:
    return tuple(Option(k, dbg.HANG_FAULTS[k][0].upper() + dbg.HANG_FAULTS[k][1:], KIND_MISCONCEPTIONS[k]) for k in (kind, *others))


def kind_explanations(h: dbg.Hang, keys) -> dict[str, str]:
    rank, axis, group = culprit(h)
    evidence = {
        "skipped_collective": f"rank {rank}'s entry at that sequence id is the call its peers issue next: it skipped one",
        "size_mismatch": f"rank {rank}'s entry at that sequence id has other input_sizes than its peers'",
        "dead_nic": f"every member issued the call, none completed it, and rank {rank}'s host logs IBV_WC_RETRY_EXC_ERR",
        "flapping_nic": f"every member issued the call, none completed it, and rank {rank}'s host logs its link going down and up",
        "gpu_fell_off_bus": f"rank {rank} left no dump at all, and its host's kernel log has Xid 79",
        "order_deadlock": f"rank {rank} waits in the world all-reduce while its DP group waits for its reduce-scatter: a cycle",
        "dataloader_stall": f"rank {rank}'s last entry is completed and it has issued nothing since; py-spy shows it in the data loader",
    }
    return {k: ("the records say so: " if k == h.fault.kind else "no: ") + evidence[h.fault.kind] + "." for k in keys}


def healthy_wait_s(storage_gbps: float) -> float:
    """The longest healthy wait inside a collective: rank 0's sync checkpoint to the NFS share,
    while every other rank waits in the next collective (reliability.checkpoint_cost)."""
    j = run_job()
    p = j.plan
    size = checkpoint_size(j.model, p.tp, p.pp, p.dp, p.zero_stage)
    return checkpoint_cost(size, "sync", storage_gbps * 1e9, j.cluster).stall_s


@lru_cache(maxsize=64)  # 4 storages x 2 cadences drawn: a class asks these eight twice a student (read-only: shared)
def timeout_facts(storage_gbps: float, checkpoint_min: float) -> dict:
    wait = healthy_wait_s(storage_gbps)
    waits = 30 * 24 * 60 / checkpoint_min
    restart = RELAUNCH_MIN * MINUTE
    gpus = run_job().ranks
    loss = {t: dbg.timeout_loss(t * MINUTE, gpus, restart, wait, waits) for t in TIMEOUT_SETTINGS_MIN}
    best = min(loss, key=lambda t: loss[t]["gpu_hours"])
    return {"wait_s": wait, "waits": waits, "restart_s": restart, "loss": loss, "best_min": best}


# ---- variants --------------------------------------------------------------------------------------
def draw_settings(d) -> dict:
    kind = d.choice("hang", tuple(dbg.HANG_FAULTS))
    slow = d.choice("slow", tuple(dbg.SLOW_FAULTS))
    return {"hang": kind, "rank": d.choice("rank", range(run_job().ranks)), "site": d.choice("site", VARIANT_SITES),
            "step": d.choice("step", VARIANT_STEPS), "others": d.order("others", [k for k in dbg.HANG_FAULTS if k != kind])[:3],
            "storage_gbps": d.choice("storage_gbps", VARIANT_SYNC_STORAGE_GBPS), "checkpoint_min": d.choice("checkpoint_min", VARIANT_CHECKPOINT_MIN),
            "slow": slow, "slow_rank": d.choice("slow_rank", range(run_job().ranks)), "slow_magnitude": d.choice("slow_magnitude", SLOW_MAGNITUDES[slow])}


def build_questions(s: dict) -> dict:
    h = variant_hang(s)
    j = h.job
    facts = timeout_facts(float(s["storage_gbps"]), float(s["checkpoint_min"]))
    options = culprit_options(h)
    kinds = kind_options(s["hang"], tuple(s["others"]))
    return {
        "culprit": Choice(
            f"Your {j.ranks:,}-GPU job stopped at step {j.step_index + 1:,}. Every rank's flight recorder was dumped when the watchdog fired. "
            "Which rank holds the job up, and in which process group?",
            options, "culprit", {o.key: o.label for o in options}),
        "kind": Choice("What kind of fault is it?", kinds, s["hang"], kind_explanations(h, [o.key for o in kinds])),
        "timeout": Numeric(
            f"Rank 0 writes a sync checkpoint to an NFS share at {float(s['storage_gbps']):g} GB/s every {s['checkpoint_min']} minutes while the others wait "
            f"in the next collective; a restart takes {RELAUNCH_MIN} minutes. Of the collective timeouts "
            f"{', '.join(map(str, TIMEOUT_SETTINGS_MIN))} minutes, which loses the fewest GPU-hours a month? Type its minutes.",
            float(facts["best_min"]), TIMEOUT_TOLERANCE_MIN, "min",
            f"The checkpoint keeps the other ranks waiting {facts['wait_s'] / MINUTE:.1f} min inside a collective: any timeout at or below it kills the healthy "
            f"job {facts['waits']:.0f} times a month. Above it, each of the {dbg.hangs_per_month(j.ranks):.1f} hangs a month costs the timeout plus the restart, "
            f"so the shortest setting above the wait, **{facts['best_min']} min**, loses least ({facts['loss'][facts['best_min']]['gpu_hours']:,.0f} GPU-hours a month)."),
    }


VARIANTS = LabVariants(LAB, draw_settings, build_questions)


# ---- the outcome the grader recomputes --------------------------------------------------------------
INPUT_FIELDS = ("view_axis", "timeout_min", "outlier_group", "threshold_pct")
OUTLIER_GROUPS = ("tp", "pp", "dp", "world")


def check_inputs(inputs: dict) -> None:
    if not isinstance(inputs, dict):
        raise ValueError("inputs must be a mapping of the lab's instruments")
    check_choice("view_axis", inputs.get("view_axis"), dbg.PG_AXES)
    check_choice("outlier_group", inputs.get("outlier_group"), OUTLIER_GROUPS)
    check_choice("timeout_min", inputs.get("timeout_min"), TIMEOUT_SETTINGS_MIN)
    check_positive("threshold_pct", inputs.get("threshold_pct"), maximum=100)


def flagged(timings: dbg.Timings | dbg.RankStats, j: dbg.Job, group: str, threshold_pct: float) -> list[int]:
    """Ranks whose mean compute or DP time is more than threshold_pct above their group's median."""
    stats = dbg.rank_stats(timings) if isinstance(timings, dbg.Timings) else timings
    out = np.zeros(j.ranks, dtype=bool)
    for values in (stats.compute_mean_s, stats.dp_comm_mean_s, stats.checkpoint_max_s):
        if values.max() > 0:
            out |= dbg.group_outliers(values, j, group) > 1 + threshold_pct / 100
    return np.flatnonzero(out).tolist()


def slow_of(settings: dict) -> dbg.Timings:
    j = run_job(int(settings["step"]))
    return dbg.slow_timings(j, slow_fault(settings), seed=int(settings["slow_rank"]))


def slow_stats_of(settings: dict) -> dbg.RankStats:
    """rank_stats(slow_of(settings)), bit for bit, without its steps x ranks arrays: what the grader reads."""
    return dbg.slow_stats(run_job(int(settings["step"])), slow_fault(settings), seed=int(settings["slow_rank"]))


def slow_fault(settings: dict) -> dbg.Fault:
    return dbg.Fault(settings["slow"], int(settings["slow_rank"]), 0, float(settings["slow_magnitude"]))


def diagnosis_outcomes(inputs: dict, predictions: dict, variant=None) -> dict:
    check_inputs(inputs)
    if variant is None:
        raise ValueError("variant: Lab 14 is graded at the student's variant only")
    s = variant.settings
    h = variant_hang(s)
    rank, axis, group = culprit(h)
    facts = timeout_facts(float(s["storage_gbps"]), float(s["checkpoint_min"]))
    t = slow_stats_of(s)
    never = lambda a: False  # noqa: E731
    return {
        "culprit_rank": rank, "culprit_group": dbg.pg_name(h.job, axis, group), "fault": s["hang"],
        "stalled_ranks": int((h.completed(inputs["view_axis"]) < h.completed(inputs["view_axis"]).max()).sum()),
        "timeout_gpu_hours": facts["loss"][int(inputs["timeout_min"])]["gpu_hours"], "best_timeout_min": facts["best_min"],
        "slowdown": t.slowdown, "flagged": len(flagged(t, h.job, inputs["outlier_group"], float(inputs["threshold_pct"]))),
        "culprit_correct": judged(variant, "culprit", predictions, never),
        "kind_correct": judged(variant, "kind", predictions, never),
        "timeout_correct": judged(variant, "timeout", predictions, never),
    }


OUTCOMES = {(LAB, STEP): diagnosis_outcomes}


def legacy_options(question: str) -> tuple[Option, ...]:
    """The kind question's options in written order (the class dashboard's view); the culprit's
    options are numbers drawn per student, shown by their internal ids."""
    if question == "kind":
        return tuple(Option("ABCDEFGH"[i], v[0].upper() + v[1:], KIND_MISCONCEPTIONS[k]) for i, (k, v) in enumerate(dbg.HANG_FAULTS.items()))
    return tuple(Option("ABCD"[i], label, "") for i, label in enumerate(("the faulty rank", "the rank that printed the timeout", "the rank in another group", "a waiting peer")))


def legacy_questions() -> dict:
    """The questions at the unsalted variant of the id "student", options in written order: how the
    grade book names a question no variant record came with (Lab 14 has variants from the start)."""
    from labs.core.variants import Draw, Numeric as _Numeric, Question, seed_of

    specs = build_questions(VARIANTS.recipe(None)[0](Draw(seed_of(LAB, "student", ""))))
    return {q: Question(q, spec, () if isinstance(spec, _Numeric) else tuple(o.key for o in spec.options)) for q, spec in specs.items()}

"""Debugging a job of thousands of GPUs: what every rank's NCCL flight recorder holds when the
job hangs, per-rank step timings when it slows, and the log lines around both.

The collectives. A rank issues one step's collectives in a fixed order, the program, built from
the plan's communication map (labs.core.engine.perf's `Estimate.collectives`: how many calls of
each kind a step makes and the bytes each sends): per micro-batch its forward (a pipeline
send/recv, then four TP collectives a layer under sequence parallelism: all-gather and
reduce-scatter around attention and around the MLP), its backward (the same, reversed), its
gradient buckets' reduce-scatters (ZeRO-2 syncs every micro-batch); after the last micro-batch a
world all-reduce of the loss for logging and the ZeRO all-gathers. The order is simplified
(each micro-batch's forward, then its backward, not 1F1B's interleaving); the counts and sizes
are the engine's. Process groups are Megatron's (`parallel_state.py`): the default group (world),
TENSOR_MODEL_PARALLEL_GROUP, PIPELINE_MODEL_PARALLEL_GROUP, DATA_PARALLEL_GROUP, built from the
plan's rank order (labs.core.engine.layout).

A collective completes when every member of its group has issued it (a pipeline send/recv when
both neighbouring stages have). With one fault injected, `hang()` finds where every rank stops:
each rank gets past its call j only when every partner has issued its own call of that sequence
number in that group; starting from "everyone finished" and pulling ranks back until nothing
moves (the greatest fixed point; the one cycle of waits a fault here makes, the deadlock, is
cut where it closes: the rank that issued out of order waits there). Each process group numbers its collectives
(`collective_seq_id`, point-to-point ops `p2p_seq_id`), and NCCL matches the members' calls by
that number, so a rank that skips one is matched against its peers' next.

The records. `flight_record()` writes what PyTorch's flight recorder dumps per rank (PyTorch
docs, "Flight Recorder for Debugging Stuck Jobs"; torch/distributed/flight_recorder): version,
pg_config, pg_status, and the last entries with record_id, pg_id, process_group (name, desc),
collective_seq_id, p2p_seq_id, op_id, profiling_name ("nccl:all_gather"...), input_sizes,
input_dtypes, output_sizes, output_dtypes, state ("scheduled", "started", "completed": with
TORCH_NCCL_ENABLE_TIMING=1), timeout_ms, is_p2p, retired.

The timings (`slow_timings()`): each rank's compute (its own kernels), exposed DP communication
and checkpoint write per step from `estimate()` and labs.core.engine.reliability, with seeded
noise; a fault slows one rank, one ring or one node by the engine's own formula for it. The
job's step is paced by its slowest member (Llama 3, arXiv:2407.21783 Sec. 3.3.4: stragglers
and NCCLX's tools to find them).

The timeout (`timeout_loss()`): a hang costs the watchdog's timeout (TORCH_NCCL's default 10
minutes, `ProcessGroupNCCL`'s `timeout`) plus the restart; a timeout shorter than the longest
healthy wait inside a collective kills a healthy job. Hang rates from Llama 3's Table 5
(labs.core.engine.reliability).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

import numpy as np

from labs.core.engine.hardware import Cluster
from labs.core.engine.layout import RANK_ORDERS, rank_coordinates
from labs.core.engine.models import Model
from labs.core.engine.perf import Estimate, Plan, estimate
from labs.core.engine.reliability import (
    LLAMA3_STORAGE_SUSTAINED,
    checkpoint_cost,
    checkpoint_size,
    job_failure_rates,
)
from labs.core.engine.topology import group_cost
from labs.core.engine.validation import check_choice, check_positive

# ---- process groups (Megatron-LM parallel_state.py group_desc; PyTorch's default group) ---------
PG_AXES = ("world", "tp", "pp", "dp")  # a rank's local pg_id is the index: the order Megatron creates them
PG_DESC = {"world": "default_pg", "tp": "TENSOR_MODEL_PARALLEL_GROUP", "pp": "PIPELINE_MODEL_PARALLEL_GROUP", "dp": "DATA_PARALLEL_GROUP"}
DTYPE = "BFloat16"  # activations and gradients on the wire
BYTES = 2
LOSS_DTYPE, LOSS_BYTES = "Float", 4  # the loss, one fp32 number

# ---- PyTorch's and NCCL's settings (defaults as documented; sources in the module docstring) ----
DEFAULT_TIMEOUT_S = 600.0  # ProcessGroupNCCL's default collective timeout, 10 minutes
HEARTBEAT_TIMEOUT_S = 480.0  # TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC's default
TRACE_BUFFER = 2000  # a TORCH_NCCL_TRACE_BUFFER_SIZE often set; the dump keeps the last this many
FR_VERSION = "2.4"
RUN_AHEAD = 1  # collectives a blocked rank's CPU has already enqueued behind the one it waits in ("scheduled")

# ---- faults --------------------------------------------------------------------------------------
HANG_FAULTS = {
    "skipped_collective": "a rank skipped one collective (a data-dependent branch)",
    "size_mismatch": "a rank issued a collective of another size",
    "dead_nic": "a dead NIC",
    "flapping_nic": "a flapping NIC (link up, down, up)",
    "gpu_fell_off_bus": "a GPU fell off the bus (Xid 79)",
    "order_deadlock": "two groups' collectives issued in different orders",
    "dataloader_stall": "a rank stuck in its data loader",
}
SLOW_FAULTS = {
    "throttled_gpu": "a thermally throttled GPU",
    "slow_nic": "a slow NIC pacing a ring",
    "unbalanced_stage": "an unbalanced pipeline stage",
    "host_contention": "host contention on one node",
    "slow_storage": "a slow storage node at checkpoint time",
}
# Table 5 causes that leave the job waiting in a collective (the watchdog must notice), rather
# than ending a process (the launcher notices at once): this lab's reading, not the paper's.
HANG_CAUSES = ("network_switch_cable", "nic", "nccl_watchdog", "software_bug")
NOISE = 0.01  # run-to-run jitter of a rank's kernel and collective times (lognormal sigma), an assumption
HOST_NOISE = 5  # host contention's jitter, in NOISE units
JITTER_SEED = 14  # the one stream slow_timings' jitter is drawn from
MONTH_S = 30 * 86400.0


@dataclass(frozen=True)
class Call:
    """One collective of a rank's program."""

    axis: str  # a key of PG_AXES
    op: str  # NCCL's name: all_gather, reduce_scatter, all_reduce, send/recv
    nbytes: float  # the message a rank contributes (the input tensor)

    @property
    def p2p(self) -> bool:
        return self.axis == "pp"


@dataclass(frozen=True)
class Job:
    """A plan on a cluster, its ranks laid out by the plan's rank order, and its estimate."""

    model: Model
    cluster: Cluster
    plan: Plan
    est: Estimate
    step_index: int  # steps the job completed before the one that hangs

    @cached_property
    def coords(self) -> np.ndarray:
        p = self.plan
        return rank_coordinates(p.rank_order, p.tp, p.cp, p.dp, p.pp)

    @property
    def ranks(self) -> int:
        return self.plan.gpus

    @cached_property
    def group_ids(self) -> dict[str, np.ndarray]:
        """Per axis, each rank's group index (0.. groups-1); "world" has one."""
        tp, cp, dp, pp = self.coords.T
        p = self.plan
        return {"world": np.zeros(self.ranks, dtype=int), "tp": (pp * p.dp + dp) * p.cp + cp,
                "pp": (dp * p.cp + cp) * p.tp + tp, "dp": pp * p.tp + tp}

    def members(self, axis: str, group: int) -> np.ndarray:
        check_choice("axis", axis, PG_AXES)
        return np.flatnonzero(self.group_ids[axis] == group)

    def node(self, rank: int) -> int:
        return rank // self.cluster.gpus_per_node

    @cached_property
    def crosses_nodes(self) -> dict[str, bool]:
        gpn = self.cluster.gpus_per_node
        return {a: len(set(self.members(a, 0) // gpn)) > 1 for a in PG_AXES}

    @cached_property
    def program(self) -> tuple[Call, ...]:
        """One step's collectives in the order a rank issues them (module docstring)."""
        p, uses = self.plan, {u.key: u for u in self.est.collectives}
        m = p.microbatches
        out: list[Call] = []

        def message(key, n):  # a call's input bytes from the bytes it sends (ring: (n-1)/n of it)
            u = uses[key]
            per_call = u.sent_bytes / u.calls
            return per_call if key == "pp" else per_call * n / max(n - 1, 1)

        tp_calls = int(round(uses["tp"].calls / m / 2)) if "tp" in uses else 0  # per pass
        tp_bytes = message("tp", p.tp) if "tp" in uses else 0.0
        pass_ops = [Call("tp", "all_gather" if i % 2 == 0 else "reduce_scatter", tp_bytes) for i in range(tp_calls)]
        pp = [Call("pp", "send/recv", message("pp", 2))] if "pp" in uses else []
        buckets = int(round(uses["dp_reduce"].calls / m)) if "dp_reduce" in uses else 0
        rs = [Call("dp", "reduce_scatter" if p.zero_stage else "all_reduce", message("dp_reduce", p.dp * p.cp))] * buckets
        for _ in range(m):
            out += pp + pass_ops + pp + pass_ops[::-1] + rs
        out.append(Call("world", "all_reduce", LOSS_BYTES))
        if "dp_gather" in uses:
            out += [Call("dp", "all_gather", message("dp_gather", p.dp * p.cp))] * int(round(uses["dp_gather"].calls))
        return tuple(out)


def job(model: Model, cluster: Cluster, plan: Plan, step_index: int = 1000) -> Job:
    """The job a lab debugs: the plan on the cluster (which must fit the GPUs exactly)."""
    if not isinstance(model, Model) or not isinstance(cluster, Cluster) or not isinstance(plan, Plan):
        raise ValueError("job needs a Model, a Cluster and a Plan from labs.core.engine")
    check_positive("step_index", step_index, integer=True, maximum=1 << 30)
    if plan.gpus != cluster.gpus:
        raise ValueError(f"plan.gpus must equal cluster.gpus = {cluster.gpus}, got {plan.gpus}")
    if plan.rank_order not in RANK_ORDERS:
        raise ValueError(f"plan.rank_order must be one of {RANK_ORDERS}")
    return Job(model, cluster, plan, estimate(model, cluster, plan), step_index)


# ---- the program, as arrays ----------------------------------------------------------------------
@dataclass(frozen=True)
class _Prog:
    calls: tuple[Call, ...]
    axis: np.ndarray  # code of each call's axis (PG_AXES index)
    seq: np.ndarray  # the call's number in its group (0-based, this window)
    cum: np.ndarray  # (4, L + 1): calls of each axis before index i
    index: np.ndarray  # (4, S): per axis the program index of seq s; past its last call, L

    @classmethod
    def of(cls, calls, axis: np.ndarray | None = None) -> "_Prog":
        """The program's arrays (`axis`: its calls' axis codes, when the caller has them)."""
        if axis is None:
            code = {a: i for i, a in enumerate(PG_AXES)}
            axis = np.array([code[c.axis] for c in calls], dtype=int)
        cum = np.zeros((len(PG_AXES), len(calls) + 1), dtype=np.int64)
        np.cumsum(axis == np.arange(len(PG_AXES))[:, None], axis=1, out=cum[:, 1:])
        seq = cum[axis, np.arange(len(calls))]
        index = np.full((len(PG_AXES), int(cum[:, -1].max()) + 1), len(calls), dtype=np.int64)
        for a in range(len(PG_AXES)):
            index[a, : cum[a, -1]] = np.flatnonzero(axis == a)
        return cls(tuple(calls), axis, seq, cum, index)

    def __len__(self):
        return len(self.calls)


@dataclass(frozen=True)
class Fault:
    """An injected fault: its kind (HANG_FAULTS or SLOW_FAULTS), the rank, where in the step
    (the index of the program's call it strikes, hangs only) and its size (slowness only)."""

    kind: str
    rank: int
    at: int = 0
    magnitude: float = 0.0


def _check_fault(j: Job, fault: Fault, kinds) -> None:
    if not isinstance(fault, Fault):
        raise ValueError(f"fault must be a Fault, got {fault!r}")
    check_choice("fault.kind", fault.kind, tuple(kinds))
    check_positive("fault.rank", fault.rank, integer=True, allow_zero=True, maximum=j.ranks - 1)
    check_positive("fault.at", fault.at, integer=True, allow_zero=True, maximum=len(j.program) - 1)


def fault_site(j: Job, kind: str, draw: float) -> int:
    """Where in the step a hang fault of `kind` strikes, from a number in [0, 1): a call the
    fault can strike (a TP all-gather for a skip, a bucket's reduce-scatter for a size mismatch,
    the last micro-batch's first bucket for the deadlock, a cross-node call for a NIC, the step's
    start for the data loader, any call for an Xid)."""
    check_choice("kind", kind, tuple(HANG_FAULTS))
    prog = j.program
    if kind == "dataloader_stall":
        return 0
    if kind == "order_deadlock":
        world = next(i for i, c in enumerate(prog) if c.axis == "world")
        return max(i for i in range(world) if prog[i].axis != "dp") + 1  # the last micro-batch's first bucket
    want = {"skipped_collective": lambda c: c.op == "all_gather" and c.axis == "tp",
            "size_mismatch": lambda c: c.axis == "dp" and c.op != "all_gather",
            "dead_nic": lambda c: j.crosses_nodes[c.axis], "flapping_nic": lambda c: j.crosses_nodes[c.axis]}.get(kind, lambda c: True)
    sites = [i for i, c in enumerate(prog) if want(c)]
    return sites[min(int(draw * len(sites)), len(sites) - 1)]


# ---- the hang ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hang:
    """Where every rank stopped. The window is two steps: the last one completed and the one that
    hangs (`fault.at` indexes the second)."""

    job: Job
    fault: Fault
    pos: np.ndarray  # per rank: index of the call it waits in (calls before it completed)
    issued: np.ndarray  # per rank: whether it issued that call
    window: _Prog
    faulty: _Prog  # the faulty rank's own program
    mismatch: tuple | None  # (axis, seq) its group can never complete

    def prog(self, rank: int) -> _Prog:
        return self.faulty if rank == self.fault.rank else self.window

    def base(self, axis: str) -> int:
        """Collectives of `axis` a rank's group ran before this window (sequence numbers from 1)."""
        a = PG_AXES.index(axis)
        per_step = int(self.window.cum[a, -1]) // 2
        return (self.job.step_index - 1) * per_step

    def completed(self, axis: str) -> np.ndarray:
        """Per rank: how many calls of `axis` it completed in the window."""
        a = PG_AXES.index(axis)
        out = self.window.cum[a, np.minimum(self.pos, len(self.window))]
        f = self.fault.rank
        out[f] = self.faulty.cum[a, min(self.pos[f], len(self.faulty))]
        return out

    def last_completed_seq(self, axis: str) -> np.ndarray:
        """Per rank: the sequence id of the last call of `axis` it completed (collective_seq_id; for
        the pipeline group, p2p_seq_id), as its flight recorder's pg_status says."""
        return self.base(axis) + self.completed(axis)

    def reached(self, axis: str) -> np.ndarray:
        """Per rank: calls of `axis` issued (the completed ones and the one it waits in)."""
        a, length, done = PG_AXES.index(axis), len(self.window), self.completed(axis)
        out = done + ((self.pos < length) & (self.window.axis[np.minimum(self.pos, length - 1)] == a) & self.issued)
        f, p = self.fault.rank, self.faulty
        out[f] = done[f] + int(self.pos[f] < len(p) and p.axis[min(self.pos[f], len(p) - 1)] == a and self.issued[f])
        return out

    def waiting(self, rank: int) -> Call | None:
        p = self.prog(rank)
        return p.calls[self.pos[rank]] if self.pos[rank] < len(p) and self.issued[rank] else None

    def not_arrived(self, axis: str) -> list[dict]:
        """Per group of `axis` with members waiting in a call that did not complete: its sequence id
        (the lowest not completed), who issued it and who has not ("who has not arrived"). A group
        whose members all arrived and still wait points at the wire, not at a rank."""
        check_choice("axis", axis, PG_AXES)
        a = PG_AXES.index(axis)
        members = _layout(self.job).members[a]  # groups x size, each group's in rank order
        size = members.shape[1]
        low = self.completed(axis)[members].min(axis=1)  # each group's lowest call completed
        lagging = self.reached(axis)[members] < low[:, None] + 1
        lacking = lagging.sum(axis=1)
        rows = np.flatnonzero((low < self.window.cum[a, -1]) & (lacking < size))  # not finished, and someone waits in it
        missing = members[rows][lagging[rows]].tolist()  # group by group, each group's in rank order
        ends = np.cumsum(lacking[rows])
        return [{"group": g, "seq": s, "members": size, "arrived": k, "missing": missing[start:end]}
                for g, s, k, start, end in zip(rows.tolist(), (low[rows] + (self.base(axis) + 1)).tolist(), (size - lacking[rows]).tolist(),
                                               (ends - lacking[rows]).tolist(), ends.tolist())]


def _members(gid: np.ndarray) -> np.ndarray:
    """Each group's members (indices into `gid`), groups x size in ascending order: every group of
    an axis has the same size."""
    return np.argsort(gid, kind="stable").reshape(int(gid.max()) + 1, -1)


@dataclass(frozen=True, eq=False)
class _Layout:
    """What every hang of a job shares, built once per model, cluster and plan (a class's Lab 14
    builds ~900 hangs on five jobs that differ only in their step): two steps of the program; per
    axis its groups' members; each rank's TP index and DP x CP index (`d`); and, as hangs ask for
    them, the faulty rank's program per (fault kind, call) and where the ranks of each kind stop
    per (fault kind, call, the faulty rank's stage)."""

    window: _Prog
    members: tuple[np.ndarray, ...]  # by PG_AXES index
    t: np.ndarray
    d: np.ndarray
    faults: dict = field(default_factory=dict)
    stops: dict = field(default_factory=dict)

    @classmethod
    def of(cls, j: Job) -> "_Layout":
        step = list(j.program)
        p = j.plan
        return cls(_Prog.of(step + step), tuple(_members(j.group_ids[a]) for a in PG_AXES), j.coords[:, 0], j.group_ids["tp"] % (p.dp * p.cp))


_LAYOUTS: dict[tuple, _Layout] = {}  # by (model, cluster, plan): a job's estimate and program follow from them


_LAYOUT_OF_JOB: dict[int, tuple[Job, _Layout]] = {}  # by the job object: hashing its model, cluster and plan costs more than a hang's lookup


def _layout(j: Job) -> _Layout:
    known = _LAYOUT_OF_JOB.get(id(j))
    if known is not None and known[0] is j:
        return known[1]
    key = (j.model, j.cluster, j.plan)
    if key not in _LAYOUTS:
        if len(_LAYOUTS) >= 8:
            _LAYOUTS.clear()
        _LAYOUTS[key] = _Layout.of(j)
    if len(_LAYOUT_OF_JOB) >= 16:
        _LAYOUT_OF_JOB.clear()
    _LAYOUT_OF_JOB[id(j)] = (j, _LAYOUTS[key])
    return _LAYOUTS[key]


@lru_cache(maxsize=16)
def _kinds(tps: int, ds: int, stages: int) -> tuple[np.ndarray, np.ndarray]:
    """The ranks hang() iterates on, a tps x ds x stages grid of (TP index, d, stage): per axis
    (PG_AXES order) each one's group, and whom it waits for in a call of that axis: its group (a
    send/recv: itself and its neighbouring stages). A TP group is one (d, stage), a PP group one
    (TP index, d), a DP group one (TP index, stage)."""
    t, d, s = np.indices((tps, ds, stages)).reshape(3, -1)
    gids = np.stack([{"world": 0 * s, "tp": d * stages + s, "pp": t * ds + d, "dp": t * stages + s}[a] for a in PG_AXES])
    peers = gids[:, :, None] == gids[:, None, :]
    peers[PG_AXES.index("pp")] &= abs(s[:, None] - s[None, :]) <= 1
    return gids, peers


def _faulty(j: Job, window: _Prog, kind: str, at: int) -> tuple[_Prog, int, bool, tuple | None]:
    """The faulty rank's program (the window's, edited where the fault edits it), the call it cannot
    get past (`cap`), whether it issued that one, and the (axis, seq) its group can never complete."""
    calls = list(window.calls)
    faulty, mismatch, cap, cap_issued = window, None, len(calls), True
    if kind == "skipped_collective":
        skipped = calls.pop(at)
        faulty = _Prog.of(calls, np.delete(window.axis, at))
        mismatch = (skipped.axis, int(window.seq[at]))
    elif kind == "size_mismatch":
        c = calls[at]
        calls[at] = replace(c, nbytes=c.nbytes + BYTES * j.model.hidden)  # one norm weight more in its bucket
        faulty = replace(window, calls=tuple(calls))  # the same axes
        mismatch = (c.axis, int(window.seq[at]))
    elif kind == "order_deadlock":
        world = next(i for i in range(at, len(calls)) if calls[i].axis == "world")
        calls.insert(at, calls.pop(world))  # the loss all-reduce issued before the bucket's reduce-scatter
        faulty = _Prog.of(calls, np.insert(np.delete(window.axis, world), at, window.axis[world]))
        cap = at  # it waits there for the whole world, whose members in its DP group wait for its bucket: a cycle
    elif kind in ("dead_nic", "flapping_nic"):
        cap = next(i for i in range(at, len(calls)) if j.crosses_nodes[calls[i].axis])
    elif kind == "gpu_fell_off_bus":
        cap = at
    elif kind == "dataloader_stall":
        cap, cap_issued = at, False
    return faulty, cap, cap_issued, mismatch


def _stops(window: _Prog, faulty: _Prog, cap: int, mismatch: tuple | None, gids: np.ndarray, peers: np.ndarray, f: int) -> np.ndarray:
    """Where each rank of `gids` stops, `f` the faulty one: from the end down (the greatest fixed
    point), each round every rank's calls issued per axis (`reached`: the calls before the one it
    waits in, and that one), the least of those it waits for, and the first call of each rank's
    program past that, until nothing moves."""
    length, codes = len(window), np.arange(len(PG_AXES))[:, None]
    if mismatch is not None:
        a0, s0 = PG_AXES.index(mismatch[0]), mismatch[1]
        same = gids[a0] == gids[a0][f]
    pos = np.full(gids.shape[1], length, dtype=np.int64)
    while True:
        pf = int(pos[f])
        reached = window.cum[:, np.minimum(pos + 1, length)]
        reached[:, f] = faulty.cum[:, min(pf + (pf < cap), len(faulty))]  # a call it cannot finish counts as not issued for its peers
        gmin = np.where(peers, reached[:, None, :], np.iinfo(np.int64).max).min(axis=2)
        if mismatch is not None:
            gmin[a0, same] = np.minimum(gmin[a0, same], s0)
        new = window.index[codes, np.minimum(gmin, window.index.shape[1] - 1)].min(axis=0)
        new[f] = min(int(faulty.index[codes[:, 0], np.minimum(gmin[:, f], faulty.index.shape[1] - 1)].min()), cap)
        new = np.minimum(new, pos)
        if np.array_equal(new, pos):
            return pos
        pos = new


def hang(j: Job, fault: Fault) -> Hang:
    """Every rank's position when the job stops, with `fault` injected (module docstring)."""
    _check_fault(j, fault, HANG_FAULTS)
    lay = _layout(j)
    at, f = len(lay.window) // 2 + fault.at, fault.rank
    if (fault.kind, at) not in lay.faults:
        if len(lay.faults) >= 512:
            lay.faults.clear()
        lay.faults[fault.kind, at] = _faulty(j, lay.window, fault.kind, at)
    faulty, cap, cap_issued, mismatch = lay.faults[fault.kind, at]
    # Ranks differ only in how they sit with the faulty one: a group is the ranks that share some
    # coordinates, so ranks at one stage that share (or do not share) its TP index, and its DP x CP
    # index (d), stop at the same call. The fixed point runs on one rank of each kind (at most four a
    # stage: its TP index and d first, then one other of each where there is one) and is read back.
    stage, tps, ds = j.coords[:, 3], min(j.plan.tp, 2), min(j.plan.dp * j.plan.cp, 2)
    key = (fault.kind, at, int(stage[f]))
    if key not in lay.stops:
        if len(lay.stops) >= 4096:
            lay.stops.clear()
        lay.stops[key] = _stops(lay.window, faulty, cap, mismatch, *_kinds(tps, ds, j.plan.pp), int(stage[f]))
    pos = lay.stops[key][((lay.t != lay.t[f]) * ds + (lay.d != lay.d[f])) * j.plan.pp + stage]
    issued = np.ones(j.ranks, dtype=bool)
    issued[f] = cap_issued or pos[f] < cap
    return Hang(j, fault, pos, issued, lay.window, faulty, mismatch)


# ---- what the tools print ------------------------------------------------------------------------
def _entry(h: Hang, rank: int, index: int, record_id: int, state: str) -> dict:
    """One flight-recorder entry, with the fields PyTorch writes."""
    j, p = h.job, h.prog(rank)
    c = p.calls[index]
    a = PG_AXES.index(c.axis)
    group = int(j.group_ids[c.axis][rank])
    seq = h.base(c.axis) + int(p.seq[index]) + 1
    colls = int(p.cum[a, index])  # a group of only point-to-point calls keeps collective_seq_id at 0
    size = c.nbytes / (LOSS_BYTES if c.axis == "world" else BYTES)
    n = len(j.members(c.axis, group)) if c.axis != "pp" else 2
    out_size = {"all_gather": size * n, "reduce_scatter": size / n}.get(c.op, size)
    return {
        "record_id": record_id, "pg_id": a, "process_group": (pg_name(j, c.axis, group), PG_DESC[c.axis]),
        "collective_seq_id": 0 if c.p2p else seq, "p2p_seq_id": seq if c.p2p else 0, "op_id": seq,
        "profiling_name": f"nccl:{'send' if c.p2p else c.op}", "input_sizes": [[int(size)]], "input_dtypes": [LOSS_DTYPE if c.axis == "world" else DTYPE],
        "output_sizes": [[int(out_size)]], "output_dtypes": [LOSS_DTYPE if c.axis == "world" else DTYPE], "state": state,
        "timeout_ms": int(DEFAULT_TIMEOUT_S * 1000), "is_p2p": c.p2p, "retired": state == "completed", "frames": [],
        **({"collective_seq_id": colls} if c.p2p else {}),
    }


def pg_name(j: Job, axis: str, group: int) -> str:
    """The process group's name, as PyTorch numbers them in creation order: the default group "0",
    then every TP group, every PP group, every DP group."""
    offset = 1
    for a in PG_AXES[1:]:
        if a == axis:
            break
        offset += int(j.group_ids[a].max()) + 1
    return "0" if axis == "world" else str(offset + group)


def flight_record(h: Hang, rank: int, entries: int = 8) -> dict | None:
    """What rank `rank`'s flight recorder dumps (its last `entries` entries), None for a rank that
    cannot dump (a GPU that fell off the bus takes its process down with it)."""
    check_positive("rank", rank, integer=True, allow_zero=True, maximum=h.job.ranks - 1)
    check_positive("entries", entries, integer=True, maximum=TRACE_BUFFER)
    if h.fault.kind == "gpu_fell_off_bus" and rank == h.fault.rank:
        return None
    p, pos = h.prog(rank), int(h.pos[rank])
    waiting = h.issued[rank] and pos < len(p)
    last = min(len(p), pos + (1 + RUN_AHEAD if waiting else 0))
    first = max(0, last - entries)
    rows = []
    for i in range(first, last):
        state = "completed" if i < pos else ("started" if i == pos else "scheduled")
        rows.append(_entry(h, rank, i, i, state))
    status = {}
    for a, axis in enumerate(PG_AXES):
        done = h.base(axis) + int(p.cum[a, min(pos, len(p))])
        enq = h.base(axis) + int(p.cum[a, last])
        status[str(a)] = {"last_enqueued_collective": enq, "last_started_collective": h.base(axis) + int(p.cum[a, min(pos + int(waiting), len(p))]),
                          "last_completed_collective": done}
    config = {str(a): {"name": pg_name(h.job, axis, int(h.job.group_ids[axis][rank])), "desc": PG_DESC[axis],
                       "ranks": str([int(r) for r in h.job.members(axis, int(h.job.group_ids[axis][rank]))])} for a, axis in enumerate(PG_AXES)}
    return {"version": FR_VERSION, "rank": rank, "pg_config": config, "pg_status": status, "entries": rows}


def host_of(j: Job, rank: int) -> str:
    return f"node-{j.node(rank):04d}"


def culprit_axis(h: Hang) -> str:
    """The process group in which the faulty rank holds the others up: the one whose call it
    issued wrong (a skip, a size), the one its peers wait in for it (the deadlock: its DP group),
    else the one of the call it is stuck in or has not issued."""
    if h.mismatch is not None:
        return h.mismatch[0]
    if h.fault.kind == "order_deadlock":
        return "dp"
    p, pos = h.faulty, int(h.pos[h.fault.rank])
    return PG_AXES[int(p.axis[min(pos, len(p) - 1)])]


def watchdog_rank(h: Hang) -> int:
    """The waiting peer whose watchdog log_lines() prints: the first member of the culprit's group,
    other than the faulty rank, that waits in a call."""
    axis, f = culprit_axis(h), h.fault.rank
    return int(next(r for r in h.job.members(axis, int(h.job.group_ids[axis][f])) if r != f and h.waiting(r) is not None))


def log_lines(h: Hang) -> list[str]:
    """NCCL_DEBUG=INFO lines from the faulty rank's start-up (its communicators, rings and
    transports), the fault's own lines, the watchdog's timeout message on a waiting rank and the
    line NCCL's RAS subsystem prints for the stuck communicator."""
    j, f = h.job, h.fault.rank
    host, local = host_of(j, f), f % j.cluster.gpus_per_node
    pre = f"{host}:{4000 + local}:{4000 + local} [{local}] NCCL INFO"
    tp = [int(r) for r in j.members("tp", int(j.group_ids["tp"][f]))]
    dp = j.members("dp", int(j.group_ids["dp"][f]))
    nxt = int(dp[(list(dp).index(f) + 1) % len(dp)])
    lines = [
        f"{pre} comm 0x{1000 + int(j.group_ids['tp'][f]):x} rank {tp.index(f)} nRanks {len(tp)} nNodes 1 localRanks {len(tp)} localRank {tp.index(f)} MNNVL 0",
        f"{pre} Channel 00/{j.cluster.rails:02d} : " + " ".join(str(tp.index(r)) for r in tp),
        f"{pre} Channel 00/0 : {tp.index(f)}[{local}] -> {(tp.index(f) + 1) % len(tp)}[{(local + 1) % j.cluster.gpus_per_node}] via P2P/CUMEM",
        f"{pre} comm 0x{2000 + int(j.group_ids['dp'][f]):x} rank {list(dp).index(f)} nRanks {len(dp)} nNodes {len(set(dp // j.cluster.gpus_per_node))} localRanks 1 localRank 0 MNNVL 0",
        f"{pre} Channel 00/0 : {list(dp).index(f)}[{local}] -> {(list(dp).index(f) + 1) % len(dp)}[{nxt % j.cluster.gpus_per_node}] [send] via NET/IB/{local}/GDRDMA",
        f"{pre} Connected all rings",
    ]
    kind = h.fault.kind
    if kind == "dead_nic":
        lines.append(f"{host}:{4000 + local}:{4100 + local} [{local}] transport/net_ib.cc NCCL WARN NET/IB : Got completion from peer {host_of(j, nxt)} "
                     f"with status=IBV_WC_RETRY_EXC_ERR(12) opcode=0 len=0 vendor err 129 (Send) hca mlx5_{local}")
    elif kind == "flapping_nic":
        lines += [f"{host} kernel: mlx5_core 0000:{local:02x}:00.0 mlx5_{local}: Link down", f"{host} kernel: mlx5_core 0000:{local:02x}:00.0 mlx5_{local}: Link up",
                  f"{host} kernel: mlx5_core 0000:{local:02x}:00.0 mlx5_{local}: Link down",
                  f"{host}:{4000 + local}:{4100 + local} [{local}] transport/net_ib.cc NCCL WARN NET/IB : Got async event : port error"]
    elif kind == "gpu_fell_off_bus":
        lines.append(f"{host} kernel: NVRM: Xid (PCI:0000:{local:02x}:00): 79, pid={4000 + local}, GPU has fallen off the bus.")
    elif kind == "dataloader_stall":
        lines.append(f"py-spy dump --pid {4000 + local} ({host}): Thread MainThread: __next__ (torch/utils/data/dataloader.py) <- train_step")
    waiter = watchdog_rank(h)
    c = h.waiting(waiter)
    seq = h.base(c.axis) + int(h.window.seq[h.pos[waiter]]) + 1
    numel = int(c.nbytes / (LOSS_BYTES if c.axis == "world" else BYTES))
    lines.append(f"[rank{waiter}]:[E ProcessGroupNCCL.cpp] [PG ID {PG_AXES.index(c.axis)} PG GUID {pg_name(j, c.axis, int(j.group_ids[c.axis][waiter]))}"
                 f"({PG_DESC[c.axis]}) Rank {waiter}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
                 f"OpType={c.op.upper().replace('/', '')}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)={int(DEFAULT_TIMEOUT_S * 1000)}) "
                 f"ran for {int(DEFAULT_TIMEOUT_S * 1000) + 17} milliseconds before timing out.")
    rows = h.not_arrived(c.axis)
    mine = next((r for r in rows if r["group"] == int(j.group_ids[c.axis][waiter])), None)
    if mine is not None:
        status = "MISMATCH" if h.mismatch is not None and h.mismatch[0] == c.axis else "INCOMPLETE"
        lines.append(f"RAS: communicator {pg_name(j, c.axis, mine['group'])} ({PG_DESC[c.axis]}) {status}: {mine['arrived']} of {mine['members']} ranks "
                     f"have launched up to operation {mine['seq']}" + (f"; ranks {', '.join(map(str, mine['missing'][:8]))} have not" if mine["missing"] else "; all ranks launched it, none completed"))
    return lines


# ---- slowness: per-rank step timings ---------------------------------------------------------------
class _Slowed:
    """The job's mean step time over the healthy job's (Timings and RankStats)."""

    @property
    def slowdown(self) -> float:
        return float(self.step_s.mean() / self.healthy_step_s)


@dataclass(frozen=True)
class Timings(_Slowed):
    """Per step and rank (steps x ranks, seconds): its compute (its own kernels), its exposed
    data-parallel communication and its checkpoint write; the job's step time per step, paced by
    the slowest rank; and the healthy job's step time."""

    compute_s: np.ndarray
    dp_comm_s: np.ndarray
    checkpoint_s: np.ndarray
    step_s: np.ndarray
    healthy_step_s: float


def ring_pacing(j: Job, slow_fraction: float) -> float:
    """How much longer the DP reduce-scatter takes with one member's NIC at `slow_fraction` of its
    speed: the ring moves at its slowest link (labs.core.engine.topology's group cost)."""
    check_positive("slow_fraction", slow_fraction, maximum=1.0)
    p = j.plan
    u = next(u for u in j.est.collectives if u.key == "dp_reduce")
    return _ring_pacing(j.cluster, p, u.sent_bytes / u.calls * (p.dp * p.cp) / (p.dp * p.cp - 1), slow_fraction)


@lru_cache(maxsize=16)  # a class draws two NIC speeds on one job: two pairs of group costs, not two a student
def _ring_pacing(cluster: Cluster, p: Plan, nbytes: float, slow_fraction: float) -> float:
    stride = p.tp if p.rank_order == RANK_ORDERS[0] else 1
    healthy = group_cost("reduce_scatter", nbytes, cluster, p.dp * p.cp, stride, "ring")
    slow = replace(cluster, inter=replace(cluster.inter, efficiency=cluster.inter.efficiency * slow_fraction))
    return group_cost("reduce_scatter", nbytes, slow, p.dp * p.cp, stride, "ring").total_s / healthy.total_s


def throttle_factor(j: Job, power_limit_w: float) -> float:
    """A GPU capped at `power_limit_w` (thermal throttling pulls the clock as a lower limit does):
    its compute time over the healthy one's, from the engine's clock-vs-power curve."""
    return _throttled_compute_s(j.model, j.cluster, j.plan, power_limit_w) / j.est.time.compute


@lru_cache(maxsize=16)  # a class draws two power limits on one job: two estimates, not one a student
def _throttled_compute_s(model: Model, cluster: Cluster, plan: Plan, power_limit_w: float) -> float:
    return estimate(model, replace(cluster, gpu=cluster.gpu.at_power_limit(power_limit_w)), plan).time.compute


def checkpoint_write_s(j: Job, storage_fraction: float = 1.0) -> float:
    """One GPU's sharded checkpoint write on Llama 3's file system, its node at
    `storage_fraction` of its share (reliability.checkpoint_cost)."""
    check_positive("storage_fraction", storage_fraction, maximum=1.0)
    return _sharded_write_s(j.model, j.cluster, j.plan) / storage_fraction


@lru_cache(maxsize=16)  # one job's write, asked once a slow job's timings (a student)
def _sharded_write_s(model: Model, cluster: Cluster, p: Plan) -> float:
    size = checkpoint_size(model, p.tp, p.pp, p.dp * p.cp, p.zero_stage)
    return checkpoint_cost(size, "sharded", LLAMA3_STORAGE_SUSTAINED, cluster).stall_s


@lru_cache(maxsize=4)
def _jitter_field(steps: int, ranks: int) -> np.ndarray:
    """Lognormal jitter (sigma NOISE) for compute, DP communication and checkpoint writes, steps x
    ranks each, drawn once (float32: 8 MB for 40 steps of 4,096 ranks) and laid out twice over in
    both directions, so that a seed reads a view of it rotated by its own number of steps and ranks
    without copying it: every rank's draws stay independent, and a job of 4,096 ranks is spared half
    a million draws per seed (the grader re-derives one per student)."""
    field = np.exp(np.float32(NOISE) * np.random.default_rng(JITTER_SEED).standard_normal((3, steps, ranks), dtype=np.float32))
    field = np.tile(field, (1, 2, 2))
    field.flags.writeable = False
    return field


def _slow_rates(j: Job, fault: Fault, checkpoint_every: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """Per rank, before the noise: its compute, exposed DP communication and checkpoint write with
    `fault` (slow_timings); the faulty rank's node; the ranks the fault sets apart (every other
    rank has the same three times); the healthy job's step time."""
    t, n, f = j.est.time, j.ranks, fault.rank
    compute = np.full(n, t.compute + t.tp_comm + t.bubble)
    dp = np.full(n, t.dp_comm)
    healthy_write_s = checkpoint_write_s(j)
    ckpt = np.full(n, healthy_write_s)
    node = np.flatnonzero(np.arange(n) // j.cluster.gpus_per_node == j.node(f))
    kind, mag = fault.kind, fault.magnitude
    apart = node
    if kind == "throttled_gpu":
        compute[f] = (t.compute * throttle_factor(j, mag)) + t.tp_comm + t.bubble
        apart = np.array([f])
    elif kind == "slow_nic":
        apart = ring = j.members("dp", int(j.group_ids["dp"][f]))
        wire = sum(u.wire_s for u in j.est.collectives if u.key == "dp_reduce")
        dp[ring] = t.dp_comm + wire * (ring_pacing(j, mag) - 1)
    elif kind == "unbalanced_stage":
        per_stage = j.model.layers / j.plan.pp
        stage = j.coords[:, 3] == j.coords[f, 3]
        apart = np.flatnonzero(stage)
        compute[stage] = t.compute * (per_stage + mag) / per_stage + t.tp_comm + t.bubble
        compute[~stage] = t.compute * (per_stage - mag / (j.plan.pp - 1)) / per_stage + t.tp_comm + t.bubble
    elif kind == "host_contention":
        compute[node] = compute[node] * (1 + mag)
    elif kind == "slow_storage":
        ckpt[node] = checkpoint_write_s(j, mag)
    healthy = t.compute + t.tp_comm + t.bubble + t.pp_comm + t.dp_comm + t.optimizer + healthy_write_s / checkpoint_every
    return compute, dp, ckpt, node, apart, healthy


def _check_slow(j: Job, fault: Fault, steps: int, seed: int, checkpoint_every: int) -> None:
    _check_fault(j, fault, SLOW_FAULTS)
    check_positive("steps", steps, integer=True, maximum=1000)
    check_positive("seed", seed, integer=True, allow_zero=True)
    check_positive("checkpoint_every", checkpoint_every, integer=True, maximum=1000)


def _checkpoint_steps(steps: int, checkpoint_every: int) -> np.ndarray:
    return np.flatnonzero((np.arange(steps) % checkpoint_every) == checkpoint_every - 1)


def _host_noise(jitter: np.ndarray) -> np.ndarray:
    """The host's wider jitter from the same draws, exp(HOST_NOISE * NOISE * z): a factor on its ranks' noise."""
    return jitter ** (HOST_NOISE - 1)


def _step_s(t, compute_max: np.ndarray, dp_max: np.ndarray, checkpoint_max: np.ndarray) -> np.ndarray:
    """Each step's time, paced by the slowest rank of each phase (`t`: the job's estimate's times)."""
    return compute_max + dp_max + t.pp_comm + t.optimizer + checkpoint_max


def slow_timings(j: Job, fault: Fault, steps: int = 40, seed: int = 0, checkpoint_every: int = 10) -> Timings:
    """`steps` steps of per-rank timings with `fault` (a SLOW_FAULTS kind; magnitude: the power
    limit in W, the NIC's fraction of its speed, the layers moved onto the rank's stage, the host's
    extra share of compute time, the node's fraction of its storage bandwidth) and seeded noise."""
    _check_slow(j, fault, steps, seed, checkpoint_every)
    return _timings(j, fault, steps, seed, checkpoint_every, np.empty((3, steps, j.ranks)))


def _timings(j: Job, fault: Fault, steps: int, seed: int, checkpoint_every: int, out: np.ndarray) -> Timings:
    """slow_timings written into `out` (3 x steps x ranks: compute, DP, checkpoint)."""
    t, n = j.est.time, j.ranks
    compute, dp, ckpt, node, _, healthy = _slow_rates(j, fault, checkpoint_every)
    first, rank = seed % steps, seed % n
    jitter = _jitter_field(steps, n)[:, first:first + steps, rank:rank + n]  # this seed's view of the one field
    at_checkpoint = _checkpoint_steps(steps, checkpoint_every)
    compute_s, dp_s, ckpt_s = np.multiply(compute, jitter[0], out=out[0]), np.multiply(dp, jitter[1], out=out[1]), out[2]
    ckpt_s.fill(0.0)
    ckpt_s[at_checkpoint] = ckpt * jitter[2][at_checkpoint]
    if fault.kind == "host_contention":
        wider = _host_noise(jitter[:, :, node])
        compute_s[:, node] *= wider[0]
        dp_s[:, node] *= wider[1]
        ckpt_s[at_checkpoint[:, None], node] *= wider[2][at_checkpoint]
    return Timings(compute_s, dp_s, ckpt_s, _step_s(t, compute_s.max(axis=1), dp_s.max(axis=1), ckpt_s.max(axis=1)), healthy)


@dataclass(frozen=True)
class RankStats(_Slowed):
    """A slow job's timings summed up: per rank the mean over the steps of its compute and exposed
    DP time and its largest checkpoint write; per step the job's step time."""

    compute_mean_s: np.ndarray
    dp_comm_mean_s: np.ndarray
    checkpoint_max_s: np.ndarray
    step_s: np.ndarray
    healthy_step_s: float


def rank_stats(t: Timings) -> RankStats:
    return RankStats(t.compute_s.mean(axis=0), t.dp_comm_s.mean(axis=0), t.checkpoint_s.max(axis=0), t.step_s, t.healthy_step_s)


@lru_cache(maxsize=1)
def _scratch(steps: int, ranks: int) -> np.ndarray:
    """One buffer for slow_stats' timings (3 MB for 40 steps of 4,096 ranks): fresh arrays of that
    size come from the system a page at a time on every call."""
    return np.empty((3, steps, ranks))


TOP_KEPT = 32  # per step of the noise field, its largest draws kept in order (slow_stats' step maxima)


@lru_cache(maxsize=4)
def _field_top(steps: int, ranks: int) -> tuple[np.ndarray, np.ndarray]:
    """Per quantity and step of the noise field (its first steps x ranks), the columns of its
    TOP_KEPT largest draws, largest first, and those draws."""
    field = _jitter_field(steps, ranks)[:, :steps, :ranks]
    kept = min(TOP_KEPT, ranks)
    cols = np.argpartition(field, ranks - kept, axis=2)[:, :, ranks - kept:]
    cols = np.take_along_axis(cols, np.argsort(-np.take_along_axis(field, cols, axis=2), axis=2, kind="stable"), axis=2)
    return cols, np.take_along_axis(field, cols, axis=2)


@lru_cache(maxsize=192)  # per step offset (40) and the job's usual compute or DP time: a class's students share them
def _column_means(steps: int, ranks: int, quantity: int, first: int, value: float) -> np.ndarray:
    """The mean over the steps of `value` times the noise, per column of the field (its order, not a
    seed's): slow_timings' own product and mean, each column summed in step order."""
    return (np.full(ranks, value) * _jitter_field(steps, ranks)[quantity, first:first + steps, :ranks]).mean(axis=0)


def _step_max_outside(steps: int, ranks: int, first: int, rank: int, outside: np.ndarray) -> np.ndarray:
    """Per quantity and step of a seed's view (its first step and rank), the largest draw among the
    ranks not `outside`: of the field's largest draws in order, the first such rank's."""
    cols, top = _field_top(steps, ranks)
    rows = (first + np.arange(steps)) % steps
    ok = ~outside[(cols[:, rows] - rank) % ranks]
    pick = ok.argmax(axis=2)[..., None]
    out = np.take_along_axis(top[:, rows], pick, axis=2)[..., 0]
    missed = ~np.take_along_axis(ok, pick, axis=2)[..., 0]
    if missed.any():  # every kept draw of a step is outside: read the step
        view = _jitter_field(steps, ranks)[:, first:first + steps, rank:rank + ranks][:, :, ~outside]
        out[missed] = view.max(axis=2)[missed]
    return out


def slow_stats(j: Job, fault: Fault, steps: int = 40, seed: int = 0, checkpoint_every: int = 10) -> RankStats:
    """rank_stats(slow_timings(...)), the same numbers to the bit, without the steps x ranks arrays
    (the grader asks one a student). The ranks the fault leaves alike share one compute, DP and
    checkpoint time: their means come from a per-column table of the noise field shared across
    seeds, their step maxima from the field's largest draws (a positive factor keeps the order of
    rounded products). The ranks set apart, and the contended host's, are computed as slow_timings
    computes them, their means summed in step order as NumPy sums the steps x ranks array (a
    stage set apart is read off slow_timings itself)."""
    _check_slow(j, fault, steps, seed, checkpoint_every)
    t, n = j.est.time, j.ranks
    compute, dp, ckpt, node, apart, healthy = _slow_rates(j, fault, checkpoint_every)
    first, rank = seed % steps, seed % n
    field = _jitter_field(steps, n)
    at = _checkpoint_steps(steps, checkpoint_every)
    outside = np.zeros(n, dtype=bool)
    outside[apart] = True
    outside[node] = True
    special = np.flatnonzero(outside)
    if len(special) > n // 8:  # a whole stage apart: the arrays cost less than the columns picked out (in one buffer, used again)
        return rank_stats(_timings(j, fault, steps, seed, checkpoint_every, _scratch(steps, n)))
    alike = int(np.argmin(outside))  # a rank the fault leaves alone (every rank when none is)
    jitter = field[:, first:first + steps][:, :, special + rank]  # the others' draws, as slow_timings reads them
    compute_s, dp_s, ckpt_s = compute[special] * jitter[0], dp[special] * jitter[1], np.zeros((steps, len(special)))
    ckpt_s[at] = ckpt[special] * jitter[2][at]
    if fault.kind == "host_contention":
        wider = _host_noise(field[:, first:first + steps][:, :, node + rank])
        cols = np.searchsorted(special, node)
        compute_s[:, cols] *= wider[0]
        dp_s[:, cols] *= wider[1]
        ckpt_s[at[:, None], cols] *= wider[2][at]
    blocks, usual = (compute_s, dp_s, ckpt_s), (compute[alike:alike + 1], dp[alike:alike + 1], ckpt[alike:alike + 1])
    means = []
    for quantity in (0, 1):
        out = np.roll(_column_means(steps, n, quantity, first, float(usual[quantity][0])), -rank)
        out[special] = np.add.accumulate(blocks[quantity], axis=0)[-1] / steps  # in step order, one column or many
        means.append(out)
    ckpt_max = usual[2] * field[2, first + at, rank:rank + n].max(axis=0) if len(at) else np.zeros(n)
    ckpt_max[special] = ckpt_s.max(axis=0)
    if len(special) < n:
        top = _step_max_outside(steps, n, first, rank, outside)
        on_checkpoint = np.zeros(steps, dtype=bool)
        on_checkpoint[at] = True
        most = [usual[0] * top[0], usual[1] * top[1], np.where(on_checkpoint, usual[2] * top[2], 0.0)]
        step_max = [np.maximum(m, b.max(axis=1)) if len(special) else m for m, b in zip(most, blocks)]
    else:
        step_max = [b.max(axis=1) for b in blocks]
    return RankStats(means[0], means[1], ckpt_max, _step_s(t, *step_max), healthy)


def outliers(values: np.ndarray, gid: np.ndarray) -> np.ndarray:
    """Each rank's value over its group's median (`gid`: a group index per rank)."""
    values = np.asarray(values, dtype=float)
    size = np.bincount(gid)
    if size.min() == size.max():  # a job's groups of one kind are all one size: each group a row, sorted
        return _over_row_medians(values, np.argsort(gid, kind="stable").reshape(len(size), -1), gid)
    order = np.lexsort((values, gid))  # by group, each group's values ascending
    groups, first, counts = np.unique(gid[order], return_index=True, return_counts=True)
    ranked = values[order]
    med = np.zeros(int(gid.max()) + 1)
    med[groups] = (ranked[first + (counts - 1) // 2] + ranked[first + counts // 2]) / 2  # np.median's value, all groups at once
    return values / med[gid]


def group_outliers(values: np.ndarray, j: Job, axis: str) -> np.ndarray:
    """outliers(values, j.group_ids[axis]), with the job's groups as its layout keeps them."""
    check_choice("axis", axis, PG_AXES)
    return _over_row_medians(np.asarray(values, dtype=float), _layout(j).members[PG_AXES.index(axis)], j.group_ids[axis])


def _over_row_medians(values: np.ndarray, members: np.ndarray, gid: np.ndarray) -> np.ndarray:
    """values over the median of their group, `members` each group's ranks in a row (one size)."""
    c = members.shape[1]
    middle = sorted({(c - 1) // 2, c // 2})  # the median's one or two order statistics: a partition finds them as a sort would
    ranked = np.partition(values[members], middle, axis=1)
    return values / ((ranked[:, (c - 1) // 2] + ranked[:, c // 2]) / 2)[gid]


# ---- the timeout's cost ------------------------------------------------------------------------------
def hangs_per_month(gpus: int) -> float:
    """Interruptions a month that leave the job waiting in a collective (HANG_CAUSES), at Llama 3's
    per-GPU rates (reliability.job_failure_rates)."""
    rates = job_failure_rates(gpus)
    return sum(rates[c] for c in HANG_CAUSES) * MONTH_S


def timeout_loss(timeout_s: float, gpus: int, restart_s: float, healthy_wait_s: float, waits_per_month: float) -> dict:
    """GPU-hours lost a month to the watchdog's timeout: every hang waits `timeout_s` before the
    job is torn down and restarted (`restart_s`); a timeout at or below `healthy_wait_s` (the
    longest wait inside a collective a healthy job makes, `waits_per_month` times a month) kills
    the healthy job each time, and it restarts."""
    for name, value in (("timeout_s", timeout_s), ("restart_s", restart_s), ("healthy_wait_s", healthy_wait_s), ("waits_per_month", waits_per_month)):
        check_positive(name, value, allow_zero=name != "timeout_s", maximum=1e9)
    hangs = hangs_per_month(gpus)
    false_kills = waits_per_month if timeout_s <= healthy_wait_s else 0.0
    hours = (hangs + false_kills) * (timeout_s + restart_s) * gpus / 3600
    return {"hangs": hangs, "false_kills": false_kills, "gpu_hours": hours, "hang_gpu_hours": hangs * (timeout_s + restart_s) * gpus / 3600}


def best_timeout(settings_s, gpus: int, restart_s: float, healthy_wait_s: float, waits_per_month: float) -> float:
    """The setting of `settings_s` that loses the fewest GPU-hours a month."""
    return min(settings_s, key=lambda s: timeout_loss(s, gpus, restart_s, healthy_wait_s, waits_per_month)["gpu_hours"])


__all__ = [
    "Call", "DEFAULT_TIMEOUT_S", "Fault", "HANG_FAULTS", "HEARTBEAT_TIMEOUT_S", "Hang", "Job", "PG_AXES", "PG_DESC", "SLOW_FAULTS", "Timings",
    "best_timeout", "checkpoint_write_s", "culprit_axis", "fault_site", "flight_record", "group_outliers", "hang", "hangs_per_month", "job", "log_lines", "outliers", "pg_name",
    "RankStats", "rank_stats", "ring_pacing", "slow_stats", "slow_timings", "throttle_factor", "timeout_loss", "watchdog_rank",
]

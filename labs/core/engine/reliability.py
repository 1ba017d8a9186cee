"""Failures, checkpoints and goodput of a long training run.

Failure rate. A job of N GPUs fails at N times a per-GPU rate. The rate is fitted on one row,
`llama3_reliability` of tests/data/published_numbers.json: Llama Team, *The Llama 3 Herd of
Models* (arXiv:2407.21783) Sec. 3.3.4 and Table 5, 466 interruptions in a 54-day snapshot of
pre-training on up to 16,384 H100s, 47 planned and 419 unexpected, by cause. Taking all 16,384
GPUs for the whole window gives the lowest per-GPU rate the row allows: 54 x 24 / 419 = 3.09 hours
between unexpected interruptions at 16,384 GPUs. Every cause is assumed to scale with N.

Checkpoints. What a checkpoint holds is the model state minus the gradients: the bf16 weights
and the optimizer state (fp32 master weights, Adam m and v), from labs.core.engine.memory's terms; the
job's total once, and each GPU's share under its ZeRO stage. Three ways to write it:
- "sync": the state gathered to one writer, training paused; one writer reaches at most one
  NIC's bandwidth, and the file system at most its own (Llama 3's: 2 TB/s sustained, 7 TB/s peak,
  `llama3_cluster`, Sec. 3.3.1).
- "sharded": every GPU writes its own slice, training paused; the file system is the limit.
- "async": training pauses only while each GPU copies its state out of HBM over PCIe; the
  sharded write runs in the background and must end before the next checkpoint starts.
A restart reads the checkpoint back in parallel, as "sharded" writes it.

Cadence. With failures at rate 1/M (exponential), an interval of tau seconds of work, a
checkpoint stall C and a restart cost R (not itself interrupted), each segment of tau + C
seconds takes (M + R)(exp((tau + C)/M) - 1) seconds of wall time on average, so the goodput
(useful time over wall time) is tau / ((M + R)(exp((tau + C)/M) - 1)) (Daly 2006's wall-time model
writes M exp(R/M) for M + R: restarts that fail too). Young 1974: tau = sqrt(2 C M). Daly 2006, *A
higher order estimate of the optimum checkpoint interval for restart dumps* (FGCS 22): tau =
sqrt(2 C M)(1 + sqrt(C/(2M))/3 + C/(18 M)) - C for C < 2M, else M.

Stragglers: a ring moves in lock step, so one slow member paces it (labs.core.engine.topology).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from labs.core.engine.collectives import CollectiveCost
from labs.core.engine.hardware import Cluster
from labs.core.engine.memory import model_state_split
from labs.core.engine.models import Model
from labs.core.engine.topology import group_cost
from labs.core.engine.validation import check_bool, check_choice, check_fraction, check_positive

FITTED_ON = ("llama3_reliability", "llama3_cluster")  # rows of tests/data/published_numbers.json
MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0  # seconds: every lab and problem set reads its time units here
LLAMA3_WINDOW_S = 54 * DAY  # Sec. 3.3.4: "a 54-day snapshot period of pre-training"
LLAMA3_GPUS = 16_384  # "up to 16K H100 GPUs"
LLAMA3_PLANNED = 47  # planned interruptions (firmware upgrades, configuration updates)
LLAMA3_STORAGE_SUSTAINED = 2e12  # bytes/s, Tectonic, Sec. 3.3.1
LLAMA3_STORAGE_PEAK = 7e12  # bytes/s, Sec. 3.3.1
LLAMA3_EFFECTIVE_TRAINING = 0.90  # "higher than 90% effective training time", Sec. 3.3.4


@dataclass(frozen=True)
class Cause:
    """One row of Llama 3 Table 5: unexpected interruptions of one cause in the 54 days.
    node_swap is this lab's assumption, not the paper's: the job restarts without the node (a
    spare takes its place) rather than on the same machines."""

    key: str
    label: str
    count: int
    category: str  # Table 5's component column
    node_swap: bool


# Table 5 (arXiv:2407.21783): the ten largest causes; the 22 interruptions of its smaller rows
# (power, cooling, CPU, host memory...) are kept as one "other" row, mostly hardware.
LLAMA3_CAUSES: tuple[Cause, ...] = (
    Cause("faulty_gpu", "Faulty GPU", 148, "GPU", True),
    Cause("gpu_hbm3", "GPU HBM3 memory", 72, "GPU", True),
    Cause("software_bug", "Software bug", 54, "Dependency", False),
    Cause("network_switch_cable", "Network switch or cable", 35, "Network", False),
    Cause("host_maintenance", "Host maintenance (unplanned)", 32, "Unplanned maintenance", True),
    Cause("gpu_sram", "GPU SRAM memory", 19, "GPU", True),
    Cause("gpu_system_processor", "GPU system processor", 17, "GPU", True),
    Cause("nic", "NIC", 7, "Host", True),
    Cause("nccl_watchdog", "NCCL watchdog timeouts", 7, "Unknown", False),
    Cause("silent_data_corruption", "Silent data corruption", 6, "GPU", True),
    Cause("other", "Other (Table 5's smaller rows)", 22, "various", True),
)
LLAMA3_UNEXPECTED = sum(c.count for c in LLAMA3_CAUSES)  # 419
STRATEGIES = ("sync", "sharded", "async")
MAX_GPUS = 1 << 20
MAX_SECONDS = 1e10  # three centuries: any interval, stall, restart or run
MAX_BANDWIDTH = 1e15  # bytes/s: 500 times Llama 3's file system
MAX_RUNS = 100_000
MAX_SIMULATED_FAILURES = 5_000_000  # expected failures over all runs of one simulation
MAX_STALL_MTBFS = 100  # a checkpoint stall over mtbf_s: past it a job finishes a segment with odds below e^-100


def _seconds(name, value, allow_zero=False):
    check_positive(name, value, allow_zero=allow_zero, maximum=MAX_SECONDS)


def _gpus(value, name="gpus"):
    check_positive(name, value, integer=True, maximum=MAX_GPUS)


# ---- failure rate -------------------------------------------------------------------------------
def per_gpu_rate() -> float:
    """Unexpected interruptions per GPU-second, fitted on Llama 3 (all 16,384 GPUs, 54 days)."""
    return LLAMA3_UNEXPECTED / (LLAMA3_GPUS * LLAMA3_WINDOW_S)


def cause_shares() -> dict[str, float]:
    return {c.key: c.count / LLAMA3_UNEXPECTED for c in LLAMA3_CAUSES}


def job_failure_rates(gpus: int) -> dict[str, float]:
    """Unexpected interruptions per second of a job on `gpus` GPUs, by cause."""
    _gpus(gpus)
    return {c.key: gpus * c.count / (LLAMA3_GPUS * LLAMA3_WINDOW_S) for c in LLAMA3_CAUSES}


def job_mtbf_s(gpus: int) -> float:
    """Mean time between unexpected interruptions of the whole job: falls as 1/N."""
    _gpus(gpus)
    return 1.0 / (gpus * per_gpu_rate())


def gpu_mtbf_s() -> float:
    """One GPU's mean time between the job-stopping failures it causes."""
    return 1.0 / per_gpu_rate()


def expected_interruptions(gpus: int, wall_s: float) -> dict[str, float]:
    """Expected interruptions of a job over `wall_s` seconds: by cause, "unexpected", and
    "planned" (Llama 3's 47 in 54 days, scaled the same way)."""
    _gpus(gpus)
    _seconds("wall_s", wall_s, allow_zero=True)
    out = {k: r * wall_s for k, r in job_failure_rates(gpus).items()}
    out["unexpected"] = sum(out.values())
    out["planned"] = gpus * LLAMA3_PLANNED / (LLAMA3_GPUS * LLAMA3_WINDOW_S) * wall_s
    return out


# ---- checkpoint size and cost -------------------------------------------------------------------
@dataclass(frozen=True)
class CheckpointSize:
    """Bytes of one checkpoint: the job's total (each byte once) and what one GPU holds."""

    job_bytes: float
    per_gpu_bytes: float
    gpus: int


def checkpoint_size(model: Model, tp: int, pp: int, dp: int, zero_stage: int, optimizer: str = "fp32") -> CheckpointSize:
    """Weights + optimizer state (labs.core.engine.memory.model_state_split): the whole model's once,
    and a GPU's for its TP x PP shard under ZeRO over `dp` ranks (even stages assumed)."""
    if not isinstance(model, Model):
        raise ValueError(f"model must be a Model from labs.core.engine.models, got {model!r}")
    for name, value in (("tp", tp), ("pp", pp), ("dp", dp)):
        _gpus(value, name)
    _gpus(tp * pp * dp, "tp x pp x dp")
    w, _, o = model_state_split(float(model.params), 0, 1, optimizer=optimizer)
    rank_w, _, rank_o = model_state_split(float(model.params) / (tp * pp), zero_stage, dp, optimizer=optimizer)
    return CheckpointSize(w + o, rank_w + rank_o, tp * pp * dp)


@dataclass(frozen=True)
class CheckpointCost:
    """stall_s: training paused per checkpoint; write_s: until the checkpoint is on storage."""

    strategy: str
    stall_s: float
    write_s: float

    def stall_at(self, interval_s: float) -> float:
        """The pause per checkpoint at this interval: an async checkpoint also waits for the
        previous background write when the interval is shorter than it."""
        _seconds("interval_s", interval_s)
        if self.strategy == "async":
            return max(self.stall_s, self.write_s - interval_s)
        return self.stall_s


def _check_storage(storage_bytes_per_s):
    check_positive("storage_bytes_per_s", storage_bytes_per_s, maximum=MAX_BANDWIDTH)
    if storage_bytes_per_s < 1e3:
        raise ValueError(f"storage_bytes_per_s must be at least 1e3 bytes/s, got {storage_bytes_per_s!r}")


def _check_size_cluster(size, cluster):
    if not isinstance(size, CheckpointSize):
        raise ValueError(f"size must be a CheckpointSize from checkpoint_size(), got {size!r}")
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a Cluster from labs.core.engine.hardware, got {cluster!r}")


def checkpoint_cost(size: CheckpointSize, strategy: str, storage_bytes_per_s: float, cluster: Cluster) -> CheckpointCost:
    """Stall and write time of one checkpoint; the NIC and PCIe bandwidths are the cluster's."""
    _check_size_cluster(size, cluster)
    check_choice("strategy", strategy, STRATEGIES)
    _check_storage(storage_bytes_per_s)
    nic = cluster.inter_bytes_per_s_per_gpu
    if strategy == "sync":
        t = size.job_bytes / min(storage_bytes_per_s, nic)
        return CheckpointCost(strategy, t, t)
    sharded = size.job_bytes / min(storage_bytes_per_s, size.gpus * nic)
    if strategy == "sharded":
        return CheckpointCost(strategy, sharded, sharded)
    return CheckpointCost(strategy, size.per_gpu_bytes / cluster.host_link.effective_bytes_per_s, sharded)


def restore_s(size: CheckpointSize, storage_bytes_per_s: float, cluster: Cluster) -> float:
    """Reading the checkpoint back, every GPU its slice at once."""
    _check_size_cluster(size, cluster)
    _check_storage(storage_bytes_per_s)
    return size.job_bytes / min(storage_bytes_per_s, size.gpus * cluster.inter_bytes_per_s_per_gpu)


def restart_by_cause(relaunch_s: float, swap_s: float, hot_spares: bool) -> dict[str, float]:
    """Restart cost R per cause: relaunch (scheduler, NCCL init, checkpoint read), plus the wait
    for a replacement node when the cause takes a node out and no hot spare stands by."""
    _seconds("relaunch_s", relaunch_s, allow_zero=True)
    _seconds("swap_s", swap_s, allow_zero=True)
    check_bool("hot_spares", hot_spares)
    return {c.key: relaunch_s + (0.0 if hot_spares or not c.node_swap else swap_s) for c in LLAMA3_CAUSES}


def mean_restart_s(restarts: dict[str, float]) -> float:
    shares = cause_shares()
    return sum(shares[k] * restarts[k] for k in shares)


# ---- cadence and goodput ------------------------------------------------------------------------
def young_interval(checkpoint_s: float, mtbf_s: float) -> float:
    """Young 1974: sqrt(2 C M)."""
    _seconds("checkpoint_s", checkpoint_s)
    _seconds("mtbf_s", mtbf_s)
    return math.sqrt(2 * checkpoint_s * mtbf_s)


def daly_interval(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly 2006: sqrt(2CM)(1 + (1/3) sqrt(C/2M) + (1/9)(C/2M)) - C for C < 2M, else M."""
    _seconds("checkpoint_s", checkpoint_s)
    _seconds("mtbf_s", mtbf_s)
    if checkpoint_s >= 2 * mtbf_s:
        return mtbf_s
    x = checkpoint_s / (2 * mtbf_s)
    return math.sqrt(2 * checkpoint_s * mtbf_s) * (1 + math.sqrt(x) / 3 + x / 9) - checkpoint_s


def _wall_fractions(tau, c, r, m):
    """Expected seconds per segment of tau + c: (useful, checkpoint, lost rework, restart),
    over numpy columns; exp is taken in logs so nothing overflows."""
    tau, c, r, m = (np.asarray(x, dtype=float) for x in (tau, c, r, m))
    x = (tau + c) / m
    e = np.expm1(np.minimum(x, 700.0))
    attempts = m * e  # time spent in attempts, the successful one included
    return tau, c, np.maximum(attempts - tau - c, 0.0), r * e, x


def _goodput_columns(tau, c, r, m):
    tau, c, lost, restart, x = _wall_fractions(tau, c, r, m)
    log_g = np.log(tau) - np.log(m + r) - np.where(x > 700.0, x, np.log(np.expm1(np.minimum(x, 700.0))))
    return np.exp(np.minimum(log_g, 0.0))


def goodput(interval_s: float, checkpoint_s: float, restart_s: float, mtbf_s: float) -> float:
    """Useful time over wall time: tau / ((M + R)(exp((tau + C)/M) - 1))."""
    _seconds("interval_s", interval_s)
    _seconds("checkpoint_s", checkpoint_s, allow_zero=True)
    _seconds("restart_s", restart_s, allow_zero=True)
    _seconds("mtbf_s", mtbf_s)
    return float(_goodput_columns(interval_s, checkpoint_s, restart_s, mtbf_s))


@dataclass(frozen=True)
class WallBreakdown:
    """Shares of the wall time: useful work, checkpoint stalls, work lost and redone, restarts."""

    useful: float
    checkpoint: float
    lost: float
    restart: float


def wall_breakdown(interval_s: float, checkpoint_s: float, restart_s: float, mtbf_s: float) -> WallBreakdown:
    goodput(interval_s, checkpoint_s, restart_s, mtbf_s)  # the checks
    parts = _wall_fractions(interval_s, checkpoint_s, restart_s, mtbf_s)[:4]
    total = sum(float(p) for p in parts)
    if not math.isfinite(total) or total <= 0:
        return WallBreakdown(0.0, 0.0, 1.0, 0.0)
    return WallBreakdown(*(float(p) / total for p in parts))


def optimal_interval(checkpoint_s: float, mtbf_s: float) -> float:
    """The interval that maximises goodput in this model, solved exactly (bisection on
    d/dtau: exp((tau + C)/M)(1 - tau/M) = 1); R does not move it."""
    _seconds("checkpoint_s", checkpoint_s)
    _seconds("mtbf_s", mtbf_s)
    f = lambda t: math.exp(min((t + checkpoint_s) / mtbf_s, 700.0)) * (1 - t / mtbf_s) - 1  # noqa: E731
    lo, hi = 0.0, mtbf_s  # f(0) > 0, f(M) = -1
    for _ in range(64):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return (lo + hi) / 2


def cadence_curve(checkpoint_s: float, restart_s: float, mtbf_s: float, points: int = 200, write_s: float = 0.0) -> dict[str, np.ndarray]:
    """Goodput and wall-time shares over intervals from C/10 (at least a second) to 3M, log-spaced.
    write_s: an async checkpoint's background write; at intervals shorter than it the next
    checkpoint waits, so the stall is max(C, write_s - interval) (CheckpointCost.stall_at)."""
    _seconds("checkpoint_s", checkpoint_s, allow_zero=True)
    _seconds("restart_s", restart_s, allow_zero=True)
    _seconds("mtbf_s", mtbf_s)
    check_positive("points", points, integer=True, maximum=100_000)
    _seconds("write_s", write_s, allow_zero=True)
    for name, value in (("checkpoint_s", checkpoint_s), ("write_s", write_s)):
        # the shares divide restart_s * exp(stall / M) by a total that overflows with it (NaN)
        if value > MAX_STALL_MTBFS * mtbf_s:
            raise ValueError(f"{name} must be at most {MAX_STALL_MTBFS} x mtbf_s (a stall that long never completes between failures), got {name}={value:g}, mtbf_s={mtbf_s:g}")
    lo = max(1.0, checkpoint_s / 10)
    tau = np.geomspace(min(lo, mtbf_s / 100), 3 * mtbf_s, points)
    stall = np.maximum(checkpoint_s, write_s - tau)
    useful, c, lost, restart, _ = _wall_fractions(tau, stall, restart_s, mtbf_s)
    total = useful + c + lost + restart
    return {"interval_s": tau, "goodput": _goodput_columns(tau, stall, restart_s, mtbf_s),
            "checkpoint": c / total, "lost": lost / total, "restart": restart / total}


def best_goodput(checkpoint_s: float, restart_s: float, mtbf_s: float) -> float:
    """Goodput at the optimal interval."""
    return goodput(optimal_interval(checkpoint_s, mtbf_s), checkpoint_s, restart_s, mtbf_s)


# ---- Monte Carlo --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Simulation:
    goodput: np.ndarray  # one per run
    wall_s: np.ndarray
    failures: np.ndarray
    failures_by_cause: np.ndarray  # runs x causes, in LLAMA3_CAUSES order
    closed_form: float  # goodput(interval, C, mean R, M)


def simulate(work_s: float, interval_s: float, checkpoint_s: float, mtbf_s: float, restarts: dict[str, float], runs: int = 500, seed: int = 0) -> Simulation:
    """Runs of `work_s` seconds of useful work, checkpointed every `interval_s`: failures arrive
    at rate 1/M during work and checkpoints, each with a cause drawn from Table 5's shares and
    that cause's restart cost; the work since the last checkpoint is redone. Drawn per run with
    numpy's Generator: failures before n segments succeed (negative binomial), the time of each
    failed attempt (exponential truncated at the segment), and causes (multinomial)."""
    for name, value in (("work_s", work_s), ("interval_s", interval_s), ("mtbf_s", mtbf_s)):
        _seconds(name, value)
    _seconds("checkpoint_s", checkpoint_s, allow_zero=True)
    check_positive("runs", runs, integer=True, maximum=MAX_RUNS)
    check_positive("seed", seed, integer=True, allow_zero=True)
    if not isinstance(restarts, dict) or set(restarts) != {c.key for c in LLAMA3_CAUSES}:
        raise ValueError(f"restarts must map every cause ({', '.join(c.key for c in LLAMA3_CAUSES)}) to seconds, got {restarts!r}")
    for key, value in restarts.items():
        _seconds(f"restarts[{key}]", value, allow_zero=True)
    n = max(1, round(work_s / interval_s))
    s = interval_s + checkpoint_s
    expected = runs * n * math.expm1(min(s / mtbf_s, 700.0))
    if expected > MAX_SIMULATED_FAILURES:
        raise ValueError(f"interval_s, work_s and runs give {expected:.3g} expected failures to draw, more than {MAX_SIMULATED_FAILURES:g}: fewer runs, or a longer MTBF")
    rng = np.random.default_rng(seed)
    k = rng.negative_binomial(n, math.exp(-s / mtbf_s), size=runs)
    # Each failed attempt's lost time, truncated exponential on [0, s): -M log1p(-u (1 - e^(-s/M))), computed in
    # place over one buffer (a simulation draws up to millions), with one 0 after the draws as reduceat's start for
    # runs at the end without a failure.
    total = int(k.sum())
    lost = np.empty(total + 1)
    rng.random(out=lost[:total])
    lost[total] = 0.0
    np.multiply(lost, math.expm1(-s / mtbf_s), out=lost)
    np.log1p(lost, out=lost)
    np.multiply(lost, -mtbf_s, out=lost)
    edges = np.concatenate([[0], np.cumsum(k)])
    lost_per_run = np.add.reduceat(lost, edges[:-1]) * (k > 0)
    shares = np.array([c.count for c in LLAMA3_CAUSES], dtype=float) / LLAMA3_UNEXPECTED
    by_cause = rng.multinomial(k, shares)
    restart_s = by_cause @ np.array([restarts[c.key] for c in LLAMA3_CAUSES], dtype=float)
    wall = n * s + lost_per_run + restart_s
    closed = goodput(interval_s, checkpoint_s, mean_restart_s(restarts), mtbf_s)
    return Simulation(n * interval_s / wall, wall, k, by_cause, closed)


# ---- stragglers ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Straggler:
    healthy: CollectiveCost
    paced: CollectiveCost

    @property
    def slowdown(self) -> float:
        return self.paced.total_s / self.healthy.total_s if self.healthy.total_s else 1.0


def straggler_all_reduce(nbytes: float, cluster: Cluster, n: int, stride: int, slow_fraction: float) -> Straggler:
    """A ring all-reduce of `nbytes` over n ranks `stride` apart, healthy and with one member's
    NICs at `slow_fraction` of their speed: a ring moves in lock step, so every step waits for
    that member and the whole ring runs as if every NIC were that slow (labs.core.engine.topology)."""
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a Cluster from labs.core.engine.hardware, got {cluster!r}")
    check_fraction("slow_fraction", slow_fraction)
    if slow_fraction < 1e-3:
        raise ValueError(f"slow_fraction must be at least 0.001, got {slow_fraction!r}")
    healthy = group_cost("all_reduce", nbytes, cluster, n, stride, "ring")
    slow = replace(cluster, inter=replace(cluster.inter, efficiency=cluster.inter.efficiency * slow_fraction))
    return Straggler(healthy, group_cost("all_reduce", nbytes, slow, n, stride, "ring"))


__all__ = [
    "Cause", "CheckpointCost", "CheckpointSize", "FITTED_ON", "LLAMA3_CAUSES", "STRATEGIES", "Simulation", "Straggler", "WallBreakdown",
    "best_goodput", "cadence_curve", "cause_shares", "checkpoint_cost", "checkpoint_size", "daly_interval", "expected_interruptions",
    "goodput", "gpu_mtbf_s", "job_failure_rates", "job_mtbf_s", "mean_restart_s", "optimal_interval", "per_gpu_rate",
    "restart_by_cause", "restore_s", "simulate", "straggler_all_reduce", "wall_breakdown", "young_interval",
]

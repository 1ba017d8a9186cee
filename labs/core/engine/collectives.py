"""Alpha-beta cost of collectives (Hockney; Thakur, Rabenseifner and Gropp 2005).

A message of M bytes over N ranks, link bandwidth B (bytes/s, one way) and per-step latency
alpha (seconds):

    ring all-reduce      2(N-1) alpha + 2 (N-1)/N M / B
    reduce-scatter       (N-1) alpha  +   (N-1)/N M / B      (all-gather the same)
    all-to-all           (N-1) alpha  +   (N-1)/N M / B
    broadcast (ring)     (N-1) alpha  +   M / B             (pipelined chain)
    p2p                  alpha + M / B
    tree all-reduce      2 log2(N) alpha + 2 M / B          (NCCL's double binary tree: a reduce
                                                             then a broadcast, each moving all M)
    in-network all-reduce  2 alpha + M / B                  (the switches reduce, InfiniBand SHARP:
                                                             each rank sends M up once and receives
                                                             the reduced M once, against the ring's
                                                             2(N-1)/N M each way)

all-reduce = reduce-scatter + all-gather, in time and in bytes. The ring's bandwidth term per rank
saturates at 2M as N grows; the latency term keeps growing with N. The tree pays 2M, more than the
ring's 2(N-1)/N M, for 2 log2(N) steps instead of 2(N-1): it wins for small messages at large N
and loses for large ones. Where a group's ranks sit (NVLink, rails, pods), and which algorithm and
protocol NCCL picks, is labs.core.engine.topology's business; both modules price a collective with
the one formula here (alpha_beta_seconds, moved_share), topology with NCCL's measured ramp
(ring_ramp) on top.

The ramp. nccl-tests' curves reach their plateau only at hundreds of MB: below it NCCL's ring
moves each rank's slice in chunks too small to keep every channel's pipeline full, which no
latency term reproduces (a constant alpha that fits 8 MB makes 128 MB too fast, and one that
fits 128 MB makes 8 MB too slow). Its bandwidth term is stretched by

    ring_ramp(x) = 1 + RAMP_EXCESS / (1 + x / RAMP_HALF_BYTES),   x = the bytes of the message
                                                                    each rank's pipeline carries

(M / N for the ring, NVLS and PAT, M for the tree, which pipelines the whole message), inside one
NVLink domain (across domains and on PCIe no measured mid-size curve holds it: see RAMP_EXCESS).

Across domains, the trees. NVLSTree (and the tree) across NVLink domains pipeline each GPU's share
of the message, M / g after NVLS's reduce-scatter over the g members of a domain, through a tree
1 + log2(domains) levels deep, so the pipeline behind each rail carries M / (g (1 + log2 domains)):
domain_tree_ramp, the same curve with its own constants (fitted on GB200 NVL72 racks, where two
racks at 512 MiB reach 59% of their plateau and twenty racks 36%). At one domain that slice is
the ring's M / N. labs.core.engine.topology applies it where it was measured, across domains of
several hosts (multi-node NVLink racks), not across one-host DGX/HGX domains.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from labs.core.engine.validation import check_choice, check_positive

ALGORITHMS = ("ring", "tree", "in_network")
MAX_SIMULATED_RANKS = 64  # the simulator keeps n x n sums per step, 2(n-1) steps: n^3 grows fast
# Bounds that keep every time and byte count finite: a message of at most an exabyte, a link of
# at least a microbyte per second, a per-step latency of at most an hour.
MAX_BYTES = 1e18
MIN_BANDWIDTH = 1e-6
MAX_BANDWIDTH = 1e18
MAX_LATENCY_S = 3600.0
OPS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "p2p")


@dataclass(frozen=True)
class CollectiveCost:
    """A collective's time split into its latency (alpha) and bandwidth (beta) terms."""

    latency_s: float
    bandwidth_s: float

    @property
    def total_s(self) -> float:
        return self.latency_s + self.bandwidth_s

    def __add__(self, other: "CollectiveCost") -> "CollectiveCost":
        return CollectiveCost(self.latency_s + other.latency_s, self.bandwidth_s + other.bandwidth_s)

    def scaled(self, k: float) -> "CollectiveCost":
        return CollectiveCost(self.latency_s * k, self.bandwidth_s * k)


ZERO_COST = CollectiveCost(0.0, 0.0)


def _check_bandwidth(name, value):
    check_positive(name, value, maximum=MAX_BANDWIDTH)
    if value < MIN_BANDWIDTH:
        raise ValueError(f"{name} must be at least {MIN_BANDWIDTH:g} bytes/s, got {value!r}")


def _check(nbytes, n, bandwidth, latency, algorithm):
    check_positive("nbytes", nbytes, allow_zero=True, maximum=MAX_BYTES)
    check_positive("n", n, integer=True)
    _check_bandwidth("bandwidth", bandwidth)
    check_positive("latency", latency, allow_zero=True, maximum=MAX_LATENCY_S)
    check_choice("algorithm", algorithm, ALGORITHMS)


def bytes_sent_per_rank(op: str, nbytes: float, n: int, algorithm: str = "ring") -> float:
    """Bytes each rank puts on the wire for one collective of `nbytes` (the message size), with the
    ring's pattern (the default) or another algorithm's (moved_share)."""
    check_choice("op", op, OPS)
    check_positive("nbytes", nbytes, allow_zero=True, maximum=MAX_BYTES)
    check_positive("n", n, integer=True)
    check_choice("algorithm", algorithm, ALGORITHMS)
    if algorithm == "ring":
        return _bytes_sent(op, nbytes, n)
    return moved_share(op, n, algorithm) * nbytes if n > 1 else 0.0


def _bytes_sent(op: str, nbytes: float, n: int) -> float:
    if op == "all_reduce":
        return 2 * (n - 1) / n * nbytes
    if op in ("reduce_scatter", "all_gather", "all_to_all"):
        return (n - 1) / n * nbytes
    return float(nbytes) if n > 1 else 0.0


# The ramp's two constants, fitted (least squares on log busbw, model against measured, a grid of
# 0.1 in RAMP_EXCESS and 0.5 MB in RAMP_HALF_BYTES) on three nccl-tests all-reduce curves inside one
# NVLink domain: tests/data/nccl_busbw.json azure_nd_a100_v4 (8x A100, ring, NCCL 2.18.5, 8 MB - 8 GB)
# and azure_nd_h100_v5_nvls (8x H100, NVLS, NCCL 2.18.5, 8 MB - 8 GB), and tests/data/
# kernel_benchmarks_v4.json nccl_gb200_4gpu_allreduce_ring_* (4x GB200, ring, NCCL 2.25.1, 1 MB -
# 8 GB), with NVLS's latency at tuning.cc's own 25 us (labs.core.engine.topology): worst row 14%.
# Held out (tests/test_collectives_v4.py): nccl_h200_8gpu_allreduce_nvls_* (1 MB - 8 GB) and
# nccl_gb200_nvl72_1rack_allreduce_* (72 GPUs, 512 MB - 8 GB). Across domains the ramp is not
# applied: no mid-size curve across nodes is held (the 3-node A100 row, nccl-tests #119, is a run's
# average over its sizes), so a ring over NICs keeps v3's pricing (labs.core.engine.topology), and
# so does a PCIe node (no curve held).
# RCCL's mesh keeps its own tables (topology._mesh_priced).
RAMP_EXCESS = 1.1
RAMP_HALF_BYTES = 2.5e6


def ring_ramp(slice_bytes, excess=RAMP_EXCESS, half_bytes=RAMP_HALF_BYTES):
    """How much longer NCCL's pipeline takes to move its bytes than the plateau bus bandwidth
    says, when each rank's pipeline carries `slice_bytes` (module docstring): 1 + excess at
    small slices, 1 at large ones. Scalars or numpy arrays; an infinite slice is 1 (no ramp)."""
    return 1.0 + excess / (1.0 + slice_bytes / half_bytes)


# The ramp across NVLink domains (module docstring), fitted (least squares on log busbw; the half
# bytes on a 0.1 MB grid and hardware's gb200-nvl72 scale_out_bytes_per_s on a 1 GB/s grid, fitted
# with them) on coreweave/nccl-tests all_reduce_perf, NCCL 2.26.2, in tests/data/kernel_benchmarks_v4.json:
# nccl_gb200_nvl72_2racks_allreduce_* (144 GPUs, 512 MiB - 16 GiB) and
# nccl_gb200_nvl72_20racks_allreduce_* (1,440 GPUs, 512 MiB - 16 GiB), NVLSTree (NCCL's pick past
# one rack): worst row 10%. These rows' slices (1.5-120 MB) do not pin the excess: the fit keeps
# improving towards a pure pipeline fill, 1 + 3 MB / slice (excess 4: worst row 12%, 5: 10%, 8: 7.5%);
# 5 is taken (unconfirmed: how far small messages stretch, 6x at most, is assumed), and excess x
# half bytes, 3 MB, is within 10% of the ramp inside a domain's 2.75 MB. tests/test_domain_ramp.py
# reports every row.
DOMAIN_RAMP_EXCESS = 5.0
DOMAIN_RAMP_HALF_BYTES = 0.6e6


def domain_tree_ramp(slice_bytes):
    """ring_ramp across NVLink domains (module docstring): each rail's pipeline carries
    `slice_bytes`, M / (g (1 + log2 domains))."""
    return ring_ramp(slice_bytes, DOMAIN_RAMP_EXCESS, DOMAIN_RAMP_HALF_BYTES)


def moved_share(op: str, n, algorithm: str = "ring"):
    """The bytes each rank moves through its links, per byte of the message: ring all-reduce
    2(N-1)/N, reduce-scatter, all-gather and all-to-all (N-1)/N; the tree all-reduce 2 (a reduce
    and a broadcast of the whole message: NCCL's tuning.cc converts the tree's bus bandwidth to
    algorithm bandwidth at half), and a tree's reduce-scatter or all-gather (a reduce or a
    broadcast of the whole message; NCCL runs neither on its tree) 1, so that all-reduce =
    reduce-scatter + all-gather on either; the in-network all-reduce 1 (M up to the switches, the
    reduced M back: the switches add, so no rank forwards partial sums; other ops as the ring's);
    broadcast and p2p 1. n a number or a numpy array (n >= 2)."""
    if algorithm == "in_network" and op == "all_reduce":
        return 1.0
    if algorithm == "tree" and op in ("all_reduce", "reduce_scatter", "all_gather"):
        return 2.0 if op == "all_reduce" else 1.0
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("reduce_scatter", "all_gather", "all_to_all"):
        return (n - 1) / n
    return 1.0


def alpha_beta_seconds(latency_s, moved_bytes, bandwidth, ramp=1.0):
    """The alpha-beta model, written once: (latency seconds, bandwidth seconds) of moving
    `moved_bytes` through a rank's links at `bandwidth` bytes/s, stretched by `ramp` (ring_ramp;
    1 at line rate). collective_cost and labs.core.engine.topology both price with it."""
    return latency_s, moved_bytes / bandwidth * ramp


def _steps(op: str, n: int, algorithm: str) -> float:
    if n == 1:
        return 0.0
    if algorithm == "tree":
        depth = math.ceil(math.log2(n))
        return 2 * depth if op == "all_reduce" else depth
    if algorithm == "in_network" and op == "all_reduce":
        return 2  # up to the switches and back, their tree's depth not counted
    return {"all_reduce": 2 * (n - 1), "p2p": 1}.get(op, n - 1)


def collective_cost(op: str, nbytes: float, n: int, bandwidth: float, latency: float = 0.0, algorithm: str = "ring") -> CollectiveCost:
    check_choice("op", op, OPS)
    _check(nbytes, n, bandwidth, latency, algorithm)
    if n == 1:
        return ZERO_COST
    moved = moved_share(op, n, algorithm) * nbytes
    return CollectiveCost(*alpha_beta_seconds(_steps(op, n, algorithm) * latency, moved, bandwidth))


def all_reduce_time(nbytes, n, bandwidth, latency=0.0, algorithm="ring") -> float:
    return collective_cost("all_reduce", nbytes, n, bandwidth, latency, algorithm).total_s


def reduce_scatter_time(nbytes, n, bandwidth, latency=0.0, algorithm="ring") -> float:
    return collective_cost("reduce_scatter", nbytes, n, bandwidth, latency, algorithm).total_s


def all_gather_time(nbytes, n, bandwidth, latency=0.0, algorithm="ring") -> float:
    return collective_cost("all_gather", nbytes, n, bandwidth, latency, algorithm).total_s


def all_to_all_time(nbytes, n, bandwidth, latency=0.0, algorithm="ring") -> float:
    return collective_cost("all_to_all", nbytes, n, bandwidth, latency, algorithm).total_s


def broadcast_time(nbytes, n, bandwidth, latency=0.0, algorithm="ring") -> float:
    return collective_cost("broadcast", nbytes, n, bandwidth, latency, algorithm).total_s


def p2p_time(nbytes, n=2, bandwidth=1.0, latency=0.0, algorithm="ring") -> float:
    return collective_cost("p2p", nbytes, n, bandwidth, latency, algorithm).total_s


def busbw_from_algbw(op: str, algbw: float, n: int) -> float:
    """nccl-tests' bus bandwidth (doc/PERFORMANCE.md): algbw x 2(n-1)/n for all-reduce,
    x (n-1)/n for reduce-scatter, all-gather and all-to-all, x 1 for broadcast."""
    _check_busbw(op, "algbw", algbw, n)
    return algbw * _bus_factor(op, n)


def algbw_from_busbw(op: str, busbw: float, n: int) -> float:
    _check_busbw(op, "busbw", busbw, n)
    return busbw / _bus_factor(op, n)


def _check_busbw(op, name, value, n):
    check_choice("op", op, OPS)
    check_positive(name, value, allow_zero=True, maximum=MAX_BANDWIDTH)
    check_positive("n", n, integer=True)


def _bus_factor(op: str, n: int) -> float:
    return _bytes_sent(op, 1.0, n) if n > 1 else 1.0


@dataclass(frozen=True)
class RingStep:
    """One step of a ring all-reduce on n ranks and n chunks.

    phase: "reduce-scatter" or "all-gather". sends[r] = chunk rank r sends to rank r+1.
    holds[r][c] = how many ranks' contributions rank r's copy of chunk c now sums.
    """

    phase: str
    index: int
    sends: tuple[int, ...]
    holds: tuple[tuple[int, ...], ...]
    bytes_sent_per_rank: float


def simulate_ring_all_reduce(n: int, nbytes: float = 1.0) -> list[RingStep]:
    """Play a ring all-reduce step by step: n-1 reduce-scatter steps, then n-1 all-gather steps.

    Each step every rank sends one chunk of nbytes/n to its right neighbour. After the
    reduce-scatter, rank r holds the full sum of chunk (r+1) mod n; after the all-gather every
    rank holds every full sum. The bytes add up to 2(n-1)/n nbytes per rank.
    """
    check_positive("n", n, integer=True, maximum=MAX_SIMULATED_RANKS)
    check_positive("nbytes", nbytes, allow_zero=True, maximum=MAX_BYTES)
    holds = [[1] * n for _ in range(n)]
    steps: list[RingStep] = []
    chunk = nbytes / n
    for k in range(n - 1):
        sends = tuple((r - k) % n for r in range(n))
        for r in range(n):
            c = sends[r]
            holds[(r + 1) % n][c] += holds[r][c]
        steps.append(RingStep("reduce-scatter", k, sends, tuple(map(tuple, holds)), chunk))
    for k in range(n - 1):
        sends = tuple((r + 1 - k) % n for r in range(n))
        for r in range(n):
            c = sends[r]
            holds[(r + 1) % n][c] = holds[r][c]
        steps.append(RingStep("all-gather", k, sends, tuple(map(tuple, holds)), chunk))
    return steps


# ---- the ring's clock, and the parameter server it replaced ----------------------------------
def ring_link_bytes(n: int, nbytes: float) -> tuple[float, ...]:
    """Bytes on each of the ring's n links (rank r to rank r+1) during any one step of a ring
    all-reduce: one chunk of nbytes/n on every link, every step (Patarasuk and Yuan 2009;
    Thakur, Rabenseifner and Gropp 2005). 2(n-1) steps of it make bytes_sent_per_rank."""
    check_positive("n", n, integer=True, maximum=MAX_SIMULATED_RANKS)
    check_positive("nbytes", nbytes, allow_zero=True, maximum=MAX_BYTES)
    return tuple([nbytes / n] * n) if n > 1 else ()


def ring_step_time(nbytes: float, n: int, bandwidth: float, latency: float = 0.0) -> float:
    """One step of a ring all-reduce: each rank sends one chunk of nbytes/n to its right
    neighbour, alpha + nbytes / (n B). The 2(n-1) steps add up to all_reduce_time (ring)."""
    _check(nbytes, n, bandwidth, latency, "ring")
    return latency + nbytes / n / bandwidth if n > 1 else 0.0


def ring_clock(nbytes: float, n: int, bandwidth: float, latency: float = 0.0) -> tuple[float, ...]:
    """Seconds elapsed after each of the 2(n-1) steps of a ring all-reduce (reduce-scatter, then
    all-gather); the last entry is all_reduce_time(nbytes, n, bandwidth, latency). At most
    MAX_SIMULATED_RANKS ranks, as the simulator it times."""
    check_positive("n", n, integer=True, maximum=MAX_SIMULATED_RANKS)
    step = ring_step_time(nbytes, n, bandwidth, latency)
    return tuple(step * (k + 1) for k in range(2 * (n - 1)))


def parameter_server_ingress_bytes(nbytes: float, n: int) -> float:
    """Bytes a single parameter server receives per step from n workers that each push a
    gradient of nbytes (Li et al. 2014, OSDI; Sergeev and Del Balso 2018, arXiv:1802.05799
    Sec. 3): n x nbytes, growing with n, where a ring rank sends 2(n-1)/n x nbytes."""
    check_positive("nbytes", nbytes, allow_zero=True, maximum=MAX_BYTES)
    check_positive("n", n, integer=True)
    return float(n) * nbytes


def parameter_server_cost(nbytes: float, n: int, bandwidth: float, latency: float = 0.0) -> CollectiveCost:
    """One synchronous step of a single parameter server with a NIC of `bandwidth` bytes/s each
    way: n workers push nbytes of gradients, the server sums them and each pulls nbytes back.
    With the transfer chunked and pipelined, pushes (into the NIC) and pulls (out of it) share
    the full-duplex link's two directions, so the server's NIC moves n x nbytes each way:
    2 alpha + n nbytes / B. Workers' own links are assumed at least as fast as the server's."""
    _check(nbytes, n, bandwidth, latency, "ring")
    if nbytes == 0:
        return ZERO_COST
    return CollectiveCost(2 * latency, parameter_server_ingress_bytes(nbytes, n) / bandwidth)

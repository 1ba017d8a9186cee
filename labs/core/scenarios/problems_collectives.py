"""Problem set 1, collectives and alpha-beta (labs/problems/ps01_collectives.py): eight problems
on the ring, the tree and the hierarchy, priced at line rate with the catalog's links
(labs.core.engine.exercises) and beside NCCL's achieved rates (labs.core.engine.topology)."""

from __future__ import annotations

import math

from labs.core.engine import exercises as x
from labs.core.engine.collectives import busbw_from_algbw
from labs.core.engine.hardware import LINKS, Cluster
from labs.core.engine.models import Model
from labs.core.problemset import Problem, ProblemSet, fmt
from labs.core.variants import Option

NAME = "ps01_collectives"
MB, KB, GB, US, MS = 1e6, 1e3, 1e9, 1e-6, 1e-3
NODES = ("dgx-h100", "dgx-a100", "dgx-b200")  # one 8-GPU NVLink node each
NICS = ("ib-ndr", "ib-hdr", "roce-400")


def _node(key: str, nodes: int = 1) -> Cluster:
    return Cluster.get(key, nodes=nodes)


def _nv(s) -> tuple[float, float, str]:
    """(bandwidth one way, alpha, GPU name) of a node's NVLink."""
    c = _node(s["node"])
    return c.intra.bandwidth_bytes_per_s, c.intra.latency_s, c.gpu.name


def _ring(m, n, a, b) -> str:
    return f"2({n}-1) x {fmt(a / US)} µs + 2({n}-1)/{n} x {fmt(m / MB)} MB / {fmt(b / GB)} GB/s"


# ---- 1. a ring inside one node ------------------------------------------------------------------------
def _ring_nvlink_time(s) -> float:
    b, a, _ = _nv(s)
    return x.collective_time("all_reduce", s["mb"] * MB, 8, a, b).total_s / MS


def _ring_nvlink_envelope(s) -> float:
    b, a, _ = _nv(s)
    m = s["mb"] * MB
    return (2 * 7 * a + 2 * 7 / 8 * m / b) / MS


def _ring_nvlink_nccl(s) -> float:
    return x.nccl_collective_time("all_reduce", s["mb"] * MB, _node(s["node"]), 8).total_s / MS


RING_NVLINK = Problem(
    "ring_nvlink", "A ring inside one node",
    {"node": NODES, "mb": (256, 64, 1024)},
    lambda s: (f"Eight {_nv(s)[2]} GPUs in one node run a ring all-reduce of {s['mb']} MB. Each GPU's NVLink moves "
               f"{fmt(_nv(s)[0] / GB)} GB/s each way, and a ring step costs α = {fmt(_nv(s)[1] / US)} µs. How long does it take, in ms?"),
    _ring_nvlink_time, _ring_nvlink_envelope,
    lambda s: (f"T = 2(N-1) α + 2 (N-1)/N · M / B = {_ring(s['mb'] * MB, 8, _nv(s)[1], _nv(s)[0])} = "
               f"{fmt(_ring_nvlink_envelope(s))} ms. The bandwidth term is almost all of it: 14 steps of {fmt(_nv(s)[1] / US)} µs are "
               f"{fmt(14 * _nv(s)[1] / MS)} ms."),
    "ms", tolerance=0.05,
    refined=_ring_nvlink_nccl, refined_label="NCCL's achieved time on this node (the engine's measured bus bandwidth)",
    why="NCCL does not reach NVLink's line rate (its measured bus bandwidth is what nccl-tests shows), and on NVLink-SHARP nodes it may reduce in the switch instead.",
)


# ---- 2. the two-way figure --------------------------------------------------------------------
TP_TWOWAY = Problem(
    "tp_twoway", "The datasheet's NVLink figure",
    {"node": NODES, "mb": (32, 16, 64)},
    lambda s: (f"A tensor-parallel all-reduce of {s['mb']} MB runs over the 8 {_nv(s)[2]} GPUs of a node. The datasheet says NVLink "
               f"{fmt(2 * _nv(s)[0] / GB)} GB/s; a ring step costs α = {fmt(_nv(s)[1] / US)} µs. At line rate, how long does the ring take, in ms?"),
    _ring_nvlink_time, _ring_nvlink_envelope,
    lambda s: (f"The datasheet's {fmt(2 * _nv(s)[0] / GB)} GB/s is both directions together: a ring sends one way, B = {fmt(_nv(s)[0] / GB)} GB/s. "
               f"T = {_ring(s['mb'] * MB, 8, _nv(s)[1], _nv(s)[0])} = {fmt(_ring_nvlink_envelope(s))} ms."),
    "ms", tolerance=0.05,
    refined=_ring_nvlink_nccl, refined_label="NCCL's achieved time on this node",
    why="NCCL's measured bus bandwidth is below the line rate; small messages also pay its protocols' latency.",
    texts=("The MIT lecture notes time a 32 MB TP all-reduce at 0.05 ms: that divides by the two-way figure and drops the "
           "ring's 2(N-1)/N, about 4x too small; at the achieved bus bandwidth it is nearer 0.3 ms."),
)


# ---- 3. a tree for small messages --------------------------------------------------------------
def _nic(s) -> tuple[float, float, str]:
    link = LINKS[s["nic"]]
    return link.bandwidth_bytes_per_s, link.latency_s, link.name


def _tree_us(s) -> float:
    b, a, _ = _nic(s)
    return x.collective_time("all_reduce", s["kb"] * KB, s["n"], a, b, "tree").total_s / US


def _tree_envelope(s) -> float:
    b, a, _ = _nic(s)
    return (2 * math.log2(s["n"]) * a + 2 * s["kb"] * KB / b) / US


def _ring_us(s) -> float:
    b, a, _ = _nic(s)
    return x.collective_time("all_reduce", s["kb"] * KB, s["n"], a, b).total_s / US


TREE_SMALL = Problem(
    "tree_small", "A tree for a small message",
    {"n": (128, 64, 256), "kb": (256, 64, 1024), "nic": NICS},
    lambda s: (f"{s['n']} GPUs, one per node, each on one {_nic(s)[2]} NIC ({fmt(_nic(s)[0] / GB)} GB/s each way, "
               f"α = {fmt(_nic(s)[1] / US)} µs a step), all-reduce {s['kb']} KB with a pipelined binary tree (a reduce up the tree, "
               "then a broadcast down). How long does it take, in µs?"),
    _tree_us, _tree_envelope,
    lambda s: (f"Each half climbs log2 N = {int(math.log2(s['n']))} levels and moves the whole message once: T = 2 log2(N) α + 2 M / B = "
               f"2 x {int(math.log2(s['n']))} x {fmt(_nic(s)[1] / US)} µs + 2 x {s['kb']} KB / {fmt(_nic(s)[0] / GB)} GB/s = {fmt(_tree_envelope(s))} µs."),
    "µs", tolerance=0.05,
    refined=_ring_us, refined_label="The ring at the same message",
    why="The ring's 2(N-1) latency steps dwarf the tree's 2 log2 N at this size, while the ring moves slightly fewer bytes (2(N-1)/N M against 2M).",
)


# ---- 4. the crossover, solved ------------------------------------------------------------------
def _cross_mb(s) -> float:
    b, a, _ = _nic(s)
    return x.ring_tree_crossover_bytes(s["n"], a, b) / MB


def _cross_envelope(s) -> float:
    b, a, _ = _nic(s)
    n = s["n"]
    return n * b * a * (n - 1 - math.log2(n)) / MB


CROSSOVER = Problem(
    "crossover", "Where the ring starts to win",
    {"n": (64, 16, 256), "nic": NICS},
    lambda s: (f"Same network: {s['n']} ranks on {_nic(s)[2]} ({fmt(_nic(s)[0] / GB)} GB/s each way, α = {fmt(_nic(s)[1] / US)} µs). "
               "Ring all-reduce 2(N-1) α + 2(N-1)/N M/B, tree 2 log2(N) α + 2M/B. Above what message size does the ring beat the tree, in MB?"),
    _cross_mb, _cross_envelope,
    lambda s: (f"Set them equal: 2(N-1-log2 N) α = 2M/B (1 - (N-1)/N) = 2M/(NB), so M* = N B α (N - 1 - log2 N) = "
               f"{s['n']} x {fmt(_nic(s)[0] / GB)} GB/s x {fmt(_nic(s)[1] / US)} µs x {fmt(s['n'] - 1 - math.log2(s['n']))} = {fmt(_cross_envelope(s))} MB."),
    "MB", tolerance=0.05,
    why="At line rate the tree gives up only 1/N of the ring's bandwidth, so the crossover is large; NCCL also caps the tree's bus bandwidth at 0.92 of the ring's, which pulls it down several-fold.",
    texts=("A tree priced with the ring's bandwidth term, 2(N-1)/N M/B (as this engine's own collectives.py did before v4), never loses "
           "at any size: the tree moves 2M, reduce then broadcast."),
)


# ---- 5. latency against bandwidth ----------------------------------------------------------------
def _balance_kb(s) -> float:
    b, a, _ = _nic(s)
    cost = x.collective_time("all_reduce", MB, s["n"], a, b)  # linear in M: the bandwidth term per byte
    return cost.latency_s / (cost.bandwidth_s / MB) / KB


BALANCE = Problem(
    "balance", "Latency against bandwidth",
    {"n": (32, 8, 512), "nic": NICS},
    lambda s: (f"A ring all-reduce over {s['n']} ranks on {_nic(s)[2]} ({fmt(_nic(s)[0] / GB)} GB/s each way, α = {fmt(_nic(s)[1] / US)} µs). "
               "At what message size do its latency and bandwidth terms take equal time, in KB?"),
    _balance_kb, lambda s: s["n"] * _nic(s)[1] * _nic(s)[0] / KB,
    lambda s: (f"2(N-1) α = 2(N-1)/N · M/B gives M = N α B = {s['n']} x {fmt(_nic(s)[1] / US)} µs x {fmt(_nic(s)[0] / GB)} GB/s = "
               f"{fmt(s['n'] * _nic(s)[1] * _nic(s)[0] / KB)} KB. It grows with N: a bigger ring needs bigger buckets to stay bandwidth-bound."),
    "KB", tolerance=0.05,
    why="NCCL's LL and LL128 protocols cut the per-hop latency of small messages several-fold, so the measured balance point sits lower.",
)


# ---- 6. the hierarchy across nodes -------------------------------------------------------------
HIER_MODELS = ("llama2-7b", "llama2-13b", "gpt3-175b")


def _hier_parts(s):
    c = _node(s["node"], s["nodes"])
    grads = 2 * Model.get(s["model"]).params  # bf16 gradients
    return c, grads


def _hier_ms(s) -> float:
    c, m = _hier_parts(s)
    return x.collective_time("all_reduce", m, 8 * s["nodes"], c.intra.latency_s, c.intra.bandwidth_bytes_per_s, "hierarchical", 8,
                             c.inter.latency_s, c.inter.bandwidth_bytes_per_s).total_s / MS


def _hier_envelope(s) -> float:
    c, m = _hier_parts(s)
    k, bn, bi, an, ai = s["nodes"], c.intra.bandwidth_bytes_per_s, c.inter.bandwidth_bytes_per_s, c.intra.latency_s, c.inter.latency_s
    return (2 * (7 * an + 7 / 8 * m / bn) + 2 * (k - 1) * ai + 2 * (k - 1) / k * (m / 8) / bi) / MS


def _hier_nccl(s) -> float:
    c, m = _hier_parts(s)
    return x.nccl_collective_time("all_reduce", m, c, 8 * s["nodes"]).total_s / MS


HIERARCHICAL = Problem(
    "hierarchical", "Two levels: NVLink, then the NICs",
    {"node": ("dgx-h100", "dgx-a100"), "nodes": (8, 4, 16), "model": HIER_MODELS},
    lambda s: (f"{s['nodes']} nodes of 8 {_hier_parts(s)[0].gpu.name} all-reduce the bf16 gradients of {s['model']} "
               f"({fmt(_hier_parts(s)[1] / GB)} GB). Inside a node: reduce-scatter, then all-gather, on NVLink "
               f"({fmt(_hier_parts(s)[0].intra.bandwidth_bytes_per_s / GB)} GB/s each way, α = {fmt(_hier_parts(s)[0].intra.latency_s / US)} µs); "
               f"between them each GPU all-reduces its 1/8 shard with its peers of the other nodes on its own NIC "
               f"({fmt(_hier_parts(s)[0].inter.bandwidth_bytes_per_s / GB)} GB/s, α = {fmt(_hier_parts(s)[0].inter.latency_s / US)} µs). "
               "At line rate, how long does it take, in ms?"),
    _hier_ms, _hier_envelope,
    lambda s: ("Reduce-scatter and all-gather in the node: 2 x (7 α_nv + 7/8 M / B_nv); the shard's ring across k nodes: "
               f"2(k-1) α_ib + 2 (k-1)/k (M/8) / B_ib. With M = {fmt(_hier_parts(s)[1] / GB)} GB: {fmt(_hier_envelope(s))} ms."),
    "ms", tolerance=0.05,
    refined=_hier_nccl, refined_label="NCCL's flat ring on these nodes (the engine)",
    why="NCCL's ring crosses each node boundary on all 8 NICs at once and pipelines NVLink and network hops; the three phases here run one after the other.",
)


# ---- 7. algbw and busbw ----------------------------------------------------------------------------
BUSBW = Problem(
    "busbw", "What nccl-tests prints",
    {"n": (16, 8, 64), "algbw": (150, 100, 200)},
    lambda s: (f"nccl-tests reports an algorithm bandwidth (message size over time) of {s['algbw']} GB/s for an all-reduce on {s['n']} GPUs. "
               "What bus bandwidth does it print beside it, in GB/s?"),
    lambda s: busbw_from_algbw("all_reduce", s["algbw"] * GB, s["n"]) / GB,
    lambda s: s["algbw"] * 2 * (s["n"] - 1) / s["n"],
    lambda s: (f"busbw = algbw x 2(N-1)/N = {s['algbw']} x {fmt(2 * (s['n'] - 1) / s['n'])} = {fmt(s['algbw'] * 2 * (s['n'] - 1) / s['n'])} GB/s: "
               "what each rank's link carries, the number to compare with the link's line rate."),
    "GB/s", tolerance=0.02,
    why="busbw is defined so that it does not depend on N: compare it to NVLink's or the NIC's one-way rate.",
)


# ---- 8. a decision: ring or tree ------------------------------------------------------------------
SAME = 0.05  # ring and tree within 5% of each other: "the same"


def _ratio(s) -> float:
    return _ring_us(s) / _tree_us(s)


RING_OR_TREE = Problem(
    "ring_or_tree", "Ring or tree?",
    {"n": (32, 128, 16), "kb": (4096, 1_048_576, 16_777_216), "nic": ("ib-ndr", "ib-hdr")},
    lambda s: (f"{s['n']} ranks, one per node, on {_nic(s)[2]} ({fmt(_nic(s)[0] / GB)} GB/s each way, α = {fmt(_nic(s)[1] / US)} µs): "
               f"which all-reduces {s['kb']:,} KB faster at line rate?"),
    _ratio, lambda s: (2 * (s["n"] - 1) * _nic(s)[1] + 2 * (s["n"] - 1) / s["n"] * s["kb"] * KB / _nic(s)[0]) / (2 * math.log2(s["n"]) * _nic(s)[1] + 2 * s["kb"] * KB / _nic(s)[0]),
    lambda s: (f"Ring over tree = (2(N-1) α + 2(N-1)/N M/B) / (2 log2 N α + 2M/B) = {fmt(_ratio(s))}: "
               + ("the tree is faster (the ring's latency steps dominate)." if _ratio(s) > 1 else "the ring is faster (both are bandwidth-bound and the ring moves fewer bytes).")),
    "x (ring time / tree time)", tolerance=0.05, agree=1e-6,
    options=(Option("ring", "The ring: it moves fewer bytes", "the ring always wins"),
             Option("tree", "The tree: it takes fewer latency steps", "the tree always wins"),
             Option("same", "Within 5% of each other", "the algorithm does not matter")),
    decide=lambda s: "same" if abs(_ratio(s) - 1) < SAME else ("tree" if _ratio(s) > 1 else "ring"),
    why="NCCL makes the same choice per message from its own cost model (auto), with protocols that change the latency terms.",
)

CHAPTER = ProblemSet(
    NAME, "Problem set 1 · Collectives and alpha-beta",
    (RING_NVLINK, TP_TWOWAY, TREE_SMALL, CROSSOVER, BALANCE, HIERARCHICAL, BUSBW, RING_OR_TREE),
    reading="Thakur, Rabenseifner and Gropp 2005; the NCCL tests' PERFORMANCE.md (algbw and busbw); the scaling book's collectives chapter.",
)
VARIANTS = CHAPTER.variants
OUTCOMES = CHAPTER.outcomes_table
LAB = NAME

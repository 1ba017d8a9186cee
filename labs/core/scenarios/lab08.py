"""Lab 08, collectives from one ring step to a training step: its settings, its prediction
options (each naming the misconception it stands for), the claims the engine judges them by, the
tables the lab shows, and the outcome function `python -m labs.grade` recomputes.

Every number here is computed by labs.core.engine.collectives (alpha-beta costs, the ring simulator,
busbw), labs.core.engine.topology (rails, NVLS, tree, pods) and labs.core.engine.perf (the step model), or read
from tests/data/nccl_busbw.json (measured NCCL bus bandwidth, each row with its source).
"""

from __future__ import annotations

import functools
import json
import math
from typing import Callable

import numpy as np

from labs.core.engine.collectives import (
    MAX_BYTES,
    algbw_from_busbw,
    all_reduce_time,
    busbw_from_algbw,
    bytes_sent_per_rank,
    collective_cost,
    parameter_server_cost,
    parameter_server_ingress_bytes,
    ring_clock,
    ring_link_bytes,
    simulate_ring_all_reduce,
)
from labs.core.engine.datafiles import data_dir
from labs.core.engine.dp_scaling import TORCH_DDP
from labs.core.engine.hardware import GPUS, LINKS, Cluster
from labs.core.scenarios.common import Option
from labs.core.engine.topology import bus_bandwidth, collective_columns, group_bus_bandwidth, group_cost
from labs.core.engine.validation import check_choice, check_positive
from labs.core.variants import Choice, LabVariants, Numeric, judged

LAB = "08_collectives"
STEP = "ring"
_DATA = data_dir()  # tests/data, or its copy inside the wheel

# ---- 1. the primitives --------------------------------------------------------------------------
PRIMITIVE_N, PRIMITIVE_BYTES, PRIMITIVE_LINK = 8, 1e9, "nvlink4"  # 1 GB over the 8 GPUs of a DGX H100
# (name, the engine's op for its bytes, who sends, who receives, what each ends with, where training uses it)
PRIMITIVES = (
    ("send / recv", "p2p", "one rank", "one rank", "the receiver has the sender's tensor",
     "PP: activations forward and gradients backward between stages; CP ring attention"),
    ("broadcast", "broadcast", "one rank (the root)", "all ranks", "every rank has the root's tensor",
     "DDP's first step: rank 0's initial weights; a parameter server's pull"),
    ("reduce", "broadcast", "all ranks", "one rank (the root)", "the root has the sum",
     "a parameter server's push (the broadcast's chain run backwards: the same bytes)"),
    ("all-reduce", "all_reduce", "all ranks", "all ranks", "every rank has the sum",
     "DP gradients (DDP); TP without sequence parallelism (Megatron's f and g)"),
    ("reduce-scatter", "reduce_scatter", "all ranks", "all ranks", "each rank has 1/N of the sum",
     "ZeRO-2/3 and FSDP gradients; TP with sequence parallelism"),
    ("all-gather", "all_gather", "all ranks", "all ranks", "every rank has every rank's shard",
     "ZeRO-3 / FSDP weights before forward and backward; ZeRO-1/2 updated weights; TP with SP"),
    ("all-to-all", "all_to_all", "all ranks", "all ranks", "rank i has chunk i of every rank",
     "MoE expert dispatch and combine (EP); DeepSpeed-Ulysses"),
)


def primitive_rows(n: int = PRIMITIVE_N, nbytes: float = PRIMITIVE_BYTES, link: str = PRIMITIVE_LINK) -> list[dict]:
    """Per primitive: bytes each sending rank puts on the wire, and its alpha-beta time on `link`
    at its measured efficiency (labs.core.engine.collectives)."""
    ln = LINKS[link]
    rows = []
    for name, op, sends, receives, ends, use in PRIMITIVES:
        ranks = 2 if op == "p2p" else n
        sent = bytes_sent_per_rank(op, nbytes, ranks)
        cost = collective_cost(op, nbytes, ranks, ln.effective_bytes_per_s, ln.latency_s)
        rows.append({"primitive": name, "op": op, "sends": sends, "receives": receives, "ends": ends, "use": use,
                     "bytes_per_rank": sent, "time_s": cost.total_s})
    return rows


# ---- 2. the ring, step by step ---------------------------------------------------------------------
STEPPER_MAX_RANKS = 16  # the stepper draws at most 16 ranks; larger N is computed, not animated
STEPPER_RANKS = (2, 3, 4, 5, 6, 8, 12, 16)
STEPPER_SIZES = {"1 MB (a small bucket)": 1e6, "25 MB (a DDP bucket)": 25e6, "1 GB": 1e9,
                 "14 GB (Llama 2 7B's bf16 gradients)": 14e9}
STEPPER_LINKS = ("nvlink4", "nvlink3", "pcie4", "ib-ndr")
STEPPER_DEFAULT_SIZE = "1 GB"
RING_COMPUTED_N = (2, 4, 8, 16, 64, 256, 1024)  # the "larger N is computed" table

RING_MESSAGE, RING_N_SMALL, RING_N_LARGE = 1e9, 8, 1024
# The lab before per-student variants asked this as options (older ledgers are graded against
# them); a variant asks for the bytes, typed in.
RING_OPTIONS = (
    Option("A", "It grows in proportion to N: each GPU must hear from every other GPU", "ring bytes grow with N"),
    Option("B", "It grows a little, then levels off just under twice the message", "the ring sends twice the message"),
    Option("C", "It shrinks like 1/N: more GPUs, smaller chunks", "smaller chunks mean fewer bytes"),
    Option("D", "It stays at exactly one message: each GPU sends its gradient once", "all-reduce sends the message once"),
)


def ring_facts() -> dict:
    small = bytes_sent_per_rank("all_reduce", RING_MESSAGE, RING_N_SMALL)
    large = bytes_sent_per_rank("all_reduce", RING_MESSAGE, RING_N_LARGE)
    return {"message": RING_MESSAGE, "small": small, "large": large, "ratio": large / small}


RING_CLAIMS: dict[str, Callable[[dict], bool]] = {
    "A": lambda f: f["ratio"] > 0.5 * RING_N_LARGE / RING_N_SMALL,
    "B": lambda f: 1 < f["ratio"] < 1.2 and f["large"] <= 2 * f["message"],
    "C": lambda f: f["ratio"] < 1,
    "D": lambda f: f["small"] == f["large"] == f["message"],
}


def ring_answer() -> str | None:
    facts = ring_facts()
    return next((k for k, claim in RING_CLAIMS.items() if claim(facts)), None)


def ring_explanations() -> dict[str, str]:
    f = ring_facts()
    m = f["message"] / 1e9
    small, large = f["small"] / 1e9, f["large"] / 1e9
    return {
        "A": f"that is the parameter server's ingress, not the ring's: each ring rank sends {small:.2f} GB at N = {RING_N_SMALL} and {large:.3f} GB at N = {RING_N_LARGE}, {f['ratio']:.2f}x, not {RING_N_LARGE // RING_N_SMALL}x.",
        "B": f"2(N-1)/N x M: {small:.2f} GB at N = {RING_N_SMALL}, {large:.3f} GB at N = {RING_N_LARGE}, never more than {2 * m:.0f} GB for a {m:.0f} GB message.",
        "C": f"the chunks shrink as 1/N but there are 2(N-1) steps of them: {large:.3f} GB at N = {RING_N_LARGE}, more than {small:.2f} GB at N = {RING_N_SMALL}.",
        "D": f"one message out is only half the job: the reduce-scatter sends (N-1)/N of it and the all-gather as much again, {small:.2f} GB at N = {RING_N_SMALL}.",
    }


def check_ring_inputs(inputs: dict) -> None:
    """The stepper's inputs as the lab allows them: 2-16 ranks, a step in 0..2(N-1), a message of
    at most MAX_BYTES, a link of STEPPER_LINKS."""
    n, step = inputs["n"], inputs["step"]
    check_positive("n", n, integer=True, maximum=STEPPER_MAX_RANKS)
    if n < 2:
        raise ValueError(f"n must be at least 2 ranks, got {n}")
    check_positive("step", step, integer=True, allow_zero=True, maximum=2 * (n - 1))
    check_positive("nbytes", inputs["nbytes"], maximum=MAX_BYTES)
    check_choice("link", inputs["link"], STEPPER_LINKS)


def ring_state(n: int, nbytes: float, link: str, step: int) -> dict:
    """What the stepper shows after `step` steps (0: before the first): each rank's share of each
    chunk's sum, the chunk each rank sends in that step and the bytes on every link, the bytes
    each rank has sent so far beside the closed form's share, and the clock on `link`."""
    check_ring_inputs({"n": n, "nbytes": nbytes, "link": link, "step": step})
    ln = LINKS[link]
    steps = simulate_ring_all_reduce(n, nbytes)
    clock = ring_clock(nbytes, n, ln.effective_bytes_per_s, ln.latency_s)
    current = steps[step - 1] if step else None
    holds = current.holds if current else tuple((1,) * n for _ in range(n))
    return {
        "n": n, "step": step, "steps": len(steps),
        "phase": current.phase if current else "start",
        "sends": current.sends if current else None,
        "holds": holds,
        "link_bytes": ring_link_bytes(n, nbytes) if current else tuple([0.0] * n),
        "chunk_bytes": steps[0].bytes_sent_per_rank,
        "sent_so_far": sum(s.bytes_sent_per_rank for s in steps[:step]),
        "sent_total": bytes_sent_per_rank("all_reduce", nbytes, n),
        "clock_s": clock[step - 1] if step else 0.0,
        "all_reduce_time_s": all_reduce_time(nbytes, n, ln.effective_bytes_per_s, ln.latency_s),
        "link_name": ln.name, "bandwidth": ln.effective_bytes_per_s, "latency_s": ln.latency_s,
    }


def ring_computed_rows(nbytes: float, link: str, ns=RING_COMPUTED_N) -> list[dict]:
    """Bytes per rank and ring time for N beyond what the stepper draws."""
    ln = LINKS[link]
    return [{"n": n, "bytes_per_rank": bytes_sent_per_rank("all_reduce", nbytes, n),
             "time_s": all_reduce_time(nbytes, n, ln.effective_bytes_per_s, ln.latency_s),
             "latency_s": collective_cost("all_reduce", nbytes, n, ln.effective_bytes_per_s, ln.latency_s).latency_s} for n in ns]


# ---- 3. parameter server against the ring -----------------------------------------------------------
PS_SERVER_LINK = "ib-ndr"  # one 400 Gb/s NIC on the server
PS_WORKER_LINKS = ("ib-hdr", "ib-ndr")
PS_SIZES = {"25 MB (a DDP bucket)": 25e6, "1 GB": 1e9, "14 GB (Llama 2 7B's bf16 gradients)": 14e9}
PS_N = (2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256, 512, 1024)


def ps_vs_ring(nbytes: float, worker_link: str, ns=PS_N, server_link: str = PS_SERVER_LINK) -> dict:
    """Time of one gradient exchange for N workers: a single server on `server_link` against a
    ring over the workers' `worker_link` (each at its measured efficiency); the server's ingress
    bytes against a ring rank's, and the first N from which the ring is faster."""
    s, w = LINKS[server_link], LINKS[worker_link]
    rows = []
    for n in ns:
        rows.append({
            "n": n,
            "ps_s": parameter_server_cost(nbytes, n, s.effective_bytes_per_s, s.latency_s).total_s,
            "ring_s": all_reduce_time(nbytes, n, w.effective_bytes_per_s, w.latency_s),
            "server_bytes": parameter_server_ingress_bytes(nbytes, n),
            "ring_bytes": bytes_sent_per_rank("all_reduce", nbytes, n),
        })
    return {"rows": rows, "crossover": ps_crossover(nbytes, worker_link, server_link, max(ns)), "server": s.name, "worker": w.name,
            "server_gbs": s.effective_bytes_per_s / 1e9, "worker_gbs": w.effective_bytes_per_s / 1e9}


def ps_crossover(nbytes: float, worker_link: str, server_link: str = PS_SERVER_LINK, limit: int = 1 << 16) -> int | None:
    """The fewest workers (N >= 2) at which the ring beats the single server."""
    s, w = LINKS[server_link], LINKS[worker_link]
    for n in range(2, limit + 1):
        if all_reduce_time(nbytes, n, w.effective_bytes_per_s, w.latency_s) < parameter_server_cost(nbytes, n, s.effective_bytes_per_s, s.latency_s).total_s:
            return n
    return None


# ---- 4. latency against bandwidth --------------------------------------------------------------------
# label -> (cluster, nodes, ranks)
LB_SETUPS = {
    "8 H100, one DGX": ("dgx-h100", 1, 8),
    "8 A100, one DGX": ("dgx-a100", 1, 8),
    "1,024 H100, 128 DGX nodes": ("dgx-h100", 128, 1024),
}
LB_SIZES = np.logspace(3, 10, 36)  # 1 KB to 10 GB
LB_ALGORITHMS = ("ring", "tree", "nvls")

BUCKET_BYTES, BUCKET_SETUP = 1e6, "1,024 H100, 128 DGX nodes"
BUCKET_OPTIONS = (
    Option("A", "Ring: it is bandwidth-optimal, so it wins at this size as well", "bandwidth-optimal means fastest at every size"),
    Option("B", "Tree: its latency grows with log N, not with N", "the tree wins at any size"),
    Option("C", "NVLS: the switch does the adding, so it wins here as well", "in-switch reduction is fastest everywhere"),
    Option("D", "About the same: at this size the algorithm barely matters", "the algorithm does not matter for small messages"),
)


def lb_cluster(setup: str) -> tuple[Cluster, int]:
    key, nodes, n = LB_SETUPS[setup]
    return Cluster.get(key, nodes=nodes), n


def lb_algorithms(cluster: Cluster) -> tuple[str, ...]:
    return tuple(a for a in LB_ALGORITHMS if a != "nvls" or cluster.intra.nvls_bytes_per_s)


def lb_curves(setup: str, sizes=LB_SIZES) -> dict:
    """Per algorithm: all-reduce time and busbw over message sizes, with the size at which its
    latency term equals its bandwidth term (alpha-bound below, beta-bound above)."""
    cluster, n = lb_cluster(setup)
    sizes = np.asarray(sizes, dtype=float)
    out = {}
    for alg in lb_algorithms(cluster):
        lat, bw = collective_columns("all_reduce", sizes, cluster, n, 1, alg)
        t = lat + bw
        busbw = np.array([busbw_from_algbw("all_reduce", s / x, n) for s, x in zip(sizes, t)])
        per_byte = float(bw[-1] / sizes[-1])
        out[alg] = {"sizes": sizes, "time_s": t, "busbw": busbw, "crossover_bytes": float(lat[-1]) / per_byte,
                    "peak_busbw": float(group_bus_bandwidth(cluster, n, 1, alg))}
    return out


def measured_busbw(setup: str) -> dict:
    """tests/data/nccl_busbw.json's measured rows for this setup: curves (size -> busbw) by
    algorithm and single points."""
    data = json.loads((_DATA / "nccl_busbw.json").read_text())
    key, nodes, n = LB_SETUPS[setup]
    curves = {c["algorithm"]: ({int(k): v * 1e9 for k, v in c["busbw_gbs"].items()}, c["source"])
              for c in data["single_node_curves"] if c["cluster"] == key and c["gpus"] == n}
    points = [p for p in data["points"] if p["cluster"] == key and p["gpus"] == n and p.get("stride", 1) == 1]
    return {"curves": curves, "points": points}


def nccl_point(point_id: str) -> dict:
    data = json.loads((_DATA / "nccl_busbw.json").read_text())
    return next(p for p in data["points"] if p["id"] == point_id)


def bucket_cluster(nodes: int | None = None) -> tuple[Cluster, int]:
    """The bucket question's cluster: BUCKET_SETUP's, or that many DGX H100 nodes."""
    if nodes is None:
        return lb_cluster(BUCKET_SETUP)
    return Cluster.get("dgx-h100", nodes=nodes), 8 * nodes


def bucket_times(nbytes: float = BUCKET_BYTES, setup: str = BUCKET_SETUP, nodes: int | None = None) -> dict[str, float]:
    cluster, n = bucket_cluster(nodes) if nodes is not None else lb_cluster(setup)
    return {alg: group_cost("all_reduce", nbytes, cluster, n, 1, alg).total_s for alg in lb_algorithms(cluster)}


def bucket_facts(nbytes: float = BUCKET_BYTES, nodes: int | None = None) -> dict:
    """The algorithms' times for the bucket; the fastest, and how far ahead of the next it is."""
    t = bucket_times(nbytes, nodes=nodes)
    ranked = sorted(t.values())
    return {"times": t, "fastest": min(t, key=t.get), "spread": max(t.values()) / min(t.values()), "lead": ranked[1] / ranked[0]}


BUCKET_CLAIMS: dict[str, Callable[[dict], bool]] = {
    "A": lambda f: f["fastest"] == "ring" and f["spread"] >= 1.1,
    "B": lambda f: f["fastest"] == "tree" and f["spread"] >= 1.1,
    "C": lambda f: f["fastest"] == "nvls" and f["spread"] >= 1.1,
    "D": lambda f: f["spread"] < 1.1,
}


def bucket_answer(nbytes: float = BUCKET_BYTES, nodes: int | None = None) -> str | None:
    facts = bucket_facts(nbytes, nodes)
    return next((k for k, claim in BUCKET_CLAIMS.items() if claim(facts)), None)


def bucket_explanations(nbytes: float = BUCKET_BYTES, nodes: int | None = None) -> dict[str, str]:
    f = bucket_facts(nbytes, nodes)
    t = {k: v * 1e6 for k, v in f["times"].items()}
    cluster, n = bucket_cluster(nodes)
    lat = {a: group_cost("all_reduce", nbytes, cluster, n, 1, a).latency_s * 1e6 for a in t}
    return {
        "A": f"bandwidth-optimal is the beta term only; at {nbytes / 1e6:g} MB on {n:,} GPUs the ring's 2(N-1) steps cost {lat['ring']:,.0f} µs of latency even on NCCL's low-latency LL protocol, {t['ring']:,.0f} µs in all.",
        "B": f"the tree's 2 x ({cluster.gpus_per_node - 1} NVLink + log2({cluster.nodes}) network) hops cost {lat['tree']:,.0f} µs: {t['tree']:,.0f} µs in all, {t['ring'] / t['tree']:.0f}x faster than the ring.",
        "C": f"in-switch reduction raises the bandwidth inside each node; across nodes NVLS runs as NVLSTree, whose per-level latency is higher than the tree's on small messages: {t['nvls']:,.0f} µs." if "nvls" in t else "this cluster has no NVLS.",
        "D": f"the algorithms differ {f['spread']:.0f}x here: a small message is all latency, and latency is what the algorithm decides.",
    }


# ---- 5. algbw against busbw ---------------------------------------------------------------------------
BUSBW_BYTES = 4 * 2**30  # nccl-tests' 4 GB row
BUSBW_N = (2, 4, 8, 16, 64, 1024)


def busbw_rows(nbytes: float = BUSBW_BYTES, ns=BUSBW_N, cluster_key: str = "dgx-h100") -> list[dict]:
    """What nccl-tests would print for a ring all-reduce of nbytes over N H100s (whole DGX nodes
    past 8): time from the engine, algbw = S/t, busbw = algbw x 2(N-1)/N."""
    rows = []
    for n in ns:
        cluster = Cluster.get(cluster_key, nodes=max(1, math.ceil(n / 8)))
        t = group_cost("all_reduce", nbytes, cluster, n, 1, "ring").total_s
        algbw = nbytes / t
        rows.append({"n": n, "time_s": t, "algbw": algbw, "busbw": busbw_from_algbw("all_reduce", algbw, n),
                     "factor": busbw_from_algbw("all_reduce", 1.0, n)})
    return rows


def nvls_busbw_note(cluster_key: str = "dgx-h100", n: int = 8) -> dict:
    """NVLS on 8 H100s: the engine's busbw, the algbw behind it, and NVLink's line rate each way."""
    cluster = Cluster.get(cluster_key)
    bus = group_bus_bandwidth(cluster, n, 1, "nvls")
    return {"busbw": float(bus), "algbw": algbw_from_busbw("all_reduce", float(bus), n), "line": cluster.intra.bandwidth_bytes_per_s,
            "n": n, "gpu": cluster.gpu.name}


# ---- 6. across nodes: rails, the NIC cliff, NVL72 --------------------------------------------------------
RAILS_BYTES = 4 * 2**30
# label, nodes, ranks, stride, measured point id in nccl_busbw.json
RAILS_CASES = (
    ("8 GPUs in one node (NVLink)", 1, 8, 1, "h100_ring_8gpu"),
    ("16 GPUs, two whole nodes: a DP ring", 2, 16, 1, "h100_2node_8ndr"),
    ("2 GPUs, one per node: DP behind TP = 8 (one rail)", 2, 2, 8, "ndr_per_nic"),
)
NVL72_GPUS = 72  # GB200 NVL72: 18 trays of 4 GB200 in one NVLink 5 domain (hardware.CLUSTERS["gb200-nvl72"], pf_gb200_nvl72_*)
NVL72_GROUPS = (8, 16, 64, 72, 144)  # 144: two racks, joined by their NICs
# Measured all-reduce busbw of whole GB200 NVL72 racks at RAILS_BYTES (4 GiB), NCCL 2.26.2, NCCL's own
# algorithm (CoreWeave nccl-tests README; tests/data/kernel_benchmarks_v4.json
# nccl_gb200_nvl72_1rack_allreduce_4294967296, nccl_gb200_nvl72_2racks_allreduce_4294967296).
NVL72_MEASURED_BUSBW = {72: 839.16e9, 144: 743.09e9}
NVL72_MEASURED_SOURCE = "CoreWeave nccl-tests, GB200 NVL72, NCCL 2.26.2"


def rails_rows(nbytes: float = RAILS_BYTES) -> list[dict]:
    """Two DGX H100 nodes: ring busbw of each group, the NICs it crosses nodes on, and NCCL's
    measured figure (tests/data/nccl_busbw.json)."""
    rows = []
    for label, nodes, n, stride, point in RAILS_CASES:
        cluster = Cluster.get("dgx-h100", nodes=nodes)
        g = min(n, max(1, cluster.gpus_per_node // stride))
        crosses = nodes > 1 and n > g
        measured = nccl_point(point)
        rows.append({"label": label, "n": n, "stride": stride, "nics": cluster.rails * g / cluster.gpus_per_node if crosses else 0,
                     "busbw": bus_bandwidth("all_reduce", nbytes, cluster, n, stride, "ring"),
                     "measured": measured["busbw_gbs"] * 1e9, "source": measured["source"]})
    return rows


def tp_cliff() -> dict:
    """Lab 05 Act II's GPT-3 175B on 1,024 H100s (Megatron-Core 2024): TP = 8 inside a node against
    TP = 16 across two nodes, from the step model."""
    from labs.core.engine.perf import estimate
    from labs.core.scenarios.lab05 import ACT2_DESIGNS, design_inputs

    model, cluster = design_inputs()
    out = {}
    for key in ("C", "A"):
        est = estimate(model, cluster, ACT2_DESIGNS[key])
        out[est.plan.tp] = {"tp_comm_s": est.time.tp_comm, "step_s": est.step_time_s, "mfu": est.mfu, "tp_bytes": est.comm_bytes_per_gpu["tp"],
                            "plan": est.plan, "compute_s": est.time.compute, "estimate": est}
    out["model"], out["gpus"], out["stack"] = model.name, cluster.gpus, ACT2_DESIGNS["C"].stack
    return out


def nvl72_cluster(racks: int = 1) -> Cluster:
    """GB200 NVL72 racks from the catalog: 72 GB200s per NVLink 5 domain, 4 per host (tray), one
    ConnectX-7 NIC per GPU to the scale-out fabric."""
    return Cluster.get("gb200-nvl72", domains=racks)


def nvl72_rows(nbytes: float = RAILS_BYTES, groups=NVL72_GROUPS) -> list[dict]:
    """All-reduce busbw of a group of n GPUs on DGX B200 nodes (8 per NVLink domain, the NICs between
    them) against GB200 NVL72 racks (72 per domain): the ring, and NCCL's pick ("auto": NVLS where
    the switch can add, NVLSTree or the tree across domains), with the measured rack rows."""
    rows = []
    for n in groups:
        rack, dgx = nvl72_cluster(math.ceil(n / NVL72_GPUS)), Cluster.get("dgx-b200", nodes=math.ceil(n / 8))
        rows.append({"n": n, "dgx": bus_bandwidth("all_reduce", nbytes, dgx, n, 1, "ring"),
                     "dgx_auto": bus_bandwidth("all_reduce", nbytes, dgx, n, 1, "auto"),
                     "nvl72": bus_bandwidth("all_reduce", nbytes, rack, n, 1, "ring"),
                     "nvl72_auto": bus_bandwidth("all_reduce", nbytes, rack, n, 1, "auto"),
                     "dgx_nodes": dgx.nodes, "node_gpus": dgx.domain_gpus, "racks": rack.domains,
                     "measured": NVL72_MEASURED_BUSBW.get(n) if nbytes == RAILS_BYTES else None})
    return rows


def nvl72_confidence() -> dict:
    """What the NVL72 section rests on: the measured NVLink 5 figures (hardware.LINKS["nvlink5"]) and
    the catalog's unconfirmed constants for GB200, B200, NVLink 5 and the two hosts
    (validate.unconfirmed_constants, tests/test_unconfirmed.py)."""
    from labs.core.engine.validate import unconfirmed_constants

    link = LINKS["nvlink5"]
    notes = [(which, why) for which, why in unconfirmed_constants()
             if which.split()[:2] in (["gpu", "gb200"], ["gpu", "b200"], ["link", "nvlink5"])]
    return {"ring_busbw": link.bandwidth_bytes_per_s * link.efficiency, "nvls_busbw": link.nvls_bytes_per_s,
            "line": link.bandwidth_bytes_per_s, "mamf_gb200": GPUS["gb200"].mamf_flops, "mamf_b200": GPUS["b200"].mamf_flops,
            "gpu_fields": {GPUS[key].name: sorted(which.split()[2] for which, _ in notes if which.split()[:2] == ["gpu", key])
                           for key in ("gb200", "b200")},
            "nvls_assumed_on_hgx": any(which == "link nvlink5" for which, _ in notes)}


# ---- 7. the two-GPU milestone (seeds/001 week 21) ---------------------------------------------------------
MILESTONE_MODEL = "seed-100m"
MILESTONE_SETUPS = {"PCIe (2 x A100 PCIe)": "pcie-a100", "NVLink (2 x A100 SXM)": "dgx-a100"}
MILESTONE_MICROBATCHES = (1, 2, 4, 8, 16, 32)
MILESTONE_SIZE_MODELS = ("seed-12l-512", "seed-100m")  # two small catalog models: does the threshold move with size?
MILESTONE_BUCKET_BYTES = TORCH_DDP["bucket_bytes"]  # PyTorch DDP's fp32 gradients in 25 MiB buckets (labs.core.engine.dp_scaling)
SEED_PCIE_OVERHEAD = (0.20, 0.40)  # seeds/001 week 21: "approximately 20-40% to step time" over PCIe
SEED_NVLINK_OVERHEAD = (0.05, 0.10)  # "drops to 5-10%" over NVLink
SEED_COMPUTE_MS, SEED_COMM_MS = 10.0, 8.0  # the seed's worked example


def communication_efficiency(compute_s: float, exposed_s: float) -> float:
    """seeds/001 week 21: compute / (compute + exposed communication)."""
    return compute_s / (compute_s + exposed_s)


@functools.lru_cache(maxsize=256)
def _ddp_estimate(key: str, gpus: int, micro_batch: int, overlap: bool, model_key: str):
    """PyTorch DDP on `gpus` GPUs of the catalog's `key` machine (the step model; remembered, since
    the lab's tables ask for the same few settings again on every slider move)."""
    from labs.core.engine.models import Model
    from labs.core.engine.perf import Plan, estimate

    plan = Plan(dp=gpus, micro_batch=micro_batch, global_batch=gpus * micro_batch, zero_stage=0, dp_overlap=gpus > 1 and overlap,
                **TORCH_DDP)
    return estimate(Model.get(model_key), Cluster.get(key, gpus_per_node=gpus), plan)


def milestone_estimates(setup: str, micro_batch: int, overlap: bool, model_key: str = MILESTONE_MODEL) -> dict:
    """DDP on 2 GPUs against 1 GPU at the same per-GPU batch: compute, exposed all-reduce, the
    seed's efficiency, the step-time overhead, and the speed-up on the same data."""
    key = MILESTONE_SETUPS[setup]
    two = _ddp_estimate(key, 2, int(micro_batch), bool(overlap), model_key)
    one = _ddp_estimate(key, 1, int(micro_batch), False, model_key)
    return {
        "setup": setup, "model": two.model.name, "params": two.model.params, "tokens_per_gpu": micro_batch * two.model.seq_len,
        "compute_s": two.time.compute, "exposed_s": two.time.dp_comm, "comm_s": two.dp_comm_cost.total_s,
        "step2_s": two.step_time_s, "step1_s": one.step_time_s,
        "efficiency": communication_efficiency(two.time.compute, two.time.dp_comm),
        "overhead": two.step_time_s / one.step_time_s - 1,
        "speedup": 2 * one.step_time_s / two.step_time_s,
        "fits": two.fits and one.fits,
    }


def seed_ranges(model_key: str = MILESTONE_MODEL, mbs=MILESTONE_MICROBATCHES) -> list[dict]:
    """Where the seed's overheads hold: for each link and overlap setting, the micro-batches (and
    tokens per GPU) at which the engine's overhead falls inside the seed's range."""
    out = []
    for setup, (lo, hi) in zip(MILESTONE_SETUPS, (SEED_PCIE_OVERHEAD, SEED_NVLINK_OVERHEAD)):
        for overlap in (False, True):
            ests = [milestone_estimates(setup, mb, overlap, model_key) for mb in mbs]
            inside = [e for mb, e in zip(mbs, ests) if lo <= e["overhead"] <= hi]
            out.append({"setup": setup, "overlap": overlap, "range": (lo, hi), "inside": [e["tokens_per_gpu"] for e in inside],
                        "overheads": [(e["tokens_per_gpu"], e["overhead"]) for e in ests]})
    return out


def seed_example(model_key: str = MILESTONE_MODEL, mbs=MILESTONE_MICROBATCHES) -> dict:
    """The seed's 10 ms + 8 ms example: its efficiency, and the PCIe setting without overlap whose
    exposed / compute ratio is nearest 8/10."""
    target = SEED_COMM_MS / SEED_COMPUTE_MS
    setup = next(iter(MILESTONE_SETUPS))
    ests = [milestone_estimates(setup, mb, False, model_key) for mb in mbs]
    best = min(ests, key=lambda e: abs(e["exposed_s"] / e["compute_s"] - target))
    return {"efficiency": communication_efficiency(SEED_COMPUTE_MS, SEED_COMM_MS), "nearest": best}


def fewest_tokens_to_win(setup: str, overlap: bool, model_key: str, mbs=MILESTONE_MICROBATCHES) -> int | None:
    """The fewest tokens per GPU at which 2 GPUs get through the same data faster than 1."""
    for mb in mbs:
        e = milestone_estimates(setup, mb, overlap, model_key)
        if e["speedup"] > 1:
            return e["tokens_per_gpu"]
    return None


# ---- the ledger step and the grader ------------------------------------------------------------------------
def ring_outcomes(inputs: dict, predictions: dict, variant=None) -> dict:
    check_ring_inputs(inputs)
    state = ring_state(int(inputs["n"]), float(inputs["nbytes"]), inputs["link"], int(inputs["step"]))
    return {
        "bytes_sent_per_rank": state["sent_total"],
        "bytes_sent_so_far": state["sent_so_far"],
        "clock_s": state["clock_s"],
        "all_reduce_time_s": state["all_reduce_time_s"],
        "ring_correct": judged(variant, "ring", predictions, lambda a: a == ring_answer()),
        "bucket_correct": judged(variant, "bucket", predictions, lambda a: a == bucket_answer()),
    }


OUTCOMES = {(LAB, STEP): ring_outcomes}


# ---- per-student variants (labs.variants) ------------------------------------------------------
# The ring question's message and ranks (not 1 GB: the primitives table prices that one; ranks
# few enough that 2(N-1)/N stays 6% or more below "twice the message"), the bucket question's
# size and nodes (the tree leads the next algorithm by 2x or more there).
VARIANT_RING_GB = (2, 4, 14)
VARIANT_RING_N = (4, 6, 12, 16)
VARIANT_BUCKET_BYTES = (256e3, 1e6, 4e6)
VARIANT_BUCKET_NODES = (32, 64, 128, 256)
RING_TOLERANCE = 0.03  # of the bytes: "twice the message" is 6.7% off at N = 16


def draw_settings_v1(d) -> dict:
    return {"ring_gb": d.choice("ring_gb", VARIANT_RING_GB), "ring_n": d.choice("ring_n", VARIANT_RING_N),
            "bucket_bytes": d.choice("bucket_bytes", VARIANT_BUCKET_BYTES), "bucket_nodes": d.choice("bucket_nodes", VARIANT_BUCKET_NODES)}


def build_questions_v1(s: dict) -> dict:
    nbytes, nodes = float(s["bucket_bytes"]), int(s["bucket_nodes"])
    cluster, ranks = bucket_cluster(nodes)
    return {
        "ring": ring_question(s),
        "bucket": Choice(
            f"A {nbytes / 1e6:g} MB gradient bucket is all-reduced over {ranks:,} H100s ({cluster.nodes} DGX nodes). Which algorithm finishes first?",
            BUCKET_OPTIONS, bucket_answer(nbytes, nodes), bucket_explanations(nbytes, nodes),
        ),
    }


def ring_question(s: dict) -> Numeric:
    gb, n = float(s["ring_gb"]), int(s["ring_n"])
    sent = bytes_sent_per_rank("all_reduce", gb * 1e9, n) / 1e9
    return Numeric(
            f"Each GPU all-reduces a {gb:g} GB gradient with a ring over {n:,} GPUs. How many GB does each GPU send? "
            f"Type a number (right within {RING_TOLERANCE:.0%}).",
            sent, RING_TOLERANCE * sent, "GB",
            f"2(N-1)/N x M = 2 x {n - 1:,}/{n:,} x {gb:g} GB = **{sent:.3f} GB**: the reduce-scatter sends (N-1)/N of the message "
            f"and the all-gather as much again, just under twice the message at any N.",
        )


# ---- variants, second edition: which algorithm wins depends on the bucket and the group ---------------
# The first edition always asked across nodes with small buckets, so the tree won for every
# student. Now half the students reduce their bucket inside one node (HSDP's shard group: 8 H100s
# on NVLink), the other half across the whole job. Across nodes a 0.25-4 MB bucket is latency,
# and the tree's log N steps win (2x or more); inside one node a 256 KB bucket goes fastest on the
# ring (LL's 0.6 us hops; the tree's latency, fewer bytes; NVLS's switch round trip costs more
# latency than both) and a 64-256 MB one on NVLS, whose switch does the adding (20% or more ahead
# of the next). The second edition drew 1 MB inside the node: since NCCL's measured ramp and NVLS's
# tuning.cc latency (issue 37: an 8x H200 NVLS all-reduce of 1 MB takes 35 us) the ring and NVLS
# finish it within 6% of each other, so the third edition draws 256 KB there.
BUCKET_GROUPS = ("node", "job")
VARIANT_NODE_BUCKET_BYTES_V2 = (1e6, 64e6, 256e6)
VARIANT_NODE_BUCKET_BYTES = (256e3, 64e6, 256e6)
BUCKET_LEAD = 1.2  # the winner is at least this much faster than the next algorithm
BUCKET_STEP_OPTIONS = (
    Option("A", "Ring: the fewest bytes per GPU of the point-to-point algorithms", "bandwidth-optimal means fastest at every size"),
    Option("B", "Tree: the fewest latency steps, about 2 log2 N across nodes", "the tree wins at any size"),
    Option("C", "NVLS: the NVSwitch adds the data, so the GPUs move fewer bytes", "in-switch reduction is fastest everywhere"),
    Option("D", "About the same: at this size the algorithm barely matters", "the algorithm does not matter at this size"),
)
ALGORITHM_OPTION = {"ring": "A", "tree": "B", "nvls": "C"}


def bucket_step_options(group: str) -> tuple[Option, ...]:
    """BUCKET_STEP_OPTIONS worded by placement (P7, review 38bda0b): inside one node the tree's
    steps are not "across nodes"."""
    if group != "node":
        return BUCKET_STEP_OPTIONS
    return tuple(Option(o.key, "Tree: the fewest latency steps, about 2 log2 N of the node's GPUs", o.misconception) if o.key == "B" else o
                 for o in BUCKET_STEP_OPTIONS)


def bucket_group_cluster(nodes: int, group: str) -> tuple[Cluster, int]:
    """The group a bucket is reduced over: the 8 GPUs of one DGX H100 node, or all `nodes` nodes."""
    check_choice("group", group, BUCKET_GROUPS)
    return bucket_cluster(1 if group == "node" else nodes)


def bucket_group_facts(nbytes: float, nodes: int, group: str) -> dict:
    """Each algorithm's (latency, bandwidth) cost of the bucket over the group; the fastest and its lead."""
    cluster, n = bucket_group_cluster(nodes, group)
    costs = {alg: group_cost("all_reduce", nbytes, cluster, n, 1, alg) for alg in lb_algorithms(cluster)}
    t = {alg: c.total_s for alg, c in costs.items()}
    ranked = sorted(t.values())
    return {"costs": costs, "times": t, "fastest": min(t, key=t.get), "spread": ranked[-1] / ranked[0], "lead": ranked[1] / ranked[0], "ranks": n}


BUCKET_STEP_CLAIMS: dict[str, Callable[[dict], bool]] = {
    **{key: (lambda f, alg=alg: f["fastest"] == alg and f["spread"] >= 1.1) for alg, key in ALGORITHM_OPTION.items()},
    "D": lambda f: f["spread"] < 1.1,
}


def bucket_group_answer(nbytes: float, nodes: int, group: str) -> str | None:
    facts = bucket_group_facts(nbytes, nodes, group)
    held = [k for k, claim in BUCKET_STEP_CLAIMS.items() if claim(facts)]
    return held[0] if len(held) == 1 else None


def bucket_group_explanations(nbytes: float, nodes: int, group: str) -> dict[str, str]:
    """Each option's line at the student's bucket and group: every algorithm's latency and bandwidth terms."""
    f = bucket_group_facts(nbytes, nodes, group)
    best, t = f["fastest"], f["times"]

    def line(alg: str) -> str:
        c = f["costs"][alg]
        verdict = f"the fastest, {f['lead']:.1f}x ahead of the next" if alg == best else f"{t[alg] / t[best]:.1f}x the {best}'s time"
        return f"{c.latency_s * 1e6:,.0f} µs of latency and {c.bandwidth_s * 1e6:,.0f} µs moving bytes, {t[alg] * 1e6:,.0f} µs in all: {verdict}."

    size = f"{nbytes / 1e6:g} MB on {f['ranks']:,} GPUs"
    return {
        "A": f"the ring's 2(N-1) steps at {size}: {line('ring')}",
        "B": f"the tree's hops at {size}: {line('tree')}",
        "C": f"NVLS at {size}: {line('nvls')}" if "nvls" in t else "this cluster has no NVLS.",
        "D": f"the algorithms' times differ {f['spread']:.1f}x here: which one runs matters.",
    }


def draw_settings_v2(d) -> dict:
    return _draw(d, VARIANT_NODE_BUCKET_BYTES_V2)


def draw_settings(d) -> dict:
    return _draw(d, VARIANT_NODE_BUCKET_BYTES)


def _draw(d, node_bucket_bytes) -> dict:
    group = d.choice("bucket_group", BUCKET_GROUPS)
    job_bytes, node_bytes = d.choice("bucket_bytes", VARIANT_BUCKET_BYTES), d.choice("node_bucket_bytes", node_bucket_bytes)
    return {"ring_gb": d.choice("ring_gb", VARIANT_RING_GB), "ring_n": d.choice("ring_n", VARIANT_RING_N),
            "bucket_bytes": node_bytes if group == "node" else job_bytes, "bucket_nodes": d.choice("bucket_nodes", VARIANT_BUCKET_NODES),
            "bucket_group": group}


def build_questions(s: dict) -> dict:
    return {"ring": ring_question(s), "bucket": _bucket_question(float(s["bucket_bytes"]), int(s["bucket_nodes"]), s["bucket_group"])}


@functools.lru_cache(maxsize=256)  # 3 of a variant's 5 settings: ledgers of editions 2 and 3 share few buckets
def _bucket_question(nbytes: float, nodes: int, group: str) -> Choice:
    cluster, ranks = bucket_group_cluster(nodes, group)
    where = (f"inside one DGX H100 node, over its {ranks} GPUs on NVLink (a hybrid-sharded job's shard group)" if group == "node"
             else f"over all {ranks:,} H100s of the job ({cluster.nodes} DGX nodes)")
    return Choice(
        f"A {nbytes / 1e6:g} MB gradient bucket is all-reduced {where}. Which algorithm finishes first?",
        bucket_step_options(group), bucket_group_answer(nbytes, nodes, group), bucket_group_explanations(nbytes, nodes, group),
    )


# ---- variants, fourth edition: each of the four options is right for a quarter of the cases ---------
# Edition 3's key was the tree for every job-wide bucket and the ring or NVLS inside a node, and
# "About the same" was never right: three keys over four options, the tree right for 55% of ids and
# recognisable by its label (the placement-worded tree option was the second shortest exactly when
# it was right: 85% of ids; issue 38 item 2). Edition 4 draws the machine too, a DGX H100 or a
# DGX A100 (whose NVSwitch cannot add: no NVLS), and the bucket's case from twelve, three per
# option: the tree across the job (0.25-4 MB), the ring on 0.25-0.5 MB inside either node, NVLS
# on 4-256 MB inside an H100 node, and about the same on 4-32 MB inside an A100 node, where the
# ring and the tree finish within 6% of each other. The same 4 MB or 32 MB bucket is NVLS's on an
# H100 node and a tie on an A100 one, so neither the size nor the machine alone gives the key
# (across the job a small bucket is always the tree's). The tree's option is worded by placement (P7, review 38bda0b) and both wordings
# rank alike among the options by length and shared words, so its wording does not mark it.
BUCKET_MACHINES = {"dgx-h100": ("DGX H100", "H100"), "dgx-a100": ("DGX A100", "A100")}  # catalog key: (the box, its GPU)
BUCKET_SAME = 1.1  # "about the same": the slowest algorithm within 10% of the fastest
BUCKET_CASES = (  # (machine, group, bytes), three per option
    ("dgx-h100", "node", 256e3), ("dgx-a100", "node", 256e3), ("dgx-a100", "node", 512e3),
    ("dgx-h100", "job", 256e3), ("dgx-h100", "job", 4e6), ("dgx-a100", "job", 1e6),
    ("dgx-h100", "node", 4e6), ("dgx-h100", "node", 32e6), ("dgx-h100", "node", 256e6),
    ("dgx-a100", "node", 4e6), ("dgx-a100", "node", 8e6), ("dgx-a100", "node", 32e6),
)
ALGORITHM_NAME = {"ring": "the ring", "tree": "the tree", "nvls": "NVLS"}
TREE_OPTION_BY_GROUP = {"job": "Tree: the fewest latency steps, about 2 log2 N across nodes",
                        "node": "Tree: the fewest latency steps, about 2 log2 N in one node"}


def bucket_options_v4(group: str) -> tuple[Option, ...]:
    """Edition 4's options: edition 3's, the tree's worded by placement."""
    check_choice("group", group, BUCKET_GROUPS)
    return tuple(Option(o.key, TREE_OPTION_BY_GROUP[group], o.misconception) if o.key == "B" else o for o in BUCKET_STEP_OPTIONS)


def machine_group_cluster(machine: str, nodes: int, group: str) -> tuple[Cluster, int]:
    """The group a bucket is reduced over: the 8 GPUs of one `machine` node, or all `nodes` nodes."""
    check_choice("machine", machine, BUCKET_MACHINES)
    check_choice("group", group, BUCKET_GROUPS)
    cluster = Cluster.get(machine, nodes=1 if group == "node" else nodes)
    return cluster, cluster.gpus


def machine_bucket_facts(nbytes: float, nodes: int, group: str, machine: str) -> dict:
    """Each algorithm's (latency, bandwidth) cost of the bucket over the group on `machine`; the
    fastest, its lead over the next, and the spread from the fastest to the slowest."""
    cluster, n = machine_group_cluster(machine, nodes, group)
    costs = {alg: group_cost("all_reduce", nbytes, cluster, n, 1, alg) for alg in lb_algorithms(cluster)}
    t = {alg: c.total_s for alg, c in costs.items()}
    ranked = sorted(t.values())
    return {"costs": costs, "times": t, "fastest": min(t, key=t.get), "spread": ranked[-1] / ranked[0], "lead": ranked[1] / ranked[0],
            "ranks": n, "cluster": cluster}


BUCKET_CASE_CLAIMS: dict[str, Callable[[dict], bool]] = {
    **{key: (lambda f, alg=alg: f["fastest"] == alg and f["spread"] >= BUCKET_SAME) for alg, key in ALGORITHM_OPTION.items()},
    "D": lambda f: f["spread"] < BUCKET_SAME,
}


def machine_bucket_answer(nbytes: float, nodes: int, group: str, machine: str) -> str | None:
    return _answer_of(machine_bucket_facts(nbytes, nodes, group, machine))


def _answer_of(facts: dict) -> str | None:
    held = [k for k, claim in BUCKET_CASE_CLAIMS.items() if claim(facts)]
    return held[0] if len(held) == 1 else None


def machine_bucket_explanations(nbytes: float, nodes: int, group: str, machine: str) -> dict[str, str]:
    """Each option's line at the student's bucket, group and machine: every algorithm's latency
    and bandwidth terms, the tree's hops by placement, and why an A100 node has no NVLS."""
    return _explanations_of(machine_bucket_facts(nbytes, nodes, group, machine), nbytes, group, machine)


def _explanations_of(f: dict, nbytes: float, group: str, machine: str) -> dict[str, str]:
    best, t, cluster, same = f["fastest"], f["times"], f["cluster"], f["spread"] < BUCKET_SAME

    def line(alg: str) -> str:
        c = f["costs"][alg]
        if same:
            verdict = f"within {f['spread'] - 1:.0%} of " + " and ".join(ALGORITHM_NAME[a] for a in t if a != alg)
        else:
            verdict = f"the fastest, {f['lead']:.1f}x ahead of the next" if alg == best else f"{t[alg] / t[best]:.1f}x {ALGORITHM_NAME[best]}'s time"
        return f"{c.latency_s * 1e6:,.0f} µs of latency and {c.bandwidth_s * 1e6:,.0f} µs moving bytes, {t[alg] * 1e6:,.0f} µs in all: {verdict}."

    size = f"{nbytes / 1e6:g} MB on {f['ranks']:,} {BUCKET_MACHINES[machine][1]}s"
    g = cluster.gpus_per_node
    tree = (f"inside one node NCCL's tree is a chain through the {g} GPUs, 2 x {g - 1} NVLink hops, as many as the ring's 2(N-1), and it moves twice the message: "
            if group == "node" else f"the tree's 2 x ({g - 1} NVLink + log2({cluster.nodes}) network) hops at {size}: ")
    times = " against ".join(f"{t[a] * 1e6:,.0f} µs ({ALGORITHM_NAME[a]})" for a in t)
    return {
        "A": f"the ring's 2(N-1) steps at {size}: {line('ring')}",
        "B": tree + line("tree"),
        "C": (f"{'NVLS' if group == 'node' else 'NVLSTree (NVLS inside each node, a tree between them)'} at {size}: {line('nvls')}" if "nvls" in t
              else f"{cluster.intra.name} has no NVLink SHARP: the {BUCKET_MACHINES[machine][0]}'s NVSwitches cannot add, so NCCL runs the ring or the tree."),
        "D": (f"at {size} the algorithms finish within {f['spread'] - 1:.0%} of each other, {times}: here which one runs barely matters." if same
              else f"the algorithms' times differ {f['spread']:.1f}x here: which one runs matters."),
    }


def draw_settings_v4(d) -> dict:
    machine, group, nbytes = d.choice("bucket_case", BUCKET_CASES)
    return {"ring_gb": d.choice("ring_gb", VARIANT_RING_GB), "ring_n": d.choice("ring_n", VARIANT_RING_N),
            "bucket_bytes": nbytes, "bucket_nodes": d.choice("bucket_nodes", VARIANT_BUCKET_NODES), "bucket_group": group,
            "bucket_machine": machine}


def bucket_prompt(nbytes: float, nodes: int, group: str, machine: str) -> str:
    cluster, ranks = machine_group_cluster(machine, nodes, group)
    box, gpu = BUCKET_MACHINES[machine]
    where = (f"inside one {box} node, over its {ranks} {gpu}s on NVLink (a hybrid-sharded job's shard group)" if group == "node"
             else f"over all {ranks:,} {gpu}s of the job ({cluster.nodes} {box} nodes, {cluster.inter.name} between them)")
    return f"A {nbytes / 1e6:g} MB gradient bucket is all-reduced {where}. Which algorithm finishes first?"


def build_questions_v4(s: dict) -> dict:
    return {"ring": ring_question(s), "bucket": bucket_question_v4(float(s["bucket_bytes"]), int(s["bucket_nodes"]), s["bucket_group"], s["bucket_machine"])}


@functools.lru_cache(maxsize=256)  # 4 of a variant's 6 settings: a class of 1,000 draws ~440 variants of the lab but few buckets
def bucket_question_v4(nbytes: float, nodes: int, group: str, machine: str) -> Choice:
    """Edition 4's bucket question: the algorithms priced once for its answer and its explanations."""
    facts = machine_bucket_facts(nbytes, nodes, group, machine)
    return Choice(bucket_prompt(nbytes, nodes, group, machine), bucket_options_v4(group), _answer_of(facts), _explanations_of(facts, nbytes, group, machine))


VARIANTS = LabVariants(LAB, draw_settings_v4, build_questions_v4, version=4,
                       older={1: (draw_settings_v1, build_questions_v1), 2: (draw_settings_v2, build_questions), 3: (draw_settings, build_questions)})

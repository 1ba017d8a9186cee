"""Rank layout: which GPU holds which (tp, cp, dp, pp) coordinates, for a rank order.

A job's ranks are numbered 0..N-1 and GPU r sits in scale-up domain r // D (D GPUs per NVLink
domain, Cluster.domain_gpus: a DGX's 8, an NVL72 rack's 72; the host holding it, r // G, matters
only to offload and checkpoints). The rank
order says which parallel axis varies fastest along the ranks. Megatron-LM's default is TP
innermost, then CP, then DP, with PP outermost (megatron/core/parallel_state.py,
`order="tp-cp-ep-dp-pp"`); Megatron-Core's `--use-tp-pp-dp-mapping` puts the pipeline inside
the data-parallel axis. An axis's ranks sit `stride` apart, the product of the degrees of the
axes inside it, and labs.core.engine.topology turns a group's size and stride into the link it runs
on (NVLink inside a domain, the NICs across domains).

Every order here keeps CP immediately inside DP, so the data-parallel gradient group (dp x cp
ranks) is one strided group, as labs.core.engine.step prices it. Expert parallelism is carved out of
that group's innermost ranks.

    strides = axis_strides("tp-cp-dp-pp", tp=8, cp=1, dp=4, pp=2)   # {"tp": 1, "cp": 8, "dp": 8, "pp": 32}
    coords = rank_coordinates("cp-dp-tp-pp", tp=8, cp=1, dp=4, pp=2)  # one row per rank: tp, cp, dp, pp
"""

from __future__ import annotations

import numpy as np

from labs.core.engine.validation import check_choice, check_positive

AXES = ("tp", "cp", "dp", "pp")
# Innermost first. The first is Megatron's default and the engine's default.
RANK_ORDERS = ("tp-cp-dp-pp", "tp-pp-cp-dp", "cp-dp-tp-pp")
RANK_ORDER_NOTES = {
    "tp-cp-dp-pp": "TP innermost, then DP, PP outermost (Megatron-LM's default)",
    "tp-pp-cp-dp": "TP innermost, then PP, DP outermost (Megatron-Core's --use-tp-pp-dp-mapping)",
    "cp-dp-tp-pp": "DP innermost, then TP, PP outermost",
}


def order_axes(order: str) -> tuple[str, ...]:
    check_choice("rank_order", order, RANK_ORDERS)
    return tuple(order.split("-"))


def order_strides(name: str, degrees: dict, one=1.0) -> dict:
    """Each axis's stride under the rank order `name` (one of RANK_ORDERS): the product of the
    degrees of the axes inside it, the innermost axis's being `one`. The degrees may be numbers,
    numpy columns or one plan's values."""
    out, stride = {}, one
    for axis in name.split("-"):
        out[axis] = stride
        stride = stride * degrees[axis]
    return out


def axis_strides(order, tp, cp, dp, pp) -> dict[str, np.ndarray]:
    """Rank distance between neighbouring members of each axis's groups. `order` is a name of
    RANK_ORDERS or a column of indices into it; the degrees may be numpy columns."""
    degrees = {k: np.asarray(v, dtype=float) for k, v in zip(AXES, (tp, cp, dp, pp))}
    codes = np.asarray(RANK_ORDERS.index(order) if isinstance(order, str) else order)
    shape = np.broadcast(codes, *degrees.values()).shape
    first = int(codes.flat[0]) if codes.size else -1
    if 0 <= first < len(RANK_ORDERS) and (codes == first).all():  # one order for every row (a sweep's)
        return order_strides(RANK_ORDERS[first], degrees, np.ones(shape))
    out = {k: np.zeros(shape) for k in AXES}
    for code, name in enumerate(RANK_ORDERS):
        for axis, stride in order_strides(name, degrees, np.ones(shape)).items():
            out[axis] = np.where(codes == code, stride, out[axis])
    return out


def rank_coordinates(order: str, tp: int, cp: int, dp: int, pp: int) -> np.ndarray:
    """An (N, 4) integer array: row r holds rank r's (tp, cp, dp, pp) indices under `order`."""
    degrees = dict(zip(AXES, (tp, cp, dp, pp)))
    for name, value in degrees.items():
        check_positive(name, value, integer=True, maximum=1 << 20)
    n = tp * cp * dp * pp
    if n > 1 << 17:
        raise ValueError(f"tp x cp x dp x pp must be at most {1 << 17} ranks to list them, got {n}")
    ranks = np.arange(n)
    strides = axis_strides(order, tp, cp, dp, pp)
    return np.stack([(ranks // int(strides[a])) % degrees[a] for a in AXES], axis=1)


def groups(order: str, tp: int, cp: int, dp: int, pp: int, axis: str) -> list[list[int]]:
    """The ranks of every group of `axis` (members differ only in that axis's index), each
    group's ranks in ascending order; "dp" is the data-parallel group, dp x cp ranks."""
    check_choice("axis", axis, AXES)
    coords = rank_coordinates(order, tp, cp, dp, pp)
    varying = {"dp": ("cp", "dp")}.get(axis, (axis,))
    keep = [i for i, a in enumerate(AXES) if a not in varying]
    found: dict[tuple, list[int]] = {}
    for rank, row in enumerate(coords):
        found.setdefault(tuple(row[keep]), []).append(rank)
    return list(found.values())


def cross_node_links(order: str, tp: int, cp: int, dp: int, pp: int, axis: str, gpus_per_node: int) -> list[tuple[int, int]]:
    """(rank, rank) pairs of neighbouring members of an `axis` group that sit in different
    scale-up domains: the hops whose traffic leaves the NVLink domain for the NICs (a ring's hops,
    or a pipeline's stage boundaries). `gpus_per_node` is the domain's GPUs (Cluster.domain_gpus;
    a DGX's host and domain are one)."""
    check_positive("gpus_per_node", gpus_per_node, integer=True, maximum=1 << 10)
    out = []
    for members in groups(order, tp, cp, dp, pp, axis):
        hops = list(zip(members, members[1:]))
        if axis != "pp" and len(members) > 2:
            hops.append((members[-1], members[0]))  # a ring closes; a pipeline does not
        out.extend((a, b) for a, b in hops if a // gpus_per_node != b // gpus_per_node)
    return out

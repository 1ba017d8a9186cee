"""Where a group's collective runs, and what it costs: NVLink domains, rails, pods.

Ranks are numbered tensor-parallel fastest, then context, then data, then pipeline (Megatron's
order, the default; a Plan's rank_order picks another, labs.core.engine.layout gives each axis's stride),
so a group whose members sit `stride` ranks apart packs g = D / stride of them into a scale-up
domain of D GPUs (one when stride >= D). The domain, not the host, decides: a DGX is one host and
one 8-GPU NVLink domain, a GB200 NVL72 rack is 18 hosts of 4 GPUs in one 72-GPU domain, so TP 16
or EP 64 inside the rack never touches a NIC (Cluster.domain_gpus). Below, "node" is the domain
(the scaling book's GPU chapter calls it so; NCCL's multi-node NVLink support treats an NVL72
rack's NVLink clique as one node of its topology: assumed here, the version not checked).

Groups are taken to tile the domain, as they do when the domain's GPUs are a multiple of every
group's span (8-GPU domains and power-of-two layouts). A 72-GPU rack is not a multiple of 16: ranks
64-79 of a TP 16 layout on two racks straddle them and are still priced as one domain's (not
modelled); a power-of-two layout on NVL72 racks is asked for as Cluster.get("gb200-nvl72",
gpus_per_domain=64), 16 of each rack's 18 trays. A cluster may end in a part of a domain.

- Inside one domain a group runs on NVLink at NCCL's measured bus bandwidth.
- Across domains NCCL runs one ring per channel and crosses each domain boundary on a different
  NIC (rails). With every group of the domain communicating at once, a group with g members per
  domain owns g NICs per GPU's share of them (g x nics_per_node / gpus_per_node: the NICs are the
  hosts'): on a rail-optimised DGX (one NIC per GPU) that is g NICs, so a
  ring over whole nodes moves about 8 x 47 GB/s of bus bandwidth, capped by NVLink's, and a group
  with one member per node (DP behind TP=8) has one NIC. Evidence: nccl-tests #119 (3 nodes x
  4 HDR: 84.8 of 100 GB/s), #309 (2 x 8 H100 with 8 NDR NICs: up to ~400 GB/s), #283 (1,984
  H200s: ~350 GB/s); tests/data/nccl_busbw.json.
- A group spanning more GPUs than a pod crosses the oversubscribed tier above it: its NIC share
  runs at 1/oversubscription (Llama 3: 3,072-GPU pods, 1:7 above; arXiv:2407.21783 Sec. 3.3.1).

Algorithms and protocols follow NCCL's own cost model (NVIDIA/nccl src/graph/tuning.cc, commit
5067397, 2026; the tables below are copied from it, in microseconds):
- Which algorithms run which collective: all-reduce on ring, tree, NVLS (one node) or NVLSTree
  (NVLink SHARP inside each node, a tree across nodes: NVLS itself across nodes needs CollNet,
  which tuning.cc disables without IB SHARP); reduce-scatter and all-gather on ring, NVLS (one
  node; across nodes only with CollNet) or PAT, never tree. Everything else runs as a ring here.
  "tree" and "nvls" asked of a collective that cannot use them fall back to the ring, as NCCL does.
- PAT (Parallel Aggregated Trees, a variant of Bruck's algorithm, NCCL 2.23+): reduce-scatter and
  all-gather over groups of one GPU per node (tuning.cc's ncclPatEnable: nNodes == nRanks), Simple
  protocol only, with log2(nodes) network steps: latency 8 us + log2(nodes) x 14/3.5 us + 2.8 us
  per rank (tuning.cc keeps that linear part), bytes at 0.75 of the bus bandwidth and the whole
  buffer counted (no (n-1)/n). So it wins over the ring's (n-1) network hops on small and medium
  messages, and the ring wins on large ones. NCCL skips it for a reduce-scatter that divides
  (ncclAvg: PreMulSum/SumPostDiv, enqueue.cc); Megatron reduces with a sum after pre-scaling.
  Only a stack whose NCCL has it (labs.core.engine.eras: Era.nccl_pat) runs it: nccl_algorithm().
- NVLSTree across domains (tuning.cc: interBw x (nNodes <= 2 ? 2 : 1)): on two domains each
  sends its reduced M to the other and receives the other's, M each way; past two, the tree's
  inner domains take from two children and give to a parent, so the scale-out side carries twice
  that, and the bus bandwidth its NICs reach halves. Measured: 8 x H100 over 8 x 400G RoCE, NVLS
  on 2 nodes 430 GB/s against the ring's 330, on more than 2 no gain (320; NVIDIA/nccl #1221);
  GB200 NVL72 racks (CoreWeave, NCCL 2.26.2): 810 GB/s on two racks, 406 on twenty at 16 GiB.
  From an NVL72 rack NCCL reaches far less than its 72 NICs' 3.4 TB/s (Cluster.scale_out_bytes_per_s:
  a plateau of about 417, capping what any group of the rack moves through the NICs).
- Across multi-host domains (NVL72 racks) NVLSTree reaches that plateau only at GB messages: each
  rail's pipeline carries M / (g (1 + log2 domains)) (collectives.domain_tree_ramp), so 20 racks
  reach 151 GB/s at 512 MiB and two racks 494. The tree there ramps alike (NCCL keeps NVLSTree).
- In-network reduction in the scale-out switches (InfiniBand SHARP, Link.in_network_reduction;
  NCCL's CollNet, off unless enabled): each domain reduces inside (NVLink), its NICs send M up once
  and receive the reduced M once (collectives.moved_share "in_network": 1, against the ring's
  2(N-1)/N), and the domain broadcasts inside. CollNet Direct (tuning.cc: latency 2 (3.7 us +
  0.4 us a local rank) + 31 us, 14 with one GPU a node; algorithm bandwidth half the intra-node bus
  bandwidth, "NVLink still has to transmit ~2x more data intra-node", NVIDIA/nccl #320) prices
  M at the lesser of the group's NICs and half its NVLink bus bandwidth; NVLS+SHARP (NCCL's NVLS
  across nodes, latency 25 + 18 us) at the lesser of NVLS and the NICs, as tuning.cc (no
  halving: the switches hold the tree). All-reduce only; on RCCL's mesh not modelled.
- Tree bandwidth: tuning.cc caps the tree's bus bandwidth at 0.92 of the ring's and converts it at
  half (algbw = busbw / 2), so a tree all-reduce moves 2 M / (0.92 busbw) where the ring moves
  2 (N-1)/N M / busbw (H100 over RoCE measured tree 150 against ring 190 GB/s, NVIDIA/nccl #1368).
- Protocols: LL, LL128 and Simple trade per-hop latency for bandwidth (LL at half the bus
  bandwidth, LL128 at 0.92, Simple at all of it); NCCL takes, per message, the algorithm and
  protocol with the least predicted time, so a 1 MB message pays LL128's 1.9 us per NVLink hop,
  not Simple's 3.4, and small messages LL's 0.6.
On a full mesh (AMD Instinct's 8-GPU node: each GPU has one Infinity Fabric (xGMI) link to each
of its 7 peers, no switch; Link.mesh_peers) RCCL, not NCCL, decides (_mesh_priced, the tables
below from ROCm/rccl at 0cbce2a7, 2024-10):
- One ring uses one link per hop; RCCL runs many rings at once (src/graph/rome_models.cc,
  rome_model_79, the 8 x MI300X full mesh: 28 channels over 14 rings, "tuning=5") so that every
  link carries one: a group with g members in the mesh reaches the g - 1 links among them, (g - 1)
  x one link's rate (scale_up_bytes_per_s). TP 2 on a MI300X node gets one link (~47 GB/s), where
  an NVSwitch gives a pair the GPU's whole NVLink bandwidth.
- Its ring cost model is tuning_model_5 (src/graph/tuning.cc): base 12 / 17 us (LL / Simple),
  0.8 / 2.1 us per xGMI hop, LL at 0.08 of the bus bandwidth; LL128 is off on gfx942 (enabled on
  gfx90a only) and the tree runs LL only inside one node (tree Simple skipped on gfx94 single
  node), at 0.06 of the bus bandwidth with more latency than ring LL: it never wins, so it is left out.
- Direct algorithms: RCCL loads MSCCL's all-pairs all-reduce for 8 GPUs of one mesh
  (tools/msccl-algorithms/allreduce-allpairs-8n-*.xml: LL up to 512 KiB, Simple from 512 KiB to
  16 MiB; mscclEnabled=1 in rome_model_79) and runs it before its tuning model: each GPU sends an
  eighth to each peer on its own link, reduces, and sends the result back: 2 steps, not the ring's
  14, the same bytes over the same 7 links, on 8 channels where the ring runs 28, so at a share of
  the ring's bus bandwidth fitted on rccl-tests (RCCL_ALLPAIRS_BANDWIDTH_SHARE). Its latency (base
  + 2 hops of the ring's table) is assumed (unconfirmed: MSCCL has no entry in RCCL's cost model). An all-to-all inside the mesh
  runs direct too (every peer on its own link at once: base + 1 hop, unconfirmed).
- Across nodes the network hops are NCCL's (unconfirmed for RCCL, whose tuning_model_5 charges a
  Simple ring 320 us a network step with per-size bandwidth corrections: not modelled).
"auto" is NCCL's own choice among them (PRE_PAT_AUTO: the same without PAT, NCCL before 2.23);
"ring", "tree" and "nvls" force the algorithm (NCCL_ALGO) and still pick the protocol. Everything here is array-valued: scalars and numpy columns broadcast.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from labs.core.engine.collectives import CollectiveCost, alpha_beta_seconds, domain_tree_ramp, moved_share, ring_ramp
from labs.core.engine.hardware import NCCL_BASE_LATENCY_S, Cluster
from labs.core.engine.stages.xp import NUMPY, SCALAR
from labs.core.engine.validation import check_choice, check_positive

DP_ALGORITHMS = ("auto", "ring", "tree", "nvls")
PRE_PAT_AUTO = "auto_before_pat"  # "auto" on a stack whose NCCL predates PAT (2.23): nccl_algorithm()
_REDUCTIONS = ("all_reduce", "reduce_scatter", "all_gather")
# Ring steps per member for each op: all-reduce is a reduce-scatter then an all-gather.
_RING_SHARE = {"all_reduce": 2.0, "reduce_scatter": 1.0, "all_gather": 1.0, "all_to_all": 1.0}
# NCCL's cost model (NVIDIA/nccl src/graph/tuning.cc, commit 5067397, ncclTunerConstantsDefaults),
# microseconds, per protocol (LL, LL128, Simple): the base latency of a call, and the latency of
# one hop on NVLink, PCIe and the network, for the ring and the tree.
_US = 1e-6
_BASE_US = {"ring": (6.6, 14.0, 8.4), "tree": (6.8, 14.0, 8.4)}
_HOP_US = {
    ("nvlink", "ring"): (0.6, 1.9, 3.4), ("nvlink", "tree"): (0.6, 1.25, 4.0),
    ("pci", "ring"): (1.0, 2.5, 5.7), ("pci", "tree"): (1.0, 1.9, 4.0),
    ("net", "ring"): (2.7, 4.0, 14.0), ("net", "tree"): (5.0, 8.5, 14.0),
}
# NVLS and NVLSTree run Simple only, latency 25 us inside the node + 2 log2(nodes) x 20.9 us across
# nodes for NVLSTree (tuning.cc). The measured NVLS curve ramps far slower than 25 us alone says
# (8 MB: 172 GB/s busbw, 85 us): that is the pipeline's ramp (labs.core.engine.collectives.ring_ramp,
# fitted with this latency on azure_nd_h100_v5_nvls, the A100 and the 4x GB200 ring curves), not a longer latency
# (a 54.5 us latency fitted on the 8 MB point made the H200's 1-4 MB 24-41% too slow).
_NVLS_US, _NVLS_TREE_NET_US = 25.0, 20.9
# Where NVLSTree and the tree ramp across NVLink domains (collectives.domain_tree_ramp): domains of
# several hosts (multi-node NVLink: GB200 NVL72 / NVL36x2 racks), where the fitted rows were measured.
# The tree gets the same ramp there, so that NCCL's pick past one rack stays NVLSTree (the one its
# tuning.cc predicts faster, and CoreWeave's multi-rack jobs run). Not on one-host domains (DGX,
# HGX): the slice formula would put 1,984 H200s (8 a domain, 248 domains) at 268 GB/s at 512 MB,
# where nccl-tests #283 measures ~350 (tests/data/nccl_busbw.json h200_1984gpu); no mid-size curve
# across them is held, so their trees keep v4's price. (NCCL's own tuning.cc corrects NVLSTree's
# mid-size bandwidth on x86 Blackwell, treeCorrectionFactor: 0.7-0.9 at 4-512 MB; not modelled.)
# CollNet with in-network reduction (tuning.cc, Simple only, microseconds): CollNet Direct's NVLink
# hop 3.7 and 0.4 a local rank ("arity serialization"), its network hop 31 (the tree's 14 with one GPU
# a node); NVLS across nodes (NVLS+SHARP) 25 inside + 18 across.
_COLLNET_HOP_US, _COLLNET_ARITY_US, _COLLNET_NET_US, _NVLS_SHARP_NET_US = 3.7, 0.4, 31.0, 18.0
# PAT (tuning.cc, commit 5067397; the latency terms as they came in 2.23.4, 68b5423, the bandwidth
# factor 0.85 there and 0.75 from 2.24.3): Simple protocol only, base 8.0 us, log2i(nNodes) x
# interLat / 3.5 with interLat the tree's network hop (14 us: one GPU per node), nRanks x 2.8 us;
# busBw x 0.75, not converted to algorithm bandwidth (nBytes / busBw). PAT runs on the tree's
# graph; at one GPU per node its bus bandwidth is the NIC's, as the ring's is.
_PAT_BASE_US, _PAT_LOG_DIVISOR, _PAT_PER_RANK_US, PAT_BANDWIDTH = 8.0, 3.5, 2.8, 0.75
# Bus bandwidth each protocol keeps of Simple's (tuning.cc "model refinements"): ring LL x 0.5,
# LL128 x 0.92 (120 of 128 bytes); the tree all-reduce x 0.92 of the ring, then LL x 1/3.8,
# LL128 x 120/128 across nodes or 7/9 inside one.
_RING_PROTOCOL_BW = (0.5, 0.92, 1.0)
TREE_BANDWIDTH_CAP = 0.92
_TREE_PROTOCOL_BW = {True: (1 / 3.8, 120 / 128, 1.0), False: (1 / 3.8, 7 / 9, 1.0)}  # keyed by "across nodes"


def members_per_domain(cluster: Cluster, n, stride, xp=NUMPY):
    """How many members of a group of n ranks, `stride` apart, share one scale-up (NVLink) domain."""
    if xp is SCALAR:
        return _members_of_one(cluster.domain_gpus, float(n), float(stride))
    return _members(cluster.domain_gpus, n, stride, xp)


members_per_node = members_per_domain  # the name the communication map's "members_per_node" columns and the labs use


def _members(gpn, n, stride, xp):
    stride = xp.floats(stride)
    packed = xp.where(stride < gpn, xp.maximum(1.0, xp.floor(gpn / xp.maximum(stride, 1.0))), 1.0)
    return xp.minimum(xp.floats(n), packed)


@lru_cache(maxsize=4096)
def _members_of_one(gpn: int, n: float, stride: float) -> float:
    return _members(gpn, n, stride, SCALAR)


def scale_up_bytes_per_s(cluster: Cluster, g, xp=NUMPY):
    """What one GPU moves at once to the other g - 1 members of its group inside one domain:
    through a switch the GPU's whole (achieved) link bandwidth; on a full mesh the g - 1 direct
    links among them, one per peer (module docstring)."""
    if not cluster.intra.mesh_peers:
        return cluster.intra.effective_bytes_per_s
    return xp.maximum(xp.minimum(g - 1.0, float(cluster.intra.mesh_peers)), 1.0) * cluster.intra.effective_bytes_per_s


def nccl_algorithm(dp_algorithm: str, pat: bool) -> str:
    """What a Plan's dp_algorithm asks of a stack's NCCL: "auto" without PAT where it predates 2.23."""
    return PRE_PAT_AUTO if dp_algorithm == "auto" and not pat else dp_algorithm


def _uses(op: str, algorithm: str, cluster: Cluster) -> tuple[str, ...]:
    """The algorithms NCCL may run `op` with when asked for `algorithm` (module docstring)."""
    nvls = bool(cluster.intra.nvls_bytes_per_s) and op in _REDUCTIONS
    if algorithm in ("auto", PRE_PAT_AUTO):
        pat = algorithm == "auto" and op in ("reduce_scatter", "all_gather")
        collnet = cluster.inter.in_network_reduction and op == "all_reduce"
        return (("ring",) + (("tree",) if op == "all_reduce" else ()) + (("nvls",) if nvls else ()) + (("pat",) if pat else ())
                + (("collnet",) if collnet else ()))
    if algorithm == "tree" and op == "all_reduce":
        return ("tree",)
    if algorithm == "nvls" and nvls:
        return ("nvls", "ring")  # the ring where NVLS cannot run (across nodes for reduce-scatter/all-gather, one GPU a node)
    return ("ring",)


def _network_bus_bandwidth(cluster: Cluster, n, stride, g, xp=NUMPY):
    """What the g members of a domain move through the NICs at once: their share of the hosts'
    NICs (rails / gpus_per_node each; at most what NCCL is measured to reach from one domain,
    Cluster.scale_out_bytes_per_s), at 1/oversubscription where the group spans pods."""
    nics = cluster.rails * g / cluster.gpus_per_node * cluster.inter.effective_bytes_per_s
    if cluster.scale_out_bytes_per_s:
        nics = xp.minimum(nics, cluster.scale_out_bytes_per_s)
    span = n * xp.floats(stride)
    tier = xp.where(span > cluster.pod_gpus, 1.0 / cluster.oversubscription, 1.0) if cluster.pod_gpus else 1.0
    return nics * tier


def _ring_bus_bandwidth(cluster: Cluster, n, stride, g, nodes, intra, xp=NUMPY):
    """The ring's bus bandwidth: `intra` inside one domain; across domains the g members' NICs,
    capped by `intra`."""
    return xp.where(nodes > 1, xp.minimum(intra, _network_bus_bandwidth(cluster, n, stride, g, xp)), intra)


def group_bus_bandwidth(cluster: Cluster, n, stride, algorithm: str = "ring", op: str = "all_reduce"):
    """nccl-tests' bus bandwidth (bytes/s) one collective of the group reaches at large messages
    with `algorithm` (falling back to the ring where NCCL cannot use it)."""
    n = np.asarray(n, dtype=float)
    g = members_per_domain(cluster, n, stride)
    nodes = np.ceil(n / g)
    ring = _ring_bus_bandwidth(cluster, n, stride, g, nodes, scale_up_bytes_per_s(cluster, g))
    algorithm = _uses(op, algorithm, cluster)[0] if algorithm != "auto" else "ring"
    if algorithm == "tree":  # 2 M moved at 0.92 busbw, reported by nccl-tests as 2 (n-1)/n M
        return TREE_BANDWIDTH_CAP * ring * (n - 1) / np.maximum(n, 1.0)
    if algorithm == "nvls":
        return _nvls_bus_bandwidth(cluster, op, n, stride, g, nodes, ring)
    return ring


def _nvls_bus_bandwidth(cluster: Cluster, op: str, n, stride, g, nodes, ring, xp=NUMPY):
    """NVLS bus bandwidth: the switch's all-reduce rate inside a node; across nodes NVLSTree's,
    capped by the group's NICs, twice those on two nodes (module docstring); a reduce-scatter or
    all-gather gets half that algorithm bandwidth (tuning.cc: intraBw x 2 for all-reduce only,
    which pipelines a reduce and a broadcast through the switch) and only inside a node. At least
    1 byte/s: a group of one moves nothing."""
    inside = cluster.intra.nvls_bytes_per_s
    if op != "all_reduce":
        return xp.maximum(xp.where(nodes > 1, ring, inside / 2 * (n - 1) / xp.maximum(n, 1.0)), 1.0)
    tree = _network_bus_bandwidth(cluster, n, stride, g, xp) * xp.where(nodes <= 2, 2.0, 1.0)
    return xp.maximum(xp.where(nodes > 1, xp.minimum(inside, tree), inside), 1.0)


# The tables per protocol (LL, LL128, Simple) in seconds. A formula over xp.options(tables) prices
# every protocol at once on numpy columns, or one protocol at a time for one plan.
_HOP_S = {key: tuple(x * _US for x in value) for key, value in _HOP_US.items()}
_BASE_S = {key: tuple(x * _US for x in value) for key, value in _BASE_US.items()}


_PROTOCOL_TABLES = {  # (algorithm, intra-node hop): the tables _ring_option and _tree_option read, per protocol
    ("ring", hop): (_BASE_S["ring"], _HOP_S[hop, "ring"], _HOP_S["net", "ring"], _HOP_S["net", "tree"], _RING_PROTOCOL_BW) for hop in ("nvlink", "pci")
} | {
    ("tree", hop): (_BASE_S["tree"], _HOP_S[hop, "tree"], _HOP_S["net", "tree"], _TREE_PROTOCOL_BW[True], _TREE_PROTOCOL_BW[False]) for hop in ("nvlink", "pci")
}


def _protocols(algorithm: str, hop: str, xp) -> tuple:
    """The protocols' table entries, one tuple per pass of the pricing loop (labs.core.engine.stages.xp.options)."""
    return _PROTOCOL_ROWS[algorithm, hop, xp.scalar]


_PROTOCOL_ROWS = {(algorithm, hop, xp.scalar): tuple(zip(*xp.options(tables)))
                  for (algorithm, hop), tables in _PROTOCOL_TABLES.items() for xp in (NUMPY, SCALAR)}


def _ring_option(base, hop_intra, hop_net_ring, hop_net_tree, protocol_bw, share, n, g, multi, nodes, ring_busbw, xp):
    """The ring under one protocol (tuning.cc): its latency, base + (nsteps - nInterSteps) intra
    hops + nInterSteps network hops, and the bus bandwidth its bytes move at, the protocol's share
    of the ring's. With one GPU per node tuning.cc charges the tree's network hop."""
    net_steps = share * xp.where(multi, nodes - 1, 0.0)
    hop_net = xp.where(g == 1, hop_net_tree, hop_net_ring)
    latency = base + (share * (n - 1) - net_steps) * hop_intra + net_steps * hop_net
    return latency, protocol_bw * ring_busbw


def _tree_option(base, hop_intra, hop_net, bw_across, bw_inside, g, multi, nodes, ring_busbw, xp):
    """The tree all-reduce under one protocol: base + 2 ((g - 1) intra + log2(nodes) network)
    hops, and 2 M moved at 0.92 of the ring's bus bandwidth times the protocol's share."""
    latency = base + 2 * ((g - 1) * hop_intra + _log2_levels(nodes, xp) * hop_net)
    shares = xp.where(multi, bw_across, bw_inside)
    return latency, shares * TREE_BANDWIDTH_CAP * ring_busbw


def collective_columns(op: str, nbytes, cluster: Cluster, n, stride=1, algorithm: str = "ring", xp=NUMPY):
    """(latency seconds, bandwidth seconds) of one collective of `nbytes` over groups of n ranks
    spaced `stride` apart, with the algorithm and protocol NCCL's cost model picks among those
    `algorithm` allows; every argument but op, cluster and algorithm may be an array (xp: the
    array namespace, labs.core.engine.stages.xp)."""
    if xp.scalar:  # one plan: priced only if its group runs it (a send always has a peer), each price once per cluster
        n, nbytes, stride = float(n), float(nbytes), float(stride)
        if nbytes > 0 and (n > 1 or op == "p2p"):
            prices, key = _cluster_prices(cluster), (op, nbytes, n, stride, algorithm)
            price = prices.get(key)
            if price is None:
                if len(prices) >= PRICES_KEPT:
                    prices.clear()
                price = prices[key] = _p2p(nbytes, cluster, stride, xp) if op == "p2p" else _priced(op, nbytes, cluster, n, stride, algorithm, xp)
            return price
        return 0.0, 0.0
    if op == "p2p":
        return _p2p(xp.floats(nbytes), cluster, stride, xp)
    # price the rows that run a collective (a group of more than one, bytes to move); the rest cost 0
    n, nbytes, stride = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(nbytes, dtype=float), np.asarray(stride, dtype=float))
    shape = n.shape
    n, nbytes, stride = n.reshape(-1), nbytes.reshape(-1), stride.reshape(-1)
    # Neighbouring rows often run the same collective (a sweep's rows vary the settings that do
    # not change it, such as the ZeRO stage for TP's): each run of equal rows priced once.
    new = np.concatenate([[True], (nbytes[1:] != nbytes[:-1]) | (n[1:] != n[:-1]) | (stride[1:] != stride[:-1])])
    starts = np.flatnonzero(new)
    if len(starts) <= RUNS_PRICED * n.size:
        lat, bw = _priced_active(op, nbytes.take(starts), cluster, n.take(starts), stride.take(starts), algorithm, xp)
        run = np.cumsum(new) - 1
        return lat.take(run).reshape(shape), bw.take(run).reshape(shape)
    return tuple(x.reshape(shape) for x in _priced_active(op, nbytes, cluster, n, stride, algorithm, xp))


RUNS_PRICED = 0.5  # priced run by run when there are at most half as many runs as rows


def _p2p(nbytes, cluster: Cluster, stride, xp):
    """collective_columns of a send/recv between two ranks `stride` apart: over NVLink inside a
    domain, else the GPU's share of the node's NICs; no bytes, no time."""
    g = members_per_domain(cluster, 2, stride, xp)
    bw = xp.where(g >= 2, cluster.intra.effective_bytes_per_s, cluster.inter_bytes_per_s_per_gpu)
    lat = xp.where(g >= 2, cluster.intra.latency_s, cluster.inter.latency_s)
    active = nbytes > 0
    return xp.where(active, lat, 0.0), xp.where(active, nbytes / bw, 0.0)


def _priced_active(op: str, nbytes, cluster: Cluster, n, stride, algorithm: str, xp):
    """_priced on the rows (numpy columns) that run the collective, 0 on the others."""
    active = np.flatnonzero((n > 1) & (nbytes > 0))
    latency, bandwidth = np.zeros(n.size), np.zeros(n.size)
    if len(active) == n.size:
        return _priced(op, nbytes, cluster, n, stride, algorithm, xp)
    if len(active):
        latency[active], bandwidth[active] = _priced(op, nbytes.take(active), cluster, n.take(active), stride.take(active), algorithm, xp)
    return latency, bandwidth


def _priced(op: str, nbytes, cluster: Cluster, n, stride, algorithm: str, xp):
    """collective_columns for groups that run it (n > 1, nbytes > 0): of the options NCCL weighs
    for the group, the one with the least latency + bytes moved / bus bandwidth."""
    if cluster.intra.mesh_peers:
        return _mesh_priced(op, nbytes, cluster, n, stride, algorithm, xp)
    options = _scalar_options(op, cluster, n, stride, algorithm) if xp.scalar else _options(op, cluster, n, stride, algorithm, xp)
    latencies, moved, busbws, per_byte = options
    return xp.cheapest(latencies, [alpha_beta_seconds(0.0, share * nbytes, busbw, _stretch(nbytes, part))[1]
                                   for share, busbw, part in zip(moved, busbws, per_byte)])


def _stretch(nbytes, part):
    """The ramp of an option whose pipelines carry nbytes x part: (inside one domain, across
    domains), infinite where a row has no ramp of that kind, None for either where no row has it."""
    if part is None:
        return 1.0
    inside, across = part
    ramp = 1.0 if inside is None else ring_ramp(nbytes * inside)
    return ramp if across is None else ramp * domain_tree_ramp(nbytes * across)


def _options(op: str, cluster: Cluster, n, stride, algorithm: str, xp) -> tuple:
    """What a collective costs over the group whatever its bytes, per option (algorithm and
    protocol) NCCL weighs: (latencies, the share of the bytes each rank moves, the bus bandwidth
    it moves them at)."""
    share = _RING_SHARE[op]
    g = members_per_domain(cluster, n, stride, xp)
    nodes = xp.ceil(n / g)
    multi = nodes > 1
    hop = "nvlink" if cluster.intra.name.startswith("NVLink") else "pci"
    ring_busbw = _ring_bus_bandwidth(cluster, n, stride, g, nodes, cluster.intra.effective_bytes_per_s, xp)
    ring_moved = moved_share(op, n, "ring")  # of the bytes, through each rank's links
    uses = _uses(op, algorithm, cluster)
    # per_byte: the share of the message each rank's pipeline carries, (inside one NVLink domain:
    # ring_ramp's slice / nbytes, across domains: domain_tree_ramp's; _stretch): inside, 1/n for the
    # ring, NVLS and PAT, 1 for the tree; across multi-host domains, 1 / (g (1 + log2 domains)) for
    # NVLSTree and the tree (collectives' docstring); infinite (no ramp) elsewhere: the ring across
    # domains, PCIe, trees across one-host domains, where no measured mid-size curve holds it
    # (collectives.RAMP_EXCESS); None where no row ramps (the pricing skips it)
    latencies, moved, busbws, per_byte = [], [], [], []
    unramped = multi if hop == "nvlink" else True
    ramps = not (unramped if xp.scalar else np.all(unramped))
    inside_ring, inside_tree = (xp.where(unramped, xp.inf, 1.0 / n), xp.where(unramped, xp.inf, 1.0)) if ramps else (None, None)
    across = None
    if hop == "nvlink" and cluster.domain_gpus > cluster.gpus_per_node and (multi if xp.scalar else np.any(multi)):
        across = xp.where(multi, 1.0 / (g * (1.0 + _log2_levels(nodes, xp))), xp.inf)
    ring_part = None if inside_ring is None else (inside_ring, None)
    tree_part = None if inside_tree is None and across is None else (inside_tree, across)
    nvls_part = None if inside_ring is None and across is None else (inside_ring, across)
    if "ring" in uses:
        for base, hop_intra, net_ring, net_tree, protocol_bw in _protocols("ring", hop, xp):
            lat, busbw = _ring_option(base, hop_intra, net_ring, net_tree, protocol_bw, share, n, g, multi, nodes, ring_busbw, xp)
            if algorithm == "nvls":  # NCCL_ALGO=NVLS: the ring only where NVLS cannot run
                lat = xp.where(_nvls_usable(op, g, multi, xp), xp.inf, lat)
            latencies.append(lat)
            moved.append(ring_moved)
            busbws.append(busbw)
            per_byte.append(ring_part)
    if "tree" in uses:  # 2 M at the tree's bandwidth
        for base, hop_intra, hop_net, bw_across, bw_inside in _protocols("tree", hop, xp):
            lat, busbw = _tree_option(base, hop_intra, hop_net, bw_across, bw_inside, g, multi, nodes, ring_busbw, xp)
            latencies.append(lat)
            moved.append(moved_share("all_reduce", n, "tree"))
            busbws.append(busbw)
            per_byte.append(tree_part)
    if "nvls" in uses:  # NVLS inside a node; NVLSTree across nodes (all-reduce only)
        lat = (_NVLS_US + 2 * _log2_levels(nodes, xp) * _NVLS_TREE_NET_US) * _US
        latencies.append(xp.where(_nvls_usable(op, g, multi, xp), lat, xp.inf))
        moved.append(ring_moved)
        busbws.append(_nvls_bus_bandwidth(cluster, op, n, stride, g, nodes, ring_busbw, xp))
        per_byte.append(nvls_part)
    if "collnet" in uses:  # the scale-out switches reduce (SHARP): all-reduce across domains
        for lat, share, busbw in _in_network_options(cluster, n, stride, g, multi, ring_moved, xp):
            latencies.append(lat)
            moved.append(share)
            busbws.append(busbw)
            per_byte.append(ring_part)
    if "pat" in uses:  # reduce-scatter and all-gather, one GPU per node: the whole buffer
        latencies.append(xp.where(g == 1, _pat_latency(n, nodes, xp), xp.inf))
        moved.append(1.0)
        busbws.append(PAT_BANDWIDTH * ring_busbw)
        per_byte.append(ring_part)
    return tuple(latencies), tuple(moved), tuple(busbws), tuple(per_byte)


# RCCL on a full mesh (module docstring): ROCm/rccl src/graph/tuning.cc at 0cbce2a7, baseLat (Ring,
# LL and Simple) and tuning_model_5 (MI300X, rome_model_79 "tuning=5"): hwLat[NVLINK][Ring] (RCCL
# types xGMI as NVLink) and bwRatio[2 nodes or fewer][Ring], per protocol (LL, Simple); LL128 off.
_RCCL_BASE_US = (12.0, 17.0)
_RCCL_XGMI_HOP_US = (0.8, 2.1)
_RCCL_RING_PROTOCOL_BW = (0.08, 1.0)
# MSCCL's all-pairs all-reduce (tools/msccl-algorithms/allreduce-allpairs-8n-ll-*-op.xml: minBytes 0
# / 65537, maxBytes 65536 / 524287; -simple-op.xml 524288 to 16777216, out of place), for exactly
# 8 ranks (ngpus="8"); the in-place Simple files stop at 11.5 MiB and cover 14-16 MiB.
RCCL_DIRECT_RANKS = 8
_RCCL_DIRECT_BYTES = ((0.0, 524287.0), (524288.0, 16777216.0))  # (min, max) per protocol (LL, Simple)
# The all-pairs files run 8 channels (nchannels="8"), the ring 28 (rome_model_79): the all-pairs
# all-reduce reaches this share of the ring's bus bandwidth over the same 7 links. Fitted (least
# squares on log busbw, the latency kept at the table's base + 2 hops) on the ROCm blog's five
# all-pairs rows of 8 x MI300X (rccl_mi300x_8gpu_allreduce_1048576 .. _16777216, RCCL 2.22.3,
# Simple): 0.735, rows -5.0% .. +3.5% (at 1.0: up to +34%, the 16 MiB row). LL's share taken as
# Simple's (unconfirmed: no row under 512 KiB).
RCCL_ALLPAIRS_BANDWIDTH_SHARE = 0.735
_MESH_TABLES = (  # per protocol: base, xGMI hop, NCCL's network hops (ring, tree), bandwidth share, direct range
    tuple(x * _US for x in _RCCL_BASE_US), tuple(x * _US for x in _RCCL_XGMI_HOP_US),
    (_HOP_US["net", "ring"][0] * _US, _HOP_US["net", "ring"][2] * _US), (_HOP_US["net", "tree"][0] * _US, _HOP_US["net", "tree"][2] * _US),
    _RCCL_RING_PROTOCOL_BW, tuple(lo for lo, _ in _RCCL_DIRECT_BYTES), tuple(hi for _, hi in _RCCL_DIRECT_BYTES),
)
_MESH_ROWS = tuple(zip(*_MESH_TABLES))  # one row per protocol, plain floats: priced one protocol at a time on columns or a plan


def _mesh_priced(op: str, nbytes, cluster: Cluster, n, stride, algorithm: str, xp):
    """_priced on a full mesh (module docstring): RCCL's ring under LL or Simple, whichever costs
    less, except where MSCCL's direct all-pairs all-reduce runs (8 ranks of one mesh, up to 16 MiB,
    its protocol fixed by the size) and for an all-to-all inside one mesh (direct, cheaper protocol)."""
    share = _RING_SHARE[op]
    g = members_per_domain(cluster, n, stride, xp)
    nodes = xp.ceil(n / g)
    multi = nodes > 1
    ring_busbw = _ring_bus_bandwidth(cluster, n, stride, g, nodes, scale_up_bytes_per_s(cluster, g, xp), xp)
    ring_moved = share * (n - 1) / xp.maximum(n, 1.0)
    ring_lat, ring_bw, direct_lat, direct_bw, in_range = [], [], [], [], []
    for base, hop, net_ring, net_tree, protocol_bw, low, high in _MESH_ROWS:
        lat, busbw = _ring_option(base, hop, net_ring, net_tree, protocol_bw, share, n, g, multi, nodes, ring_busbw, xp)
        ring_lat.append(lat)
        ring_bw.append(ring_moved * nbytes / busbw)
        direct_lat.append(base + (2.0 if op == "all_reduce" else 1.0) * hop)
        direct_bw.append(ring_bw[-1])
        in_range.append((nbytes >= low) & (nbytes <= high))
    ring = xp.cheapest(ring_lat, ring_bw)
    if algorithm not in ("auto", PRE_PAT_AUTO) or op not in ("all_reduce", "all_to_all"):
        return ring
    one_mesh = xp.not_(multi)
    if op == "all_to_all":
        direct = xp.cheapest(direct_lat, direct_bw)
        return xp.where(one_mesh, direct[0], ring[0]), xp.where(one_mesh, direct[1], ring[1])
    use = one_mesh & (n == RCCL_DIRECT_RANKS)
    lat = xp.where(in_range[0], direct_lat[0], direct_lat[1])
    bw = xp.where(in_range[0], direct_bw[0], direct_bw[1]) / RCCL_ALLPAIRS_BANDWIDTH_SHARE
    use = use & (in_range[0] | in_range[1])
    return xp.where(use, lat, ring[0]), xp.where(use, bw, ring[1])


# One plan's collectives, priced once per cluster: a price is a pure function of the catalog's
# cluster and (op, bytes, group, stride, algorithm), and the same collectives (a layer's
# activations over its TP group, a stage's gradient buckets over its DP group) recur from plan to
# plan. Looked up by the cluster's id (hashing a Cluster hashes its GPU and links: ~1 us), equal
# clusters sharing one table.
PRICES_KEPT = 16384  # prices per cluster before its table starts over
_PRICE_TABLES: dict = {}  # cluster -> {(op, bytes, n, stride, algorithm): (latency s, bandwidth s)}
_PRICE_TABLE_OF_ID: dict = {}  # id(cluster) -> (cluster, its table): the cluster is kept, so its id is not reused


def _cluster_prices(cluster: Cluster) -> dict:
    known = _PRICE_TABLE_OF_ID.get(id(cluster))
    if known is not None and known[0] is cluster:
        return known[1]
    if len(_PRICE_TABLE_OF_ID) >= 256:
        _PRICE_TABLE_OF_ID.clear()
        _PRICE_TABLES.clear()
    table = _PRICE_TABLES.setdefault(cluster, {})
    _PRICE_TABLE_OF_ID[id(cluster)] = (cluster, table)
    return table


@lru_cache(maxsize=4096)
def _scalar_options(op: str, cluster: Cluster, n: float, stride: float, algorithm: str) -> tuple:
    """_options of one plan's group: the same few groups (a cluster's op, size and stride) recur
    from plan to plan, so they are priced once."""
    return _options(op, cluster, n, stride, algorithm, SCALAR)


def _in_network_options(cluster: Cluster, n, stride, g, multi, ring_moved, xp):
    """(latency, share of the bytes moved, bus bandwidth) of CollNet Direct and, on NVLS domains,
    NVLS+SHARP, for groups across domains (infinite latency elsewhere; module docstring)."""
    one_gpu = g == 1
    collnet_lat = (2 * (xp.minimum(1.0, g - 1) * _COLLNET_HOP_US + (g - 1) * _COLLNET_ARITY_US)
                   + xp.where(one_gpu, _HOP_US["net", "tree"][2], _COLLNET_NET_US)) * _US
    inside = xp.where(one_gpu, xp.inf, scale_up_bytes_per_s(cluster, g, xp) / 2)  # M in and out through NVLink twice
    nics = _network_bus_bandwidth(cluster, n, stride, g, xp)
    options = [(xp.where(multi, collnet_lat, xp.inf), moved_share("all_reduce", n, "in_network"), xp.minimum(nics, inside))]
    if cluster.intra.nvls_bytes_per_s:
        heads = xp.minimum(cluster.intra.nvls_bytes_per_s, nics)
        options.append((xp.where(multi & (g >= 2), (_NVLS_US + _NVLS_SHARP_NET_US) * _US, xp.inf), ring_moved, heads))
    return options


def _pat_latency(n, nodes, xp):
    """PAT's latency (tuning.cc): base + log2(nodes) network steps at 1/3.5 of the tree's hop +
    a part linear in the ranks."""
    simple_tree_net_hop = _HOP_US["net", "tree"][2]
    return (_PAT_BASE_US + _log2_levels(nodes, xp) * simple_tree_net_hop / _PAT_LOG_DIVISOR + n * _PAT_PER_RANK_US) * _US


def _log2_levels(nodes, xp):
    """tuning.cc's log2i(nNodes): the levels of a tree over the nodes (the tree, NVLSTree, PAT)."""
    return xp.floor(xp.log2(xp.maximum(nodes, 1.0)))


def _nvls_usable(op, g, multi, xp=NUMPY):
    """NVLS needs two or more of a node's GPUs; across nodes only the all-reduce has it (NVLSTree);
    it runs reductions only (an all-to-all under NCCL_ALGO=NVLS stays on the ring)."""
    if op not in _REDUCTIONS:
        return False
    return ((op == "all_reduce") | xp.not_(multi)) & (g >= 2)


def check_algorithm(cluster: Cluster, algorithm: str) -> None:
    check_choice("dp_algorithm", algorithm, DP_ALGORITHMS)
    check_cluster_has(cluster, algorithm)


def check_cluster_has(cluster: Cluster, algorithm: str) -> None:
    """Refuse an algorithm of DP_ALGORITHMS the cluster's links cannot run (NVLS without NVLink SHARP)."""
    if algorithm == "nvls" and not cluster.intra.nvls_bytes_per_s:
        raise ValueError(f"dp_algorithm='nvls' needs NVLink SHARP, which {cluster.intra.name} does not have; use 'ring' or 'tree'")


def group_cost(op: str, nbytes: float, cluster: Cluster, n: int, stride: int = 1, algorithm: str = "auto") -> CollectiveCost:
    """One collective of `nbytes` over a group of n ranks spaced `stride` apart."""
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a Cluster from labs.core.engine.hardware, got {cluster!r}")
    check_choice("op", op, tuple(_RING_SHARE) + ("p2p",))
    check_positive("nbytes", nbytes, allow_zero=True, maximum=1e18)
    check_positive("n", n, integer=True)
    check_positive("stride", stride, integer=True)
    check_algorithm(cluster, algorithm)
    if n > 1 << 20:
        raise ValueError(f"n must be at most {1 << 20} ranks, got {n}")
    latency, bandwidth = collective_columns(op, nbytes, cluster, n, stride, algorithm)
    return CollectiveCost(float(latency), float(bandwidth))


def bus_bandwidth(op: str, nbytes: float, cluster: Cluster, n: int, stride: int = 1, algorithm: str = "auto") -> float:
    """nccl-tests' busbw (doc/PERFORMANCE.md) the model predicts for one collective: the bytes
    each rank moves over the time it takes."""
    cost = group_cost(op, nbytes, cluster, n, stride, algorithm)
    if cost.total_s == 0:
        return 0.0
    if op == "p2p":  # nccl-tests: busbw = algbw for point-to-point
        return nbytes / cost.total_s
    return _RING_SHARE[op] * (n - 1) / n * nbytes / cost.total_s

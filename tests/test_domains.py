"""The NVLink domain as its own level, and the xGMI full mesh (issue 36 items 1 and 3).

A group's traffic runs where its DOMAIN says: TP 16, EP 64 or CP 8 inside one GB200 NVL72 rack
(18 hosts of 4 GPUs, one 72-GPU NVLink domain) stays on NVLink; the same group on DGX B200 (one
host, one 8-GPU domain) crosses the NICs. Each pinned against a hand count of topology.py's terms
(NCCL tuning.cc's hops, in seconds): ring time = base + hops x hop latency + 2 (N-1)/N x bytes / busbw.
The NVL72 rack's all-reduce bus bandwidth and the 8 x MI300X rccl-tests curve are held against
tests/data/kernel_benchmarks_v4.json, each row's error printed."""

import json
from pathlib import Path
from statistics import median

import pytest

from labs.core import Cluster, Model, Plan, estimate
from labs.core.engine.experts import all_to_all_cost, all_to_all_network_share
from labs.core.engine.hardware import CLUSTERS, GPUS, LINKS
from labs.core.engine.collectives import ring_ramp
from labs.core.engine.topology import bus_bandwidth, collective_columns, group_cost, members_per_domain

ROWS = {r["id"]: r for r in json.loads((Path(__file__).parent / "data" / "kernel_benchmarks_v4.json").read_text())}
NEW_PLATFORMS = ("dgx-b200", "hgx-b300", "gb200-nvl72", "gb300-nvl72", "gb200-nvl36x2", "mi300x", "mi325x", "mi355x", "dgx-h200")
US = 1e-6
M = 256 * 2**20  # a message large enough for the Simple protocol


def nvl72():
    return Cluster.get("gb200-nvl72", domains=1)


def dgx_b200(gpus=72):
    return Cluster.get("dgx-b200", nodes=gpus // 8)


def test_nvl72_is_18_hosts_in_one_domain():
    c = nvl72()
    assert (c.gpus, c.gpus_per_node, c.nodes, c.domain_gpus, c.domains) == (72, 4, 18, 72, 1)
    assert Cluster.get("gb200-nvl72", domains=3).gpus == 216
    # the host still decides what the host decides: CPU memory and bandwidth per GPU are a tray's
    assert c.host_bytes_per_s_per_gpu == c.host.memory_bytes_per_s * c.host.memory_efficiency / 4


def test_tp16_all_reduce_on_nvlink_inside_nvl72_and_across_nics_on_dgx_b200():
    busbw = LINKS["nvlink5"].effective_bytes_per_s
    # NVL72: 16 members in one domain, ring over NVLink, Simple: 8.4 + 2 x 15 x 3.4 us
    inside = group_cost("all_reduce", M, nvl72(), 16, 1, "ring")
    assert inside.latency_s == pytest.approx((8.4 + 30 * 3.4) * US, rel=1e-12)
    assert inside.bandwidth_s == pytest.approx(2 * 15 / 16 * M / busbw * ring_ramp(M / 16), rel=1e-12)  # NCCL's ramp (issue 37)
    assert members_per_domain(nvl72(), 16, 1) == 16
    # DGX B200: 8 members in each of 2 domains; 2 of the 30 steps cross the network (14 us each),
    # the ring's busbw the 8 members' NICs (8 x 47 GB/s), below NVLink's
    c = dgx_b200()
    across = group_cost("all_reduce", M, c, 16, 1, "ring")
    nics = 8 * c.inter.effective_bytes_per_s
    assert nics < busbw
    assert across.latency_s == pytest.approx((8.4 + 28 * 3.4 + 2 * 14.0) * US, rel=1e-12)
    assert across.bandwidth_s == pytest.approx(2 * 15 / 16 * M / nics, rel=1e-12)
    print(f"TP16 all-reduce of 256 MiB: NVL72 {inside.total_s * 1e3:.3f} ms, DGX B200 {across.total_s * 1e3:.3f} ms")


def test_cp8_ring_hop_on_nvlink_inside_nvl72_and_on_a_nic_on_dgx_b200():
    """CP 8 behind TP 8 (Megatron's order: CP ranks 8 apart): its K/V ring hop is a send/recv."""
    kv = 64 * 2**20
    lat, bw = collective_columns("p2p", kv, nvl72(), 2, 8)
    assert (float(lat), float(bw)) == pytest.approx((3.4 * US, kv / LINKS["nvlink5"].effective_bytes_per_s), rel=1e-12)
    c = dgx_b200()
    lat, bw = collective_columns("p2p", kv, c, 2, 8)
    assert (float(lat), float(bw)) == pytest.approx((14.0 * US, kv / c.inter_bytes_per_s_per_gpu), rel=1e-12)
    # the CP group's all-gather (Llama 3's CP): 8 members, 8 apart, all in the rack's domain
    assert members_per_domain(nvl72(), 8, 8) == 8 and members_per_domain(c, 8, 8) == 1


def test_ep64_all_to_all_never_touches_a_nic_inside_nvl72():
    model = Model.get("deepseek-v3")
    tokens, h, k = 4096.0, model.hidden, model.experts_per_token
    assert all_to_all_network_share(model, nvl72(), 1, 64, 0) == 0.0
    assert all_to_all_network_share(model, dgx_b200(), 1, 64, 0) > 0.3  # 8 nodes: most of the k experts elsewhere
    seconds, sent = all_to_all_cost(model, nvl72(), tokens, 1, 64, 0, 1.0)
    # hand count: each token's hidden state to its k experts' GPUs, k (63/64) copies leave the GPU over
    # NVLink; FP8 dispatch (1 byte) + BF16 combine (2), each paying NVLink's hop and NCCL's base latency
    fan_out = k * 63 / 64
    nvlink = LINKS["nvlink5"].effective_bytes_per_s
    hand = sum(tokens * fan_out * h * e / nvlink + (3.4 + 8.4) * US for e in (1.0, 2.0))
    assert float(seconds) == pytest.approx(model.moe_share * hand, rel=1e-12)
    assert float(sent) == pytest.approx(model.moe_share * tokens * fan_out * h * 3.0, rel=1e-12)
    slower, _ = all_to_all_cost(model, dgx_b200(), tokens, 1, 64, 0, 1.0)
    assert float(slower) > 2 * float(seconds)


def test_estimate_prices_tp16_inside_the_rack_and_across_nodes_on_dgx():
    model = Model.get("llama3-70b")
    plan = Plan(tp=16, pp=1, dp=4, micro_batch=1, global_batch=64, zero_stage=1, recompute="selective", sequence_parallel=True)
    rack, dgx = estimate(model, Cluster.get("gb200-nvl72", nodes=16), plan), estimate(model, Cluster.get("dgx-b200", nodes=8), plan)
    tp_rack = next(c for c in rack.collectives if c.key == "tp")
    tp_dgx = next(c for c in dgx.collectives if c.key == "tp")
    assert (tp_rack.members_per_node, tp_rack.link, tp_rack.crosses_nodes) == (16, LINKS["nvlink5"].name, False)
    assert (tp_dgx.members_per_node, tp_dgx.link, tp_dgx.crosses_nodes) == (8, LINKS["ib-ndr"].name, True)
    assert not any("TP=16 spans" in w for w in rack.warnings) and any("TP=16 spans" in w for w in dgx.warnings)


def test_nvl72_all_reduce_bus_bandwidth_against_the_rack_rows():
    """coreweave/nccl-tests, 72 GPUs of one rack, NCCL 2.26.2: the model (NVLS, its bandwidth read
    from the 8 GiB row) within 10% from 2 GiB up; below it, with NCCL's measured ramp on each
    rank's 1/72 slice (issue 37; held out of its fit), within 15% (v3: +37% at 512 MiB)."""
    c, errors = nvl72(), {}
    for key, row in ROWS.items():
        if key.startswith("nccl_gb200_nvl72_1rack_allreduce_"):
            nbytes = row["conditions"]["bytes"]
            model = bus_bandwidth("all_reduce", nbytes, c, 72) / 1e9
            errors[nbytes] = model / row["value"] - 1
            print(f"{key}: measured {row['value']:.1f} GB/s, model {model:.1f} ({errors[nbytes]:+.1%})")
    assert len(errors) == 5
    assert all(abs(e) < 0.10 for b, e in errors.items() if b >= 2 * 2**30)
    assert all(abs(e) < 0.15 for b, e in errors.items() if b < 2 * 2**30)


def test_nvlink_partitions_across_ib_cross_the_nics():
    """NCCL #1801: 3 NVLink partitions of 4 or 8 GB200 GPUs on different racks, IB between them,
    ring at 16 GiB: the group's members per partition each bring their NIC (4 or 8 x 47 GB/s)."""
    for gpus, key in ((4, "nccl_gb200_3xnvl4_ib_allreduce_ring"), (8, "nccl_gb200_3xnvl8_ib_allreduce_ring")):
        c = Cluster.get("gb200-nvl72", nodes=3 * gpus // 4, gpus_per_domain=gpus)
        row = ROWS[key]
        model = bus_bandwidth("all_reduce", row["conditions"]["bytes"], c, 3 * gpus, 1, "ring") / 1e9
        error = model / row["value"] - 1
        print(f"{key}: measured {row['value']:.1f} GB/s, model {model:.1f} ({error:+.1%})")
        assert abs(error) < 0.10


# ---- the mesh ----------------------------------------------------------------------------------
def test_a_mesh_group_reaches_one_link_per_peer():
    c, link = Cluster.get("mi300x"), LINKS["xgmi-mi300x"]
    big = 16 * 2**30
    # TP 2 on a MI300X node: one xGMI link (an NVSwitch would give the pair the whole GPU's NVLink)
    assert bus_bandwidth("all_reduce", big, c, 2, 1, "ring") == pytest.approx(link.effective_bytes_per_s, rel=2e-3)
    assert bus_bandwidth("all_reduce", big, c, 4, 1, "ring") == pytest.approx(3 * link.effective_bytes_per_s, rel=2e-3)
    # 8 GPUs: RCCL's rings cover all 7 links (TransferBench: 46.552 GB/s per link, 315.6 a GPU)
    assert bus_bandwidth("all_reduce", big, c, 8, 1, "ring") == pytest.approx(7 * link.effective_bytes_per_s, rel=2e-3)
    assert 7 * link.effective_bytes_per_s / 1e9 == pytest.approx(ROWS["rccl_mi300x_xgmi_per_gpu_transferbench"]["value"], rel=0.04)


def test_mesh_ring_and_direct_hand_counts():
    c, link = Cluster.get("mi300x"), LINKS["xgmi-mi300x"].effective_bytes_per_s
    # above 16 MiB: RCCL's ring, Simple (tuning_model_5): 17 us + 14 hops x 2.1 us
    m = 64 * 2**20
    cost = group_cost("all_reduce", m, c, 8)
    assert (cost.latency_s, cost.bandwidth_s) == pytest.approx(((17 + 14 * 2.1) * US, 2 * 7 / 8 * m / (7 * link)), rel=1e-12)
    # 1 MiB: MSCCL's all-pairs, Simple: 2 steps, the same bytes over the same 7 links on its 8
    # channels, at 0.735 of the ring's bus bandwidth (fitted on the ROCm blog's rows)
    m = 2**20
    cost = group_cost("all_reduce", m, c, 8)
    assert (cost.latency_s, cost.bandwidth_s) == pytest.approx(((17 + 2 * 2.1) * US, 2 * 7 / 8 * m / (0.735 * 7 * link)), rel=1e-12)
    # forcing the ring (NCCL_ALGO=ring) pays its 14 hops
    assert group_cost("all_reduce", m, c, 8, 1, "ring").latency_s == pytest.approx((17 + 14 * 2.1) * US, rel=1e-12)
    # an all-to-all inside the mesh: every peer on its own link at once, one step
    m = 64 * 2**20
    cost = group_cost("all_to_all", m, c, 8)
    assert (cost.latency_s, cost.bandwidth_s) == pytest.approx(((17 + 2.1) * US, 7 / 8 * m / (7 * link)), rel=1e-12)
    # a point-to-point send uses the one link to that peer
    assert group_cost("p2p", m, c, 2).bandwidth_s == pytest.approx(m / link, rel=1e-12)


def test_mi300x_all_reduce_against_rccl_tests():
    """ROCm blog (RCCL 2.22.3, ROCm 6.3, 8 x MI300X, out of place): median error within 6% and
    every size from 1 MiB to 16 GiB within 10% (measured -5.0% .. +7.7%). Before MSCCL's all-pairs
    (8 channels, up to 16 MiB) had its own share of the 28-channel ring's bandwidth it ran fast
    by up to +34% (the 16 MiB row), which a 40% tolerance here let through."""
    c, errors = Cluster.get("mi300x"), {}
    for key, row in ROWS.items():
        if key.startswith("rccl_mi300x_8gpu_allreduce_"):
            nbytes = row["conditions"]["bytes"]
            model = bus_bandwidth("all_reduce", nbytes, c, 8) / 1e9
            errors[nbytes] = model / row["value"] - 1
            print(f"{key}: measured {row['value']:.1f} GB/s, model {model:.1f} ({errors[nbytes]:+.1%})")
    assert len(errors) == 15
    assert median(abs(e) for e in errors.values()) < 0.06
    assert all(abs(e) < 0.10 for e in errors.values())


# ---- every new platform, and bad input --------------------------------------------------------
@pytest.mark.parametrize("key", NEW_PLATFORMS)
def test_platform_runs_a_llama3_70b_plan(key):
    c = Cluster.get(key, domains=1 if CLUSTERS[key].domain_gpus == 72 else 9)
    assert c.gpus == 72
    plan = Plan(tp=4, pp=2, dp=9, micro_batch=1, global_batch=72, zero_stage=1, recompute="selective", sequence_parallel=True)
    est = estimate(Model.get("llama3-70b"), c, plan)
    assert est.step_time_s > 0 and 0 < est.mfu < 1
    tp = next(u for u in est.collectives if u.key == "tp")
    assert not tp.crosses_nodes  # TP 4 stays in every platform's domain


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="gpus_per_domain must be a multiple of gpus_per_node"):
        Cluster.get("gb200-nvl72", gpus_per_domain=70)
    with pytest.raises(ValueError, match="gpu: the gb200-nvl72 platform comes with gb200 only"):
        Cluster.get("gb200-nvl72", gpu=GPUS["h100-sxm"])
    with pytest.raises(ValueError, match="gpu: the mi300x platform"):
        Cluster.get("mi300x", gpu=GPUS["mi355x"])
    with pytest.raises(ValueError, match="intra: H100-SXM joins its peers by its own 'nvlink4'"):
        Cluster(GPUS["h100-sxm"], intra=LINKS["xgmi-mi300x"])
    with pytest.raises(ValueError, match="intra: MI300X"):
        Cluster(GPUS["mi300x"], intra=LINKS["nvlink4"])
    with pytest.raises(ValueError, match="gpus_per_domain must be at most 8"):
        Cluster.get("mi300x", gpus_per_node=16)
    with pytest.raises(ValueError, match="domains"):
        Cluster.get("gb200-nvl72", domains=0)

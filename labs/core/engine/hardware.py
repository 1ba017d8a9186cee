"""GPUs, links and clusters: the hardware catalog.

Every value carries its source. Units are SI inside the engine: FLOP/s, bytes, bytes/s,
seconds. A link's bandwidth is one-way, per GPU (or per NIC port), unless its name says
otherwise. "Efficiency" turns a line rate into what NCCL or a kernel actually achieves and
is matched to a measurement named beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from labs.core.engine.validation import check_bool, check_choice, check_positive, check_fraction, check_str, short, unknown_key_error

GB = 1e9
ARCHS = ("ampere", "hopper", "blackwell", "cdna3", "cdna4")  # CDNA 3: MI300X, MI325X; CDNA 4: MI355X (AMD ROCm docs)
# The fused attention kernels a software stack can name (labs.core.engine.eras.Era.attention_kernel),
# and those a GPU may carry a measured rate for (GPU.attention_flops): FlashAttention-4 (CuTe DSL,
# Blackwell) is measured but no stack runs it yet. On ROCm the three a stack names are AMD's: TE's
# fused attention and flash-attention's ROCm backend both run Composable Kernel (CK) kernels.
ATTENTION_KERNELS = ("fa2", "fa3", "cudnn")
MEASURED_ATTENTION_KERNELS = ATTENTION_KERNELS + ("fa4",)
# Architectures whose attention rates are fractions of the bf16 peak from the kernels' papers
# (labs.core.engine.gemm.ATTENTION_EFFICIENCY); a GPU of any other carries its own per kernel.
ATTENTION_TABLE_ARCHS = ("ampere", "hopper")


@dataclass(frozen=True)
class Link:
    """One class of wire: NVLink, PCIe, an InfiniBand or RoCE port."""

    name: str
    bandwidth_bytes_per_s: float  # one-way line rate per GPU (NVLink) or per port (NIC)
    latency_s: float  # per hop of a ring step, NCCL's own cost model
    efficiency: float  # achieved / line rate for large collectives
    source: str
    nvls_bytes_per_s: float = 0.0  # NVLink SHARP all-reduce busbw where the switch reduces (0: none)
    # 0: the GPUs reach one another through switches (NVSwitch, a NIC's fabric) and the bandwidth
    # above is per GPU; k: a full mesh (AMD Infinity Fabric / xGMI), one point-to-point link to
    # each of k peers, and the bandwidth above is per link (labs.core.engine.topology prices it)
    mesh_peers: int = 0
    # A scale-out link whose switches reduce in the network (InfiniBand SHARP), with NCCL's CollNet
    # run on them (NCCL_COLLNET_ENABLE=1 and the SHARP plugin; NCCL's default is off):
    # labs.core.engine.topology prices CollNet and NVLS+SHARP on it. False: the switches only forward.
    in_network_reduction: bool = False

    def __post_init__(self):
        check_positive("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)
        check_positive("mesh_peers", self.mesh_peers, allow_zero=True, integer=True, maximum=1024)
        check_positive("latency_s", self.latency_s, allow_zero=True)
        check_fraction("efficiency", self.efficiency)
        check_positive("nvls_bytes_per_s", self.nvls_bytes_per_s, allow_zero=True)
        check_bool("in_network_reduction", self.in_network_reduction)

    @property
    def effective_bytes_per_s(self) -> float:
        return self.bandwidth_bytes_per_s * self.efficiency


@dataclass(frozen=True)
class GPU:
    """An accelerator: dense peaks (no sparsity), memory, and what kernels achieve on it."""

    name: str
    bf16_flops: float  # dense BF16 tensor-core peak, FLOP/s
    fp8_flops: float  # dense FP8 peak, FLOP/s (0 where the chip has none)
    hbm_bytes: float
    hbm_bytes_per_s: float
    nvlink: str  # key into LINKS of the GPU's own NVLink generation
    mamf_flops: float  # best-shape bf16 GEMM FLOP/s measured on the part (Maximum Achievable Matmul FLOPS)
    arch: str  # "ampere", "hopper" or "blackwell": which attention kernels run, and how fast (labs.core.engine.gemm)
    sms: int  # streaming multiprocessors: communication kernels take some of them
    hbm_efficiency: float  # fraction of HBM bandwidth a streaming kernel reaches
    confirmed: bool  # the dense peaks and HBM capacity rest on a datasheet or a tool's reading (the rest: `unconfirmed`)
    source: str
    fp8_mamf_flops: float = 0.0  # best-shape FP8 GEMM FLOP/s measured (0 where the chip has no FP8)
    tdp_w: float = 0.0  # the part's default (maximum) board power limit, watts; 0: not catalogued
    power_curve: str = ""  # key into POWER_CURVES: how the chip's GEMM rate falls with its power limit
    power_limit_w: float | None = None  # a lowered power limit (GPU.at_power_limit); None: at tdp_w
    fp6_flops: float = 0.0  # dense FP6 tensor peak, FLOP/s (0 where the chip has none)
    fp4_flops: float = 0.0  # dense FP4 tensor peak, FLOP/s (0 where the chip has none)
    # Measured fused-attention rates, ((kernel, FLOP/s of the executed causal work), ...): the rate
    # labs.core.engine.gemm prices attention at on this part. Empty: the architecture's fraction of
    # bf16_flops (labs.core.engine.gemm.ATTENTION_EFFICIENCY, Ampere and Hopper only).
    attention_flops: tuple[tuple[str, float], ...] = ()
    # "field: assumption" for every value of this entry that no measurement or datasheet backs
    # (tests/test_unconfirmed.py lists them all, so the list only shrinks on purpose).
    unconfirmed: tuple[str, ...] = ()

    def __post_init__(self):
        for name in ("bf16_flops", "hbm_bytes", "hbm_bytes_per_s", "mamf_flops"):
            check_positive(name, getattr(self, name))
        for name in ("fp8_flops", "fp6_flops", "fp4_flops"):
            check_positive(name, getattr(self, name), allow_zero=True)
        self._check_attention_flops()
        if not isinstance(self.unconfirmed, tuple):
            raise ValueError(f"unconfirmed must be a tuple of 'field: assumption' strings, got {self.unconfirmed!r}")
        if not self.confirmed and not self.unconfirmed:
            raise ValueError("unconfirmed must say what is assumed ('field: assumption') when confirmed is False")
        for note in self.unconfirmed:
            if not isinstance(note, str) or note.split(":")[0] not in self.__dataclass_fields__ or ": " not in note:
                raise ValueError(f"unconfirmed must hold 'field: assumption' strings naming a GPU field, got {note!r}")
        check_positive("sms", self.sms, integer=True)
        check_choice("arch", self.arch, ARCHS)
        check_fraction("hbm_efficiency", self.hbm_efficiency)
        check_positive("fp8_mamf_flops", self.fp8_mamf_flops, allow_zero=True)
        if self.fp8_mamf_flops > max(self.fp8_flops, 0.0) or (self.fp8_flops and not self.fp8_mamf_flops):
            raise ValueError(f"fp8_mamf_flops must be measured and at most fp8_flops ({self.fp8_flops:g}), got {self.fp8_mamf_flops:g}")
        if self.mamf_flops > self.bf16_flops:
            raise ValueError(f"mamf_flops must not exceed bf16_flops ({self.bf16_flops:g}), got {self.mamf_flops:g}")
        check_positive("tdp_w", self.tdp_w, allow_zero=True)
        if self.power_curve:
            check_choice("power_curve", self.power_curve, POWER_CURVES)
        if self.power_limit_w is not None:
            check_power_limit(self, self.power_limit_w)

    def _check_attention_flops(self) -> None:
        if not isinstance(self.attention_flops, tuple) or not all(isinstance(pair, tuple) and len(pair) == 2 for pair in self.attention_flops):
            raise ValueError(f"attention_flops must be a tuple of (kernel, FLOP/s) pairs, got {self.attention_flops!r}")
        for kernel, rate in self.attention_flops:
            check_choice("attention_flops", kernel, MEASURED_ATTENTION_KERNELS)
            check_positive("attention_flops", rate, maximum=self.bf16_flops)
        missing = [k for k in ATTENTION_KERNELS if k not in dict(self.attention_flops)]
        if self.arch not in ATTENTION_TABLE_ARCHS and missing:
            raise ValueError(f"attention_flops must give a rate for {', '.join(missing)} on a {self.arch} GPU (only "
                             f"{' and '.join(ATTENTION_TABLE_ARCHS)} have a per-architecture table), got {self.attention_flops!r}")

    def power_limit_range(self) -> tuple[float, float]:
        """The power limits (watts) this part can be set to with a documented GEMM rate: from the
        lowest documented point of its chip's curve to its own TDP."""
        if not self.power_curve or not self.tdp_w:
            raise ValueError(f"power_limit_w: {self.name} has no documented clock-vs-power curve (labs.core.engine.hardware.POWER_CURVES)")
        return POWER_CURVES[self.power_curve][0].watts, self.tdp_w

    @property
    def clock_fraction(self) -> float:
        """The compute rates' share of the part's own at its power limit (1 at its TDP): dividing
        a lowered rate by it gives the datasheet's, which MFU is measured against."""
        if self.power_limit_w is None:
            return 1.0
        fraction = partial(power_limit_gemm_fraction, self.power_curve)
        return fraction(self.power_limit_w) / fraction(self.tdp_w)

    def at_power_limit(self, watts) -> "GPU":
        """This GPU with its board power limit lowered to `watts` (nvidia-smi -pl): the compute clock,
        and with it every compute rate (dense peaks, measured GEMM rates), falls by the chip's
        documented curve; HBM bandwidth and capacity stay (the power limit lowers the SM clock only)."""
        check_power_limit(self, watts)
        fraction = partial(power_limit_gemm_fraction, self.power_curve)
        ratio = fraction(watts) / fraction(self.power_limit_w or self.tdp_w)
        return replace(
            self, name=f"{self.name.split(' @ ')[0]} @ {watts:g} W", power_limit_w=float(watts),
            bf16_flops=self.bf16_flops * ratio, fp8_flops=self.fp8_flops * ratio,
            mamf_flops=self.mamf_flops * ratio, fp8_mamf_flops=self.fp8_mamf_flops * ratio,
            fp6_flops=self.fp6_flops * ratio, fp4_flops=self.fp4_flops * ratio,
            attention_flops=tuple((kernel, rate * ratio) for kernel, rate in self.attention_flops),
            source=f"{self.source.split(' Power limit ')[0]} Power limit {watts:g} W of {self.tdp_w:g}: compute x "
                   f"{fraction(watts) / fraction(self.tdp_w):.3f} (POWER_CURVES[{self.power_curve!r}]).",
        )


@dataclass(frozen=True)
class Host:
    """A node's CPUs and their memory, where ZeRO-Offload keeps the optimizer state."""

    name: str
    memory_bytes: float  # DRAM of the whole node
    memory_bytes_per_s: float  # peak DRAM bandwidth of the whole node (all sockets)
    memory_efficiency: float  # fraction a streaming kernel (CPU Adam) reaches
    pcie: str  # key into LINKS of each GPU's link to the host
    source: str

    def __post_init__(self):
        check_positive("memory_bytes", self.memory_bytes)
        check_positive("memory_bytes_per_s", self.memory_bytes_per_s)
        check_fraction("memory_efficiency", self.memory_efficiency)


# NCCL's cost model, src/graph/tuning.cc at 5067397 (hwLat, Ring / Simple protocol, microseconds
# per ring step): NVLink 3.4, PCIe 5.7, network 14.0; baseLat Ring/Simple 8.4 per call. The same
# table as labs.core.engine.topology's (tests/test_engine_v3_mechanisms.py holds them equal): these are
# the hops of point-to-point sends (pipeline, CP ring) and the expert all-to-all.
NCCL_BASE_LATENCY_S = 8.4e-6
_NVLINK_HOP_S = 3.4e-6
_PCIE_HOP_S = 5.7e-6
_NET_HOP_S = 14.0e-6

LINKS: dict[str, Link] = {
    "nvlink3": Link(
        "NVLink 3 (A100)", 300 * GB, _NVLINK_HOP_S, 230 / 300,
        "A100 datasheet: 600 GB/s total = 12 links x 25 GB/s each way. Efficiency: NCCL "
        "all-reduce busbw ~230 GB/s on 8x A100 (sjeaugey, NVIDIA/nccl-tests #149).",
    ),
    "nvlink4": Link(
        "NVLink 4 (H100/H200)", 450 * GB, _NVLINK_HOP_S, 370 / 450,
        "H100 datasheet: 900 GB/s total = 450 GB/s each way (18 links). Efficiency: NCCL ring "
        "all-reduce busbw ~370 GB/s on 8x H100 (NVIDIA/nccl-tests #212, nccl #1455). NVLS: ~480 "
        "busbw at GB messages (nccl-tests #212, #290: 476; Azure ND H100 v5: 478.9 at 8 GB).",
        480 * GB,
    ),
    "nvlink5": Link(
        "NVLink 5 (Blackwell)", 900 * GB, _NVLINK_HOP_S, 679.61 / 900,
        "18 links x 25 GB/s x 2 lanes = 900 GB/s each way, 1.8 TB/s both (ds_nvlink5_uni_per_gpu, "
        "ds_b200_nvlink_per_gpu). Efficiency: NCCL ring all-reduce busbw 679.61 GB/s at 8 GiB on the 4 GPUs of "
        "one GB200 compute tray (nccl_gb200_4gpu_allreduce_ring_8589934592, Azure, NCCL 2.25.1). NVLS: 834.57 "
        "GB/s busbw at 8 GiB over the 72 GPUs of one NVL72 rack (nccl_gb200_nvl72_1rack_allreduce_8589934592, "
        "CoreWeave, NCCL 2.26.2, algorithm not stated: above the ring's plateau, so NVLS), assumed the same on "
        "an 8-GPU HGX board (unconfirmed). tests/test_domains.py holds the rack's other sizes against it.",
        834.57 * GB,
    ),
    "nvlink4-h800": Link(
        "NVLink 4 (H800, export-limited)", 200 * GB, _NVLINK_HOP_S, 160 / 200,
        "H800: NVLink 400 GB/s bidirectional = 200 GB/s each way; DeepSeek-V3 (arXiv:2412.19437 Sec. 3.2.2) "
        "measures about 160 GB/s (reference file hw_h800).",
    ),
    "pcie4": Link(
        "PCIe Gen4 x16", 32 * GB, _PCIE_HOP_S, 0.80,
        "PCIe 4.0 x16: 64 GB/s bidirectional, ~32 GB/s each way (A100 datasheet). Efficiency "
        "0.8: 128b/130b coding plus TLP headers leave ~25 GB/s in practice.",
    ),
    "pcie5": Link(
        "PCIe Gen5 x16", 64 * GB, _PCIE_HOP_S, 0.80,
        "PCIe 5.0 x16: 128 GB/s bidirectional (H100 datasheet), 64 GB/s each way; "
        "efficiency as for Gen4.",
    ),
    "ib-hdr": Link(
        "InfiniBand HDR 200 Gb/s", 25 * GB, _NET_HOP_S, 0.85,
        "HDR = 200 Gb/s = 25 GB/s per port. Efficiency: 3 nodes x 4 HDR A100, NCCL busbw "
        "84.8 GB/s of 100 theoretical (NVIDIA/nccl-tests #119).",
    ),
    "ib-ndr": Link(
        "InfiniBand NDR 400 Gb/s", 50 * GB, _NET_HOP_S, 47 / 50,
        "NDR = 400 Gb/s = 50 GB/s per port. Efficiency: NCCL reaches 46-49 GB/s per NDR NIC "
        "(NVIDIA staff, NVIDIA/nccl-tests #290 and #267).",
    ),
    "ib-xdr": Link(
        "InfiniBand XDR 800 Gb/s (unconfirmed)", 100 * GB, _NET_HOP_S, 47 / 50,
        "XDR = 800 Gb/s = 100 GB/s per port; efficiency assumed equal to NDR's.",
    ),
    # The same ports behind switches that reduce (SHARP), with NCCL's CollNet on: Cluster.with_fabric
    # ("ib-ndr-sharp") turns it on for a preset. Each switch generation's SHARP: Quantum (HDR) v2,
    # Quantum-2 (NDR) v3, Quantum-X800 (XDR) v4 (NVIDIA Quantum-2 / QM9700 product material: "SHARPv3
    # In-Network Computing"). No datasheet gives the switch's reduction rate: taken as the port's line
    # rate, so the NICs bound it.
    "ib-hdr-sharp": Link(
        "InfiniBand HDR 200 Gb/s with SHARPv2 (Quantum)", 25 * GB, _NET_HOP_S, 0.85,
        "As ib-hdr; SHARPv2 in NVIDIA Quantum HDR switches; the switch's reduction rate assumed at line rate "
        "(unconfirmed). CollNet on DGX A100 (NVIDIA/nccl #320, sjeaugey): ~20 GB/s a NIC, 'with 8 NICs we're "
        "limited to ~110GB/s AlgBw', 4 NICs ~80 (tests/test_sharp.py).",
        in_network_reduction=True,
    ),
    "ib-ndr-sharp": Link(
        "InfiniBand NDR 400 Gb/s with SHARPv3 (Quantum-2)", 50 * GB, _NET_HOP_S, 47 / 50,
        "As ib-ndr; SHARPv3 in NVIDIA Quantum-2 switches (QM9700); the switch's reduction rate assumed at line "
        "rate (unconfirmed). Measured: 8 x 8 H100 over InfiniBand with SHARP, 383.23 GB/s busbw at 4 GiB "
        "(nccl_h100_64gpu_sharp_allreduce_4294967296, CoreWeave; tests/test_sharp.py).",
        in_network_reduction=True,
    ),
    "ib-xdr-sharp": Link(
        "InfiniBand XDR 800 Gb/s with SHARPv4 (Quantum-X800, unconfirmed)", 100 * GB, _NET_HOP_S, 47 / 50,
        "As ib-xdr (efficiency assumed NDR's); SHARPv4 in NVIDIA Quantum-X800 switches; the switch's reduction "
        "rate assumed at line rate.",
        in_network_reduction=True,
    ),
    "opa-100": Link(
        "Omni-Path 100 Gb/s", 12.5 * GB, _NET_HOP_S, 0.85,
        "Intel Omni-Path Architecture 100 series: 100 Gb/s = 12.5 GB/s per port (Intel OPA 100 product brief). "
        "Efficiency assumed equal to InfiniBand HDR's measured 0.85 (no NCCL busbw row stored); hop latency "
        "NCCL's network figure, as for InfiniBand.",
    ),
    "roce-400": Link(
        "RoCE 400 Gb/s", 50 * GB, _NET_HOP_S, 47 / 50,
        "400 Gb/s per GPU as on Meta's Llama 3 cluster (arXiv:2407.21783 Sec. 3.3.1); "
        "efficiency assumed equal to NDR's at the same line rate.",
    ),
    # AMD Instinct's 8-GPU node: a full mesh, 7 Infinity Fabric links per GPU, one to each peer
    # (ROCm docs mi300.md, ds_mi300x_if_links; RCCL's rome_model_79 connMatrix is all ones).
    # Bandwidth per link and direction (labs.core.engine.topology.scale_up_bytes_per_s adds the
    # links a group has); hop latency RCCL's (topology._RCCL_XGMI_HOP_US prices collectives).
    "xgmi-mi300x": Link(
        "Infinity Fabric xGMI (MI300X/MI325X, 7 links)", 64 * GB, 2.1e-6, 46.552 / 64,
        "ds_mi300x_xgmi_link_uni / ds_mi325x_xgmi_link_uni: 64 GB/s per link each way (AMD's 128 GB/s "
        "peak halved, derived). Efficiency: TransferBench all-to-all with all 56 links busy, 46.552 GB/s per "
        "link (rccl_mi300x_xgmi_link_transferbench, AMD ROCm blog 2025-03; AMD's stated usable ~48, 75%). "
        "Latency: RCCL tuning_model_5's xGMI ring hop, Simple (src/graph/tuning.cc).",
        mesh_peers=7,
    ),
    "xgmi-mi355x": Link(
        "Infinity Fabric xGMI (MI355X, 7 links, unconfirmed)", 76.5 * GB, 2.1e-6, 46.552 / 64,
        "ds_mi355x_xgmi_link_uni: 76.5 GB/s per link each way (AMD's 153 GB/s halved, derived). Efficiency "
        "and latency assumed MI300X's (unconfirmed: no TransferBench or rccl-tests row on MI355X).",
        mesh_peers=7,
    ),
    # Grace to Blackwell: NVLink-C2C, 900 GB/s both ways per GB200 superchip (one Grace, two
    # GPUs; NVIDIA GB200 material, not a stored row): 450 GB/s each way shared by the two GPUs.
    # Efficiency: nvbandwidth on Azure ND GB200 v6, one GPU copying to and from Grace memory, 201 GB/s
    # host to device and 193 device to host (nvbw_gb200_host_to_device, nvbw_gb200_device_to_host):
    # their mean over the 225 GB/s each way (was PCIe's 0.80, 180 GB/s; now 197).
    "nvlink-c2c": Link(
        "NVLink-C2C (Grace to Blackwell, unconfirmed)", 225 * GB, _PCIE_HOP_S, (201 + 193) / 2 / 225,
        "GB200 superchip: NVLink-C2C 900 GB/s bidirectional between one Grace and its two Blackwell GPUs "
        "(unconfirmed: no NVIDIA per-GPU figure stored; each GPU assumed to have half of the 450 GB/s each way, "
        "which one GPU's measured 201 GB/s does not contradict); efficiency: nvbandwidth's host to device 201 and "
        "device to host 193 GB/s on Azure ND GB200 v6, 0.876 of 225; hop latency assumed PCIe's.",
    ),
}

_A100_SRC = "NVIDIA A100 80GB SXM datasheet: 312 TFLOP/s BF16 dense, 80 GB HBM2e, 2,039 GB/s."
_H100_SRC = (
    "NVIDIA H100 SXM datasheet: 989.4 TFLOP/s BF16 dense (1,979 is the sparse figure), "
    "1,979 FP8 dense, 80 GB HBM3, 3.35 TB/s."
)
# Measured best-shape bf16 GEMMs, stas00/ml-engineering compute/accelerator/README.md (MAMF table,
# mean of 100 iterations): A100 SXM 271.2 of 312 TFLOP/s, H100 SXM 794.5 of 989 ("H200 is the
# same"), A100 PCIe 252.9 (H100's is row mamf_h100_bf16 of tests/data/kernel_benchmarks_v4.json, which
# holds the Blackwell and Instinct rows the entries below cite). labs.core.engine.gemm turns these into a layer's GEMM
# time by shape. How fast attention runs depends on the kernel the software stack uses, so its
# efficiency lives with the stack (labs.core.engine.eras, labs.core.engine.gemm.ATTENTION_EFFICIENCY), keyed
# by the GPU's architecture. SM counts: A100 108, H100/H200 132 (NVIDIA architecture whitepapers).
# FP8 (float8_e4m3fn) MAMF from the same table: H100 SXM 1402.6 of 1979 (mamf_h100_fp8), H200
# SXM 1453.4 of 1979 (mamf_h200_fp8).
# HBM as nvidia-smi reports it, in bytes (MiB x 2^20): A100 80GB 81,920 MiB (stas00/ml-engineering
# debug.md), H100 80GB 81,559 MiB (wilicc/gpu-burn #114), H200 143,771 MiB (public nvidia-smi logs),
# B200 183,359 MiB (NVIDIA/TensorRT-LLM #10278). The marketing "80 GB" is the rounded figure.
_A100_HBM = 81_920 * 2**20
_H100_HBM = 81_559 * 2**20
_H200_HBM = 143_771 * 2**20
_B200_HBM = 183_359 * 2**20
_HBM_EFF = 0.90  # STREAM-triad class kernels reach ~90% of HBM peak on A100 and H100.
# Azure's STREAM kernels measured H100 triad 2.97 TB/s of 3.35 (0.89) and H200 4.15 of 4.8 (0.86)
# (kernel_benchmarks_v4.json hbm_azure_h100_triad, hbm_azure_h200_triad; tests/test_gpus_v4.py).
# On Hopper cuDNN's fused attention runs at 0.50 of 989.4 TFLOP/s (labs.core.engine.gemm, Shah et
# al. 2024 Fig. 5/7), 0.62 of H100's MAMF: the share assumed for Instinct parts, no CK row stored.
_H100_CUDNN_OVER_MAMF = 0.50 * 989.4 / 794.5
# MI300X's HBM: Azure's STREAM triad 4.09 TB/s of 5.3 (hbm_azure_mi300x_triad; AMD's acceptance guide expects
# BabelStream triad 3.948 with all 8 GPUs at once, hbm_amd_mi300x_babelstream_triad); MI325X (the same CDNA 3
# dies and memory controllers with HBM3e) is assumed to reach the same share.
_CDNA3_HBM_EFF = 4.09 / 5.3
# Blackwell's HBM3e (B200, B300, GB200, GB300: eight stacks, 7,680 bits at ~4 GHz, 7.67 TB/s as the B300
# device reports it): BabelStream triad reached 6.567 TB/s on B300 (median of 7 GPUs,
# hbm_babelstream_b300_triad). Each part's efficiency is that achieved rate over its datasheet rate
# (unconfirmed on B200, GB200 and GB300: no STREAM row of theirs; H100's 0.90 share had put B200 and GB200
# at 6.93 and 7.2 TB/s, 6% and 10% above the one Blackwell measurement).
_BLACKWELL_HBM_ACHIEVED = 6.5672e12
# B200's measured attention rates, FLOP/s of the executed (causal) work, forward (kernel_benchmarks_v4.json):
_B200_ATTENTION = (
    ("cudnn", 977e12),  # attn_cudnn_b200_hd64_causal_s4096: causal, head dim 64, 4K (826 at 2K, 1,071 at 8K; flash-attention PR #2605)
    ("fa4", 917e12),  # attn_fa4_b200_hd64_causal_s4096: FlashAttention-4 (CuTe DSL), same shape and PR
    ("fa2", 343.07e12),  # attn_fa2_b200_hd64_full_s8192: FA2 2.7.4 (flash-attention #1589), the median of its 2K-8K rows (307-381)
    ("fa3", 343.07e12),  # FlashAttention-3 is built for sm90 only: a stack that asks for it runs FA2
)



@dataclass(frozen=True)
class PowerPoint:
    """One documented point of a chip's GEMM rate against its board power limit."""

    watts: float
    gemm_fraction: float  # large-GEMM FLOP/s at this limit over the rate at the chip's full power
    source: str


# A lower board power limit (nvidia-smi -pl) makes GPU Boost run the SMs at a lower clock, so a
# compute-bound GEMM slows by the clock ratio. Each chip's curve is read from kernel benchmarks of
# one chip at different power limits (lower-TDP parts of the same die, same datasheet boost clock;
# the air-cooled PCIe cards' rates include whatever thermal throttling they had), interpolated
# linearly between points; no point is extrapolated, so limits below a curve's lowest
# point are refused. nvidia-smi accepts lower limits (A100 SXM 100-400 W, NVIDIA/DCGM #152 log), but
# no GEMM rate there is documented here. The HBM clock is not lowered: nvidia-smi lists one memory
# clock for these parts (A100 SXM 80GB: 1,593 MHz both "Max" and "Applications" clock, NVIDIA/DCGM
# #152), and a measured binding power cap left the memory clock at its maximum in every sample while
# the SM clock fell (ashalliants/ninfer-3090 #72, an RTX 3090: the only stored measurement, not a
# data-center part; unconfirmed for HBM).
POWER_CURVES: dict[str, tuple[PowerPoint, ...]] = {
    "ga100": (  # A100: every part boosts to 1,410 MHz (A100 datasheet); only the power limit differs
        PowerPoint(250, 220 / 263,
                   "Fire-Flyer 2 (DeepSeek, SC24, arXiv:2408.14158), artifact A1 (github.com/haswelliris/sc_ad, "
                   "A1/readme.md, A1/bench_gemm.py): FP16 GEMM 220 TFLOP/s on A100 PCIe 40GB (250 W TDP) against "
                   "263 on DGX A100 SXM4 40GB (400 W), same script (square N = 2,048-16,384), PyTorch 1.12, CUDA 11.3."),
        PowerPoint(300, 252.9 / 271.2,
                   "stas00/ml-engineering compute/accelerator/README.md, MAMF table (BF16, best shape, mean of 100): "
                   "A100 PCIe 80GB (300 W TDP, same README's power table) 252.9 TFLOP/s against A100 SXM (400 W) 271.2."),
        PowerPoint(400, 1.0, "A100 SXM at its 400 W TDP: the reference."),
    ),
    "gh100": (  # H100 / H200 / H800: 132 SMs on the SXM and NVL parts
        PowerPoint(400, 835.5 / 989.4,
                   "NVIDIA H100 product page: H100 NVL (132 SMs, 350-400 W) 835.5 TFLOP/s BF16 dense against H100 SXM "
                   "(132 SMs, 700 W) 989.4, i.e. NVIDIA's rated tensor clocks 1,545 and 1,830 MHz (peak / (132 SMs x "
                   "4,096 FLOP per clock)). A datasheet rating, not a measurement (unconfirmed): no stored H100 GEMM "
                   "benchmark at a lowered power limit."),
        PowerPoint(700, 1.0, "H100 SXM at its 700 W TDP: the reference."),
    ),
}


def power_limit_gemm_fraction(curve: str, watts):
    """The chip's large-GEMM rate at `watts` over its full-power rate, interpolated on its curve."""
    points = POWER_CURVES[curve]
    return float(np.interp(watts, [p.watts for p in points], [p.gemm_fraction for p in points]))


def check_power_limit(gpu: "GPU", watts) -> None:
    low, high = gpu.power_limit_range()
    check_positive("power_limit_w", watts)
    if not low <= watts <= high:
        raise ValueError(
            f"power_limit_w must be between {low:g} and {high:g} W for {gpu.name} (its TDP; below {low:g} W no GEMM "
            f"rate is documented, labs.core.engine.hardware.POWER_CURVES[{gpu.power_curve!r}]), got {short(watts)}"
        )

GPUS: dict[str, GPU] = {
    "a100-sxm-80gb": GPU(
        "A100-SXM-80GB", 312e12, 0.0, _A100_HBM, 2039 * GB, "nvlink3", 271.2e12, "ampere", 108, _HBM_EFF, True,
        _A100_SRC, tdp_w=400, power_curve="ga100",
    ),
    # The 40 GB part: the same chip with 40 GB HBM2 at 1,555 GB/s (A100 datasheet). nvidia-smi
    # shows 40,960 MiB (40,536 MiB usable is what some driver versions print; the catalog keeps
    # the 40,960 MiB the datasheet's 40 GB stands for). Matmul rate: the 80 GB part's MAMF scaled by
    # nothing (same clocks and SMs); unconfirmed: no MAMF row for the 40 GB part.
    "a100-sxm-40gb": GPU(
        "A100-SXM-40GB", 312e12, 0.0, 40_960 * 2**20, 1555 * GB, "nvlink3", 271.2e12, "ampere", 108, _HBM_EFF, True,
        "NVIDIA A100 datasheet (40 GB SXM4): 312 TFLOP/s BF16 dense, 40 GB HBM2, 1,555 GB/s; MAMF taken "
        "as the 80 GB part's (same chip and clocks, no separate measurement stored). TDP 400 W.", tdp_w=400, power_curve="ga100",
        unconfirmed=("mamf_flops: the 80 GB part's MAMF (same chip and clocks; no row for the 40 GB part)",),
    ),
    "a100-pcie-80gb": GPU(
        "A100-PCIe-80GB", 312e12, 0.0, _A100_HBM, 1935 * GB, "nvlink3", 252.9e12, "ampere", 108, _HBM_EFF, True,
        "NVIDIA A100 80GB PCIe datasheet: 312 TFLOP/s BF16 dense, 80 GB HBM2e, 1,935 GB/s, 300 W.", tdp_w=300, power_curve="ga100",
    ),
    "h100-sxm": GPU(
        "H100-SXM", 989.4e12, 1979e12, _H100_HBM, 3350 * GB, "nvlink4", 794.5e12, "hopper", 132, _HBM_EFF, True,
        _H100_SRC, 1402.6e12, tdp_w=700, power_curve="gh100",
    ),
    # H100 NVL: the PCIe card with 94 GB HBM3 at 3.9 TB/s, 835.5 TFLOP/s BF16 dense (1,671 with
    # sparsity), FP8 1,670.5 dense, NVLink bridges 600 GB/s between pairs (NVIDIA H100 product
    # page, "H100 NVL" column). Fewer SMs' clocks than SXM (350-400 W): MAMF scaled from the SXM
    # part by the peak ratio, unconfirmed (no MAMF row for NVL). nvidia-smi: 95,830 MiB
    # (public nvidia-smi logs of H100 NVL).
    "h100-nvl-94gb": GPU(
        "H100-NVL-94GB", 835.5e12, 1670.5e12, 95_830 * 2**20, 3900 * GB, "nvlink4", 794.5e12 * 835.5 / 989.4, "hopper", 132, _HBM_EFF, False,
        "NVIDIA H100 product page (H100 NVL): 835.5 TFLOP/s BF16 dense, 94 GB HBM3, 3.9 TB/s, 350-400 W. "
        "MAMF scaled from H100 SXM by the peak ratio (unconfirmed).", 1402.6e12 * 835.5 / 989.4, tdp_w=400, power_curve="gh100",
        unconfirmed=("mamf_flops: H100 SXM's MAMF x the peak ratio 835.5 / 989.4 (no row for H100 NVL)",
                     "fp8_mamf_flops: H100 SXM's FP8 MAMF x the peak ratio (no row for H100 NVL)"),
    ),
    # H100 94 GB with HBM2e at 2.41 TB/s, as in NHR@FAU's Helma nodes (4 GPUs a node), the H100
    # of Ujeniya et al. 2026 (arXiv:2604.11391, Sec. 3: "H100: HBM2e, 94 GiB, 2.41 TB/s", compute
    # identical to the SXM part). Matmul rates as H100 SXM's.
    "h100-94gb-hbm2e": GPU(
        "H100-94GB-HBM2e", 989.4e12, 1979e12, 94 * 2**30, 2410 * GB, "nvlink4", 794.5e12, "hopper", 132, _HBM_EFF, True,
        "Ujeniya et al. 2026 (arXiv:2604.11391) Sec. 3: H100 with 94 GiB HBM2e at 2.41 TB/s, H100 compute; "
        "MAMF taken as H100 SXM's. Power caps 200-700 W in that study: TDP 700 W.", 1402.6e12, tdp_w=700, power_curve="gh100",
        unconfirmed=("mamf_flops: H100 SXM's (same compute; no row for this part)", "fp8_mamf_flops: H100 SXM's (no row for this part)"),
    ),
    # H100 SXM5 96 GB (HBM3, 3.36 TB/s; sold in China as the H800's successor parts and in some
    # HGX boards): the SXM5 die with 6 HBM stacks enabled. Compute as H100 SXM.
    "h100-sxm-96gb": GPU(
        "H100-SXM-96GB", 989.4e12, 1979e12, 96 * 1024 * 2**20, 3360 * GB, "nvlink4", 794.5e12, "hopper", 132, _HBM_EFF, False,
        "H100 SXM5 96 GB as listed by server vendors (unconfirmed by an NVIDIA datasheet): the H100 SXM compute with "
        "96 GB HBM3 at 3.36 TB/s; capacity taken as 96 GiB; TDP as H100 SXM's 700 W.", 1402.6e12, tdp_w=700, power_curve="gh100",
        unconfirmed=("hbm_bytes: server vendors' 96 GB taken as 96 GiB (no NVIDIA datasheet, no nvidia-smi reading)",
                     "tdp_w: H100 SXM's 700 W"),
    ),
    "h200-sxm": GPU(
        "H200-SXM", 989.4e12, 1979e12, _H200_HBM, 4800 * GB, "nvlink4", 794.5e12, "hopper", 132, _HBM_EFF, True,
        "NVIDIA H200 product page: H100 compute, 141 GB HBM3e, 4.8 TB/s, 700 W.", 1453.4e12, tdp_w=700, power_curve="gh100",
    ),
    "h800-sxm": GPU(
        "H800-SXM", 989.4e12, 1979e12, _H100_HBM, 3350 * GB, "nvlink4-h800", 794.5e12, "hopper", 132, _HBM_EFF, True,
        "H800 SXM: the H100 SXM die and memory with NVLink cut to 400 GB/s bidirectional (reference file "
        "hw_h800; DeepSeek-V3 Sec. 3.2.2). Matmul rates taken as H100's (same chip and clocks); TDP as H100 SXM's 700 W.", 1402.6e12,
        tdp_w=700, power_curve="gh100",
        unconfirmed=("mamf_flops: H100's (same chip and clocks; no H800 MAMF row)", "fp8_mamf_flops: H100's (no per-tensor FP8 row on H800)"),
    ),
    # ---- Blackwell and Instinct (engine v4). Row ids name tests/data/kernel_benchmarks_v4.json
    # (its .md says where each came from); `unconfirmed` lists what no row backs. Dense peaks:
    # stas00/ml-engineering's TFLOPS table @744d01e (it transcribes the DGX B200/B300, GB200/GB300
    # NVL72 and AMD product pages and halves sparse figures); MAMF: its MAMF table (torch.matmul,
    # mean of 100 after 50 warm-up, best shape of mamf-finder.py).
    "b200": GPU(
        "B200",
        2.25e15,  # ds_b200_bf16_dense_peak (ml-engineering TFLOPS table, DGX B200 datasheet)
        4.5e15,  # ds_b200_fp8_dense_peak; NVIDIA's sparse 9 PFLOPS halved (ds_b200_fp8_sparse_peak)
        _B200_HBM,  # nvidia-smi 183,359 MiB (NVIDIA/TensorRT-LLM #10278); datasheet 180 GB (ds_b200_hbm_gb)
        7700 * GB,  # ds_b200_hbm_tbs_nvidia (NVIDIA Blackwell datasheet, HGX B200); ml-engineering says 8.0 (ds_b200_hbm_tbs)
        "nvlink5",
        1745e12,  # mamf_b200_bf16: 77.6% of 2,250 at 1792x16128x3072, torch 2.7.1+cu128
        "blackwell", 148, _BLACKWELL_HBM_ACHIEVED / (7700 * GB), True,  # 148 SMs: ds_b200_sms (device query, pytorch/ao #4002: "Number of SMs: 148")
        "NVIDIA Blackwell datasheet (HGX B200: 180 GB HBM3e, 7.7 TB/s, 1,000 W) and the ml-engineering TFLOPS and "
        "MAMF tables (kernel_benchmarks_v4.json rows ds_b200_*, mamf_b200_bf16, mamf_b200_fp8); attention from "
        "Dao-AILab/flash-attention PR #2605 (cuDNN, FA4) and #1589 (FA2 2.7.4).",
        3432.5e12,  # mamf_b200_fp8: float8_e4m3fn, 76.3% of 4,500 at 15360x4096x3072 (was assumed 2 x BF16's)
        tdp_w=1000,  # ds_b200_tdp (NVIDIA datasheet, HGX B200 max TDP); MLPerf B200 systems at 1,000 W (ds_b200_tgp_mlperf)
        fp6_flops=4.5e15,  # ds_b200_fp6_dense_peak
        fp4_flops=9e15,  # ds_b200_fp4_dense_peak (the table's NVFP4 column: 10,000)
        attention_flops=_B200_ATTENTION,  # cuDNN, FA4, FA2 rows (see _B200_ATTENTION)
        unconfirmed=(
            "hbm_efficiency: no STREAM row for B200; B300's BabelStream triad (6.567 TB/s, the same HBM3e interface, "
            "hbm_babelstream_b300_triad) taken as its achieved rate: 0.853 of 7.7 TB/s (was H100's 0.90 share)",
            "attention_flops: forward rows only, the backward assumed at the forward's rate (H100 cuDNN's is within 5%, "
            "FA3 paper Fig. 5/7); head dim 64 rows (cuDNN ran 1,428 TFLOP/s at head dim 128 non-causal 1K against 980 at 64: "
            "head-dim-128 models may run faster); FA2's rows are non-causal, causal assumed as fast",
        ),
    ),
    "b300": GPU(
        "B300",
        2.25e15,  # ds_b300_bf16_dense_peak
        4.5e15,  # ds_b300_fp8_dense_peak
        275_040 * 2**20,  # ds_b300_smi_mib: nvidia-smi 275,040 MiB = 288.4e9 B (was the datasheet's 288e9, ds_b300_hbm_gb)
        8000 * GB,  # ds_b300_hbm_tbs (the device reports 3,996 MHz x 7,680 bits = 7.67 TB/s, hbm_babelstream_b300_triad)
        "nvlink5",
        1769e12,  # mamf_b300_bf16: 12288x18432x1024, torch 2.9.1+cu130
        # ds_b300_sms: B300 ships as 148- and 152-SM SKUs (device queries, ml-engineering; BabelStream's device line
        # reads 148); the published 2,250 TFLOP/s is "what all 148 SMs deliver together". 160 is the full die (was assumed).
        # HBM efficiency: BabelStream triad 6.567 TB/s (median of 7 GPUs, hbm_babelstream_b300_triad) over the 8 TB/s
        # peak (was H100's assumed 0.90: 7.2 TB/s, +9.6%).
        "blackwell", 148, _BLACKWELL_HBM_ACHIEVED / (8000 * GB), True,
        "ml-engineering TFLOPS and MAMF tables (DGX B300 datasheet; rows ds_b300_*, mamf_b300_bf16, mamf_b300_fp8); "
        "148 SMs, 275,040 MiB and a 1,100 W power limit as the device and nvidia-smi report them (ds_b300_sms, "
        "ds_b300_smi_mib, ds_b300_power_limit_smi); HBM efficiency from BabelStream (hbm_babelstream_b300_triad).",
        3353.3e12,  # mamf_b300_fp8: 3072x6144x7168
        # ds_b300_power_limit_smi: nvidia-smi's cap on every B300 SXM6 AC of a Dell XE9780, as the cloud table's 1.1 kW
        # (ds_b300_tdp); NVIDIA's DGX B300 power capping page gives 1,000 W maximum TGP (ds_b300_max_tgp), DGX's setting
        tdp_w=1100,
        fp6_flops=4.5e15,  # ds_b300_fp6_dense_peak
        fp4_flops=12.6e15,  # ds_b300_fp4_dense_peak (the table's NVFP4 column: 15,000, ds_b300_nvfp4_dense_peak)
        attention_flops=tuple((k, rate * 1769 / 1745) for k, rate in _B200_ATTENTION),  # B200's rows x the MAMF ratio
        unconfirmed=(
            "attention_flops: no row on B300: B200's rows scaled by the MAMF ratio 1,769 / 1,745",
        ),
    ),
    "gb200": GPU(
        "GB200",
        2.5e15,  # ds_gb200_bf16_dense_peak (per Blackwell GPU of the superchip)
        5e15,  # ds_gb200_fp8_dense_peak; NVIDIA's sparse 10 PFLOPS halved (ds_gb200_fp8_sparse_peak)
        186e9,  # ds_gb200_hbm_gb (NVIDIA datasheet: 186 GB HBM3e)
        8000 * GB,  # ds_gb200_hbm_tbs (NVIDIA datasheet: 8 TB/s)
        "nvlink5",
        1822e12,  # mamf_gb200_bf16: 72.9% of 2,500 at 4096x9728x2048, torch 2.10 nightly + cu130
        "blackwell", 148, _BLACKWELL_HBM_ACHIEVED / (8000 * GB), True,
        "NVIDIA Blackwell datasheet (GB200 NVL72: 186 GB, 8 TB/s, 1,200 W per GPU) and the ml-engineering TFLOPS and "
        "MAMF tables (rows ds_gb200_*, mamf_gb200_*); FA2 from Azure/AI-benchmarking-guide (ND GB200 v6).",
        3615.6e12,  # mamf_gb200_fp8: 19456x5120x1536
        tdp_w=1200,  # ds_gb200_tdp
        fp6_flops=5e15,  # ds_gb200_fp6_dense_peak
        fp4_flops=10e15,  # ds_gb200_fp4_dense_peak
        attention_flops=(
            ("cudnn", dict(_B200_ATTENTION)["cudnn"] * 1822 / 1745),  # B200's attn_cudnn_b200_hd64_causal_s4096 x the MAMF ratio
            ("fa4", dict(_B200_ATTENTION)["fa4"] * 1822 / 1745),  # B200's attn_fa4_b200_hd64_causal_s4096 x the MAMF ratio
            ("fa2", 373.9e12),  # attn_fa2_azure_gb200: head dim 128, batch 2, 8K, PyTorch 2.6, CUDA 12.8
            ("fa3", 373.9e12),  # FA3 is sm90 only: FA2
        ),
        unconfirmed=(
            "hbm_bytes: the datasheet's 186 GB; no nvidia-smi reading stored",
            "sms: 148 SMs (the B200 die; no stored row)",
            "hbm_efficiency: no STREAM row for GB200; B300's BabelStream triad (6.567 TB/s, the same HBM3e interface, "
            "hbm_babelstream_b300_triad) taken as its achieved rate: 0.821 of 8 TB/s (was H100's 0.90 share)",
            "attention_flops: cuDNN and FA4 not measured on GB200: B200's rows scaled by the MAMF ratio 1,822 / 1,745; "
            "FA2's row does not say whether it is causal",
        ),
    ),
    "gb300": GPU(
        "GB300",
        2.5e15,  # ds_gb300_bf16_dense_peak
        5e15,  # ds_gb300_fp8_dense_peak
        288e9,  # B300's ds_b300_hbm_gb: no GB300 row
        8000 * GB,  # ds_gb300_hbm_tbs: NVIDIA's GB300 NVL72 rack, 576 TB/s over 72 GPUs (derived)
        "nvlink5",
        1769e12 * 1822 / 1745,  # mamf_b300_bf16 x GB200 / B200 (mamf_gb200_bf16 / mamf_b200_bf16): no GB300 MAMF row
        "blackwell", 148, _BLACKWELL_HBM_ACHIEVED / (8000 * GB), True,
        "ml-engineering TFLOPS table (GB300 NVL72 datasheet; rows ds_gb300_*); HBM bandwidth the NVL72 rack's 576 TB/s "
        "over 72 GPUs (ds_gb300_hbm_tbs); memory capacity and matmul rates B300's (see unconfirmed); 1,400 W per GPU "
        "from NVIDIA's Mission Control rack-planning example (ds_gb300_max_power).",
        3353.3e12 * 3615.6 / 3432.5,  # mamf_b300_fp8 x mamf_gb200_fp8 / mamf_b200_fp8
        tdp_w=1400,  # ds_gb300_max_power: NVIDIA Mission Control FAQ, "four 1.4kW GPUs" a tray (ds_gb300_tdp's cloud table agrees)
        fp6_flops=5e15,  # ds_gb300_fp6_dense_peak
        fp4_flops=15e15,  # ds_gb300_fp4_dense_peak
        attention_flops=tuple((k, rate * 1769 / 1745 * 1822 / 1745) for k, rate in _B200_ATTENTION),  # B200's rows x the MAMF ratio
        unconfirmed=(
            "hbm_bytes: B300's datasheet 288 GB (no GB300 row, no nvidia-smi reading; B300's nvidia-smi shows 275,040 MiB)",
            "mamf_flops: B300's MAMF x GB200's over B200's (no GB300 MAMF row)",
            "fp8_mamf_flops: B300's FP8 MAMF x GB200's over B200's (no GB300 MAMF row)",
            "sms: B300's measured 148-SM SKU (ds_b300_sms; a 152-SM B300 SKU exists too); no GB300 device query stored",
            "hbm_efficiency: no STREAM row for GB300; B300's BabelStream triad share (6.567 of 8 TB/s, hbm_babelstream_b300_triad) assumed",
            "attention_flops: no row on GB300: B200's rows scaled by the MAMF ratio",
        ),
    ),
    "mi300x": GPU(
        "MI300X",
        1307.4e12,  # ds_mi300x_bf16_dense_peak (ROCm mi300.md: 2,048 FLOP/clock/CU)
        2614.9e12,  # ds_mi300x_fp8_dense_peak (4,096 FLOP/clock/CU)
        201_310_208 * 1024,  # ds_mi300x_vram_bytes: rocminfo's 201,310,208 KB = 206.1 GB, AMD's "192 GB" in GiB (ds_mi300x_vram_gib; was 192e9)
        5300 * GB,  # ds_mi300x_hbm_bw
        "xgmi-mi300x",
        668.4e12,  # mamf_mi300x_bf16: 51.4% of 1,300 at 10240x15360x8192, torch 2.5.1 + ROCm 6.3
        "cdna3", 304, _CDNA3_HBM_EFF, True,  # 304 CUs: ds_mi300x_sms (ROCm gpu-arch-specs: "304 (38 per XCD)"); HBM 0.772 (was 0.90)
        "AMD ROCm docs (docs/conceptual/gpu-arch/mi300.md @d534f75: peaks, 192 GB HBM3, 5.3 TB/s, 7 Infinity Fabric "
        "links; gpu-arch-specs: 192 GiB, 304 CUs; rocminfo 206,141,652,992 B, ds_mi300x_vram_bytes); MAMF from the "
        "ml-engineering table (mamf_mi300x_bf16; its FP8 cell is blank); 750 W (ds_mi300x_tbp).",
        2614.9e12 * 668.4 / 1307.4,  # no FP8 MAMF row: the BF16 MAMF's share of peak (51.1%) x the FP8 peak
        tdp_w=750,  # ds_mi300x_tbp (MLPerf system name)
        attention_flops=tuple((k, 668.4e12 * _H100_CUDNN_OVER_MAMF) for k in ATTENTION_KERNELS),
        unconfirmed=(
            ("fp8_mamf_flops: no FP8 MAMF row; FP8 assumed to reach BF16's measured share of its peak (Azure's hipBLASLt "
             "FP8 rows by shape, gemm_azure_mi300x_fp8_*, set CDNA 3's GEMM share of it: labs.core.engine.gemm.GEMM_KERNELS)"),
            ("attention_flops: no CK fused-attention or aiter row; H100 cuDNN's share of H100's MAMF (0.62) times this part's "
             "MAMF, at head dim 128 (Azure's FA2 on MI300X, head dim 64, 8K: 328.6 TFLOP/s, attn_fa2_azure_mi300x; the engine -13%)"),
        ),
    ),
    "mi325x": GPU(
        "MI325X",
        1300e12,  # ds_mi325x_bf16_dense_peak (the table rounds MI300X's 1,307.4: same die and clock)
        2610e12,  # ds_mi325x_fp8_dense_peak
        256 * 2**30,  # ds_mi325x_vram_gib: AMD's ROCm table gives 256 GiB (the "256 GB" of ds_mi325x_hbm_gb; was 256e9)
        6000 * GB,  # ds_mi325x_hbm_tbs
        "xgmi-mi300x",  # the same 7 x 64 GB/s Infinity Fabric links as MI300X (ds_mi325x_xgmi_link_uni)
        784.9e12,  # mamf_mi325x_bf16: 13312x10240x8192, torch 2.6.0 + ROCm 6.2.4
        "cdna3", 304, _CDNA3_HBM_EFF, True,  # 304 CUs: ds_mi325x_sms (ROCm gpu-arch-specs: "304 (38 per XCD)")
        "ml-engineering TFLOPS and MAMF tables (AMD MI325X product page; rows ds_mi325x_*, mamf_mi325x_bf16); 256 GiB and "
        "304 CUs from AMD's ROCm GPU specifications; 1,000 W peak TBP from AMD's MI325X page (ds_mi325x_typical_board_power).",
        2610e12 * 784.9 / 1300,  # no FP8 MAMF row: BF16's measured share of peak (60.4%) x the FP8 peak
        tdp_w=1000,  # ds_mi325x_typical_board_power (AMD's page: 1,000 W peak TBP), the power the MAMF row ran at too
        attention_flops=tuple((k, 784.9e12 * _H100_CUDNN_OVER_MAMF) for k in ATTENTION_KERNELS),
        unconfirmed=(
            "fp8_mamf_flops: no FP8 MAMF row; FP8 assumed to reach BF16's measured share of its peak",
            "hbm_efficiency: no STREAM row for MI325X; MI300X's measured triad share (4.09 of 5.3 TB/s, hbm_azure_mi300x_triad) assumed",
            "attention_flops: no CK / aiter row; H100 cuDNN's share of H100's MAMF (0.62) times this part's MAMF",
        ),
    ),
    "mi355x": GPU(
        "MI355X",
        2500e12,  # ds_mi355x_bf16_dense_peak (the MAMF table divides by 2,300)
        5000e12,  # ds_mi355x_fp8_dense_peak
        288 * 2**30,  # ds_mi355x_vram_gib: AMD's ROCm table gives 288 GiB (the "288 GB" of ds_mi355x_hbm_gb; was 288e9)
        8000 * GB,  # ds_mi355x_hbm_tbs
        "xgmi-mi355x",
        1565e12,  # mamf_mi355x_bf16: 12288x8192x8192, torch 2.8.0 + ROCm 7.0.2, TunableOp off
        "cdna4", 256, _HBM_EFF, True,  # 256 CUs: ds_mi355x_sms (ROCm GPU specifications: "256 (32 per XCD)")
        "ml-engineering TFLOPS and MAMF tables (AMD MI355X product page; rows ds_mi355x_*, mamf_mi355x_bf16); 288 GiB and "
        "256 CUs from AMD's ROCm GPU specifications; 1,400 W Typical Board Power from AMD's MI355X page "
        "(ds_mi355x_typical_board_power; ds_mi355x_tbp, the press's report of AMD at Hot Chips 2025, agrees).",
        5000e12 * 1565 / 2500,  # no FP8 MAMF row: BF16's measured share of peak (62.6%) x the FP8 peak
        tdp_w=1400,  # ds_mi355x_typical_board_power (AMD's MI355X page)
        fp6_flops=10.1e15,  # ds_mi355x_fp6_dense_peak
        fp4_flops=10.1e15,  # ds_mi355x_fp4_dense_peak
        attention_flops=tuple((k, 1565e12 * _H100_CUDNN_OVER_MAMF) for k in ATTENTION_KERNELS),
        unconfirmed=(
            "fp8_mamf_flops: no FP8 MAMF row; FP8 assumed to reach BF16's measured share of its peak",
            "hbm_efficiency: no STREAM row for MI355X; the catalog's 0.90 assumed (H100's measured triad share: 0.89)",
            "attention_flops: no CK / aiter row; H100 cuDNN's share of H100's MAMF (0.62) times this part's MAMF",
        ),
    ),
}


# STREAM triad on two-socket Xeon and EPYC servers reaches ~70-80% of the DRAM peak; 0.7 keeps
# the low end because CPU Adam also converts precisions as it streams.
_DRAM_EFF = 0.7

HOSTS: dict[str, Host] = {
    "dgx-a100": Host(
        "2x AMD EPYC 7742, 1 TB DDR4", 1024 * GB, 2 * 8 * 25.6 * GB, _DRAM_EFF, "pcie4",
        "DGX A100 user guide: 2x EPYC 7742, 1 TB (2 TB option); each socket 8 channels of "
        "DDR4-3200 = 204.8 GB/s. GPUs on PCIe Gen4 x16.",
    ),
    "dgx-h100": Host(
        "2x Xeon Platinum 8480C, 2 TB DDR5", 2048 * GB, 2 * 8 * 38.4 * GB, _DRAM_EFF, "pcie5",
        "DGX H100 user guide: 2x Xeon Platinum 8480C, 2 TB; each socket 8 channels of "
        "DDR5-4800 = 307.2 GB/s. GPUs on PCIe Gen5 x16.",
    ),
    # Jean Zay's A100 nodes, where BLOOM trained: "AMD CPUs with 512GB memory per node" (bigscience/bloom
    # and bloomz model cards, Hardware). The CPU model is not in the card: two 8-channel DDR4-3200
    # EPYC sockets assumed, as in DGX A100 (unconfirmed).
    "jean-zay-a100": Host(
        "2x AMD EPYC (model unconfirmed), 512 GB DDR4", 512 * GB, 2 * 8 * 25.6 * GB, _DRAM_EFF, "pcie4",
        "BLOOM model card (huggingface.co/bigscience/bloom, Hardware): AMD CPUs, 512 GB per node; memory "
        "channels assumed as DGX A100's (2 sockets x 8 channels DDR4-3200), unconfirmed.",
    ),
    "dgx-b200": Host(
        "2x Xeon Platinum 8570, 2 TB DDR5 (unconfirmed)", 2048 * GB, 2 * 8 * 44.8 * GB, _DRAM_EFF, "pcie5",
        "DGX B200 spec page as transcribed (unconfirmed): 2x Xeon Platinum 8570, 2 TB (4 TB "
        "option); 8 channels of DDR5-5600 per socket = 358.4 GB/s.",
    ),
    # A GB200 / GB300 NVL72 compute tray: 2 Grace CPUs, 4 Blackwell GPUs (pf_gb200_nvl72_grace_per_tray,
    # pf_gb300_nvl72_gpus_per_tray). Grace memory (480 GB LPDDR5X, 512 GB/s per Grace) is NVIDIA's
    # Grace material, not a stored row: unconfirmed.
    "gb200-tray": Host(
        "2x Grace, 960 GB LPDDR5X (unconfirmed)", 2 * 480 * GB, 2 * 512 * GB, _DRAM_EFF, "nvlink-c2c",
        "DGX GB200 user guide (Hardware): 2 Grace CPUs and 4 Blackwell GPUs per 1RU compute tray. Per Grace "
        "480 GB LPDDR5X at 512 GB/s assumed from NVIDIA's Grace material (unconfirmed). GPUs on NVLink-C2C.",
    ),
    # Instinct MI300X node (Supermicro AS-8125GS-TNMR2, mlcommons/inference_results_v4.1
    # closed/AMD/systems/8xMI300X_2xEPYC-9374F.json): 2x EPYC 9374F, 1.5 TiB as 24 x 64 GB DDR5-4800
    # RDIMMs (Micron MTC40F2046S1RC48BA1), GPUs on PCIe Gen5 x16: 12 channels per socket x 38.4 GB/s.
    "mi300x-epyc": Host(
        "2x AMD EPYC 9374F, 1.5 TiB DDR5", 1.5 * 2**40, 2 * 12 * 38.4 * GB, _DRAM_EFF, "pcie5",
        "mlcommons inference v4.1, AMD 8xMI300X_2xEPYC-9374F system description: 2x EPYC 9374F, 1.5 TiB "
        "(24x 64 GB DDR5-4800), PCIe Gen5 x16 to each GPU; 12 DDR5-4800 channels per socket (derived from 24 DIMMs).",
    ),
    # Instinct MI355X node: 2x EPYC 9575F per 8 GPUs (mlcommons inference v6.0, AMD
    # 87xMI355X_22xEPYC_9575F: 8 GPUs a node, pf_mi355x_platform_gpus), 3.0 TB as 24 x 128 GB DDR5-6400
    # RDIMMs (pf_mi355x_host_memory): one a channel on 2 x 12 channels (was 1.5 TiB at DDR5-6000, assumed).
    "mi355x-epyc": Host(
        "2x AMD EPYC 9575F, 3 TiB DDR5", 24 * 128 * 2**30, 2 * 12 * 51.2 * GB, _DRAM_EFF, "pcie5",
        "mlcommons inference v6.0, AMD 87xMI355X_22xEPYC_9575F system description: EPYC 9575F hosts of 8 MI355X, "
        "3.0 TB as 24x 128 GB Micron MTC40F2047S1RC64BB1 (DDR5-6400 RDIMMs), 12 channels per socket at 51.2 GB/s "
        "(derived from 24 DIMMs on two SP5 sockets).",
    ),
}


@dataclass(frozen=True)
class Cluster:
    """Three levels: hosts ("nodes": `gpus_per_node` GPUs with their CPUs, DRAM, PCIe and
    `nics_per_node` NICs) inside scale-up domains (`gpus_per_domain` GPUs joined by `intra`: an
    NVLink domain behind NVSwitch, or Instinct's xGMI mesh) inside a scale-out fabric (`inter`,
    rails, pods, oversubscription). Where a group's collectives run is decided by the domain
    (labs.core.engine.topology); offload, checkpoints and host memory by the host. A DGX is one
    host and one domain (gpus_per_domain None: the host's gpus_per_node); a GB200 NVL72 rack is
    18 hosts of 4 GPUs in one 72-GPU domain."""

    gpu: GPU
    gpus_per_node: int = 8
    nodes: int = 1
    intra: Link = field(default_factory=lambda: LINKS["nvlink4"])
    inter: Link = field(default_factory=lambda: LINKS["ib-ndr"])
    nics_per_node: int | None = None  # rails; None means one NIC per GPU
    name: str = "custom"
    host: Host = field(default_factory=lambda: HOSTS["dgx-h100"])
    pod_gpus: int | None = None  # GPUs under one full-bisection tier; None: the whole cluster
    oversubscription: float = 1.0  # above a pod, each NIC's share of the upper tier is 1/this
    gpus_per_domain: int | None = None  # GPUs joined by `intra` (an NVLink domain); None: one host's gpus_per_node
    # The bus bandwidth NCCL reaches through the NICs from one domain, where measured below what its
    # NICs add up to (None: the NICs'): labs.core.engine.topology caps every group's NIC share with it.
    scale_out_bytes_per_s: float | None = None

    def __post_init__(self):
        if not isinstance(self.gpu, GPU):
            raise ValueError(f"gpu must be a GPU from labs.core.engine.hardware.GPUS, got {self.gpu!r}")
        for name in ("intra", "inter"):
            if not isinstance(getattr(self, name), Link):
                raise ValueError(f"{name} must be a Link from labs.core.engine.hardware.LINKS, got {getattr(self, name)!r}")
        if not isinstance(self.host, Host):
            raise ValueError(f"host must be a Host from labs.core.engine.hardware.HOSTS, got {self.host!r}")
        check_str("name", self.name)
        check_positive("gpus_per_node", self.gpus_per_node, integer=True, maximum=1024)
        check_positive("nodes", self.nodes, integer=True, maximum=1 << 17)
        if self.nics_per_node is not None:
            check_positive("nics_per_node", self.nics_per_node, integer=True, maximum=1024)
        if self.pod_gpus is not None:
            check_positive("pod_gpus", self.pod_gpus, integer=True)
        check_positive("oversubscription", self.oversubscription, maximum=1024)
        if self.oversubscription < 1:
            raise ValueError(f"oversubscription must be >= 1 (1 is full bisection), got {self.oversubscription!r}")
        if self.scale_out_bytes_per_s is not None:
            check_positive("scale_out_bytes_per_s", self.scale_out_bytes_per_s, maximum=1e18)
        if self.gpus_per_domain is not None:
            check_positive("gpus_per_domain", self.gpus_per_domain, integer=True, maximum=1 << 17)
            if self.gpus_per_domain % self.gpus_per_node:
                raise ValueError(f"gpus_per_domain must be a multiple of gpus_per_node ({self.gpus_per_node}): a domain holds whole "
                                 f"hosts, got {self.gpus_per_domain}")
        if self.intra.mesh_peers and self.domain_gpus > self.intra.mesh_peers + 1:
            raise ValueError(f"gpus_per_domain must be at most {self.intra.mesh_peers + 1} on {self.intra.name}, a full mesh of "
                             f"{self.intra.mesh_peers} links per GPU, got {self.domain_gpus}")
        own = LINKS.get(self.gpu.nvlink)
        if self.domain_gpus > 1 and (self.intra.mesh_peers or (own and own.mesh_peers)) and own != self.intra:
            raise ValueError(f"intra: {self.gpu.name} joins its peers by its own {self.gpu.nvlink!r}, not {self.intra.name} "
                             "(a GPU on a platform it does not come in)")

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def domain_gpus(self) -> int:
        """GPUs in one scale-up (NVLink) domain: where a group's traffic stays off the NICs."""
        return self.gpus_per_node if self.gpus_per_domain is None else self.gpus_per_domain

    @property
    def domains(self) -> int:
        """Scale-up domains the cluster's GPUs fill (a part of one counts as one)."""
        return -(-self.gpus // self.domain_gpus)

    @property
    def rails(self) -> int:
        return self.gpus_per_node if self.nics_per_node is None else self.nics_per_node

    @property
    def inter_bytes_per_s_per_gpu(self) -> float:
        """NIC bandwidth one GPU can use when every GPU of the node talks at once."""
        return self.inter.effective_bytes_per_s * min(1.0, self.rails / self.gpus_per_node)

    @property
    def host_link(self) -> Link:
        return LINKS[self.host.pcie]

    @property
    def host_bytes_per_s_per_gpu(self) -> float:
        """DRAM bandwidth one GPU's CPU optimizer can stream when all GPUs of the node do."""
        return self.host.memory_bytes_per_s * self.host.memory_efficiency / self.gpus_per_node

    @classmethod
    def get(cls, key: str, nodes: int = 1, *, domains: int | None = None, power_limit_w=None, **overrides) -> "Cluster":
        """A preset of CLUSTERS with `nodes` hosts, or `domains` whole scale-up domains (an NVL72
        rack is 18 hosts); `power_limit_w` lowers every GPU's power limit. A `gpu` override must
        be one the platform comes with (PLATFORM_GPUS)."""
        if not isinstance(key, str) or key not in CLUSTERS:
            raise unknown_key_error("cluster", key, CLUSTERS)
        unknown = set(overrides) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown Cluster field(s) {sorted(unknown)}")
        if "gpu" in overrides and not any(overrides["gpu"] == GPUS.get(k) for k in PLATFORM_GPUS.get(key, ())):
            raise ValueError(f"gpu: the {key} platform comes with {', '.join(PLATFORM_GPUS.get(key, ()))} only, "
                             f"got {getattr(overrides['gpu'], 'name', overrides['gpu'])!r}")
        if domains is not None:
            check_positive("domains", domains, integer=True, maximum=1 << 17)
            preset = replace(CLUSTERS[key], **{k: v for k, v in overrides.items() if k in ("gpus_per_node", "gpus_per_domain")})
            nodes = domains * preset.domain_gpus // preset.gpus_per_node
        cluster = replace(CLUSTERS[key], nodes=nodes, **overrides)
        return cluster if power_limit_w is None else cluster.with_power_limit(power_limit_w)

    def with_power_limit(self, watts) -> "Cluster":
        """The same cluster with every GPU's board power limit lowered to `watts` (GPU.at_power_limit)."""
        return replace(self, gpu=self.gpu.at_power_limit(watts))

    def with_fabric(self, inter_key: str) -> "Cluster":
        """The same cluster with another inter-node link (a key of LINKS)."""
        if not isinstance(inter_key, str) or inter_key not in LINKS:
            raise unknown_key_error("inter", inter_key, LINKS)
        return replace(self, inter=LINKS[inter_key])


CLUSTERS: dict[str, Cluster] = {
    # Selene: DGX A100 with 8 x ConnectX-6 HDR 200 Gb/s compute NICs per node
    # (Narayanan et al. 2021 Sec. 5; DGX A100 user guide).
    "dgx-a100": Cluster(GPUS["a100-sxm-80gb"], 8, 1, LINKS["nvlink3"], LINKS["ib-hdr"], None, "dgx-a100", HOSTS["dgx-a100"]),
    # DGX H100: 8 x ConnectX-7 at 400 Gb/s, one per GPU, rail-optimised (DGX BasePOD RA).
    "dgx-h100": Cluster(GPUS["h100-sxm"], 8, 1, LINKS["nvlink4"], LINKS["ib-ndr"], None, "dgx-h100"),
    # DGX H200: the DGX H100 chassis and host (2x Xeon 8480C, 2 TB) with H200 GPUs.
    "dgx-h200": Cluster(GPUS["h200-sxm"], 8, 1, LINKS["nvlink4"], LINKS["ib-ndr"], None, "dgx-h200"),
    # Grand Teton, Llama 3's server: 8 H100 on NVLink, 400 Gb/s RoCE per GPU (arXiv:2407.21783);
    # its host is assumed equal to DGX H100's.
    # Pods of 3,072 GPUs at full bisection, 1:7 oversubscribed above (Sec. 3.3.1).
    "meta-h100-roce": Cluster(GPUS["h100-sxm"], 8, 1, LINKS["nvlink4"], LINKS["roce-400"], None, "meta-h100-roce", pod_gpus=3072, oversubscription=7.0),
    # DGX B200: 8 B200 in one host and one NVLink domain (pf_dgx_b200_gpus), two NVLink 5 switch
    # chips (pf_dgx_b200_nvswitch_bw, 14.4 TB/s = 8 x 1.8), 8 single-port ConnectX-7 at up to
    # 400 Gb/s, one per GPU (pf_dgx_b200_nics, pf_dgx_b200_nic_speed; DGX B200 user guide).
    "dgx-b200": Cluster(GPUS["b200"], 8, 1, LINKS["nvlink5"], LINKS["ib-ndr"], None, "dgx-b200", HOSTS["dgx-b200"]),
    # DeepSeek-V3's cluster: 8 H800 per node on NVLink/NVSwitch, one 400 Gb/s IB NIC per GPU
    # (arXiv:2412.19437 Sec. 3.1: "IB 50 GB/s"); host assumed equal to DGX H100's.
    "h800-ib": Cluster(GPUS["h800-sxm"], 8, 1, LINKS["nvlink4-h800"], LINKS["ib-ndr"], None, "h800-ib"),
    # Jean Zay (IDRIS), BLOOM's cluster: 8 A100 80GB SXM per node on NVLink/NVSwitch, 4 Omni-Path
    # 100 Gb/s links per node (two GPUs a NIC), a dedicated NCCL subnet; BLOOM 176B ran on 48 such
    # nodes (huggingface.co/bigscience/bloom model card, Hardware: "8 GPUs per node Using NVLink 4
    # inter-gpu connects, 4 OmniPath links ... Inter-node connect: Omni-Path Architecture (OPA)").
    "jean-zay-a100-opa": Cluster(GPUS["a100-sxm-80gb"], 8, 1, LINKS["nvlink3"], LINKS["opa-100"], 4, "jean-zay-a100-opa", HOSTS["jean-zay-a100"]),
    # A PCIe server: 8 x A100 PCIe, no NVLink bridges, 2 HDR NICs per node.
    "pcie-a100": Cluster(GPUS["a100-pcie-80gb"], 8, 1, LINKS["pcie4"], LINKS["ib-hdr"], 2, "pcie-a100", HOSTS["dgx-a100"]),
    # ---- Engine v4 platforms (issue 36): a host, an NVLink domain or xGMI mesh, a scale-out fabric.
    # Cluster.get(key, domains=n) asks for whole domains (an NVL72 rack is 18 hosts).
    # HGX B300: 8 B300 on one NVLink 5 board (pf_hgx_b300_nvlink_total 14.4 TB/s = 8 x 1.8), 8
    # single-port ConnectX-8 at 800 Gb/s (pf_dgx_b300_nics, pf_dgx_b300_nic_speed; HGX networking
    # 1.6 TB/s both ways, pf_hgx_b300_network_bw); the host is not stored: DGX B200's assumed (unconfirmed).
    "hgx-b300": Cluster(GPUS["b300"], 8, 1, LINKS["nvlink5"], LINKS["ib-xdr"], None, "hgx-b300", HOSTS["dgx-b200"]),
    # GB200 NVL72: 18 compute trays (hosts) of 2 Grace + 4 Blackwell in one 72-GPU NVLink domain
    # behind 9 NVLink switch trays (pf_gb200_nvl72_trays, _gpus_per_tray, _switch_trays; DGX GB
    # user guide), 4 ConnectX-7 400G per tray, one per GPU (pf_gb200_nvl72_nics_per_tray, _nic_speed).
    # Across racks NCCL reaches about 417 GB/s of bus bandwidth at its plateau, not the 72 NICs'
    # 3.4 TB/s: fitted with labs.core.engine.collectives.DOMAIN_RAMP_* on CoreWeave's 2- and 20-rack
    # curves (144 and 1,440 GB200, NCCL 2.26.2, NVLSTree past one rack, where two racks double it:
    # nccl_gb200_nvl72_2racks_allreduce_*, nccl_gb200_nvl72_20racks_allreduce_*, 512 MiB - 16 GiB;
    # the 20-rack 16 GiB row, 405.74, is 3% below it, still on the ramp). tests/test_domain_ramp.py.
    "gb200-nvl72": Cluster(GPUS["gb200"], 4, 1, LINKS["nvlink5"], LINKS["ib-ndr"], None, "gb200-nvl72", HOSTS["gb200-tray"], gpus_per_domain=72,
                           scale_out_bytes_per_s=417.0 * GB),
    # GB300 NVL72: the same rack with Blackwell Ultra, 9 NVSwitch trays (pf_gb300_nvl72_switch_trays),
    # 4 GPUs + 2 Grace and 4 ConnectX-8 per tray (pf_gb300_nvl72_gpus_per_tray, _nics_per_tray). The
    # NIC speed per GPU is not in a stored NVIDIA row: 800 Gb/s (ConnectX-8's XDR) assumed
    # (unconfirmed); the Grace tray host as GB200's.
    "gb300-nvl72": Cluster(GPUS["gb300"], 4, 1, LINKS["nvlink5"], LINKS["ib-xdr"], None, "gb300-nvl72", HOSTS["gb200-tray"], gpus_per_domain=72),
    # GB200 NVL36x2: 9 x 2RU trays of 4 GPUs and 9 NVL36 switch trays per rack (pf_gb200_nvl36x2_*;
    # NVIDIA multi-node NVLink tuning guide: "36x2 and 72x1 configurations"), two racks of 36 joined
    # into one 72-GPU domain through the switch trays' front-panel NVLink ports (NVIDIA NVOS manual,
    # "NVLink Interface": front-panel ports "allow connectivity between switches from different
    # racks"). The rack-to-rack NVLink is assumed non-blocking (unconfirmed), NICs as NVL72's.
    "gb200-nvl36x2": Cluster(GPUS["gb200"], 4, 1, LINKS["nvlink5"], LINKS["ib-ndr"], None, "gb200-nvl36x2", HOSTS["gb200-tray"], gpus_per_domain=72),
    # AMD Instinct 8-GPU platforms: one host, 8 GPUs in a full xGMI mesh (pf_mi300x_platform_gpus,
    # ds_mi300x_if_links). One scale-out NIC per GPU as in RCCL's MI300X topologies with NICs
    # (ROCm/rccl src/graph/rome_models.cc rome_model_81: nGpus 8, nNics 8, nLinks 7); their speed
    # (400 Gb/s) is assumed (unconfirmed: no stored row).
    "mi300x": Cluster(GPUS["mi300x"], 8, 1, LINKS["xgmi-mi300x"], LINKS["ib-ndr"], None, "mi300x", HOSTS["mi300x-epyc"]),
    # MI325X: the MI300X platform's links and mesh (ds_mi325x_xgmi_link_uni: 7 x 64 GB/s); host and
    # NICs assumed the MI300X node's (unconfirmed).
    "mi325x": Cluster(GPUS["mi325x"], 8, 1, LINKS["xgmi-mi300x"], LINKS["ib-ndr"], None, "mi325x", HOSTS["mi300x-epyc"]),
    # MI355X: 8 GPUs a node (pf_mi355x_platform_gpus), 7 x 76.5 GB/s xGMI (ds_mi355x_xgmi_link_uni);
    # scale-out NICs per GPU not stored (the .md lists them missing): one 400 Gb/s NIC per GPU assumed.
    "mi355x": Cluster(GPUS["mi355x"], 8, 1, LINKS["xgmi-mi355x"], LINKS["ib-ndr"], None, "mi355x", HOSTS["mi355x-epyc"]),
}

# The GPUs each platform comes with (keys of GPUS): Cluster.get refuses a `gpu` override outside
# them, by name. The SXM/OAM parts are soldered to their baseboard: a DGX H100 holds H100 SXM
# only (DGX H100 user guide), an HGX A100 board its A100 SXM4 40 or 80 GB (A100 datasheet).
PLATFORM_GPUS: dict[str, tuple[str, ...]] = {
    "dgx-a100": ("a100-sxm-80gb", "a100-sxm-40gb"),
    "dgx-h100": ("h100-sxm",),
    "dgx-h200": ("h200-sxm",),
    "meta-h100-roce": ("h100-sxm",),
    "dgx-b200": ("b200",),
    "h800-ib": ("h800-sxm",),
    "jean-zay-a100-opa": ("a100-sxm-80gb",),
    "pcie-a100": ("a100-pcie-80gb",),
    "hgx-b300": ("b300",),
    "gb200-nvl72": ("gb200",),
    "gb300-nvl72": ("gb300",),
    "gb200-nvl36x2": ("gb200",),
    "mi300x": ("mi300x",),
    "mi325x": ("mi325x",),
    "mi355x": ("mi355x",),
}

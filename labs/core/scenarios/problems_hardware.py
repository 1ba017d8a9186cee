"""Problem set 9, hardware (labs/problems/ps09_hardware.py): a GEMM's arithmetic intensity, the
GPU's roofline ridge from the catalog, whether a GEMM is memory- or compute-bound, a TP 16 group
in a GB200 NVL72 rack against two DGX B200, NICs per GPU and rails, and InfiniBand's port
against NVLink's one-way rate (labs.core.engine.hardware, labs.core.engine.exercises)."""

from __future__ import annotations

from labs.core.engine import exercises as x
from labs.core.engine.hardware import GPUS, Cluster
from labs.core.engine.models import Model
from labs.core.problemset import Problem, ProblemSet, fmt
from labs.core.variants import Option

NAME = "ps09_hardware"
GB, MB, TB, US, MS = 1e9, 1e6, 1e12, 1e-6, 1e-3
GPU_KEYS = ("h100-sxm", "a100-sxm-80gb", "h200-sxm", "b200", "gb200", "mi300x")


def _gemm(s) -> tuple[int, int, int]:
    """(m, n, k) of the MLP's up projection: tokens x the FFN width x the hidden size."""
    m = Model.get(s["model"])
    return s["tokens"], m.ffn, m.hidden


def _intensity_envelope(s) -> float:
    m, n, k = _gemm(s)
    return 2 * m * n * k / (2 * (m * k + k * n + m * n))


# ---- 1. a GEMM's arithmetic intensity --------------------------------------------------------------
INTENSITY = Problem(
    "intensity", "A GEMM's arithmetic intensity",
    {"model": ("llama3-70b", "llama3-8b", "gpt3-175b"), "tokens": (4096, 1, 64, 512)},
    lambda s: (f"{s['tokens']:,} tokens go through {s['model']}'s MLP up projection: a bf16 GEMM of ({_gemm(s)[0]:,} x {_gemm(s)[2]:,}) activations "
               f"by a ({_gemm(s)[2]:,} x {_gemm(s)[1]:,}) weight. It reads both from HBM once and writes its bf16 output once. How many FLOPs "
               "does it do per byte moved?"),
    lambda s: x.gemm_arithmetic_intensity(*_gemm(s)), _intensity_envelope,
    lambda s: (f"2 m n k FLOPs over 2 (m k + k n + m n) bytes = {fmt(_intensity_envelope(s))} FLOP/byte. With few tokens the weight's k n "
               "bytes dominate and the intensity is about m: one token does 1 FLOP a byte."),
    "FLOP/byte", tolerance=0.03,
    why="A real kernel reads its tiles from HBM more than once when they do not stay in the L2 cache, which lowers the intensity it reaches.",
)


# ---- 2. the ridge ---------------------------------------------------------------------------------
RIDGE = Problem(
    "ridge", "The roofline's ridge",
    {"gpu": GPU_KEYS},
    lambda s: (f"{GPUS[s['gpu']].name}: {fmt(GPUS[s['gpu']].bf16_flops / TB)} TFLOP/s dense bf16, {fmt(GPUS[s['gpu']].hbm_bytes_per_s / TB)} TB/s of HBM. "
               "Above what arithmetic intensity (FLOPs per HBM byte) is a kernel compute-bound on it?"),
    lambda s: x.ridge_flops_per_byte(GPUS[s["gpu"]]),
    lambda s: GPUS[s["gpu"]].bf16_flops / GPUS[s["gpu"]].hbm_bytes_per_s,
    lambda s: (f"Peak over bandwidth: {fmt(GPUS[s['gpu']].bf16_flops / TB)}e12 / {fmt(GPUS[s['gpu']].hbm_bytes_per_s / TB)}e12 = "
               f"{fmt(GPUS[s['gpu']].bf16_flops / GPUS[s['gpu']].hbm_bytes_per_s)} FLOP/byte."),
    "FLOP/byte", tolerance=0.03,
    refined=lambda s: x.ridge_flops_per_byte(GPUS[s["gpu"]], achieved=True), refined_label="At the measured GEMM rate and streaming HBM rate",
    why="Neither peak is reached: the best-shape GEMM runs at the part's measured MAMF and a streaming kernel at about 90% of HBM, which moves the ridge.",
)


# ---- 3. memory- or compute-bound: a decision --------------------------------------------------------
def _over_ridge(s) -> float:
    return x.gemm_arithmetic_intensity(*_gemm(s)) / x.ridge_flops_per_byte(GPUS[s["gpu"]])


BOUND = Problem(
    "bound", "Memory- or compute-bound?",
    {"model": ("llama3-70b", "llama3-8b"), "tokens": (64, 4096, 1, 512, 256), "gpu": ("h100-sxm", "b200", "a100-sxm-80gb")},
    lambda s: (f"The same up projection of {s['model']} ({_gemm(s)[2]:,} x {_gemm(s)[1]:,} bf16 weight) on {s['tokens']:,} tokens runs on one "
               f"{GPUS[s['gpu']].name} ({fmt(GPUS[s['gpu']].bf16_flops / TB)} TFLOP/s, {fmt(GPUS[s['gpu']].hbm_bytes_per_s / TB)} TB/s). On the roofline, what limits it?"),
    _over_ridge,
    lambda s: _intensity_envelope(s) / (GPUS[s["gpu"]].bf16_flops / GPUS[s["gpu"]].hbm_bytes_per_s),
    lambda s: (f"Intensity {fmt(_intensity_envelope(s))} FLOP/byte against the ridge's {fmt(GPUS[s['gpu']].bf16_flops / GPUS[s['gpu']].hbm_bytes_per_s)}: "
               f"{fmt(_over_ridge(s))} x the ridge, so " + ("compute (the tensor cores)." if _over_ridge(s) >= 1 else "memory (HBM bandwidth): the weight's bytes.")),
    "x the ridge", tolerance=0.03,
    options=(Option("memory", "HBM bandwidth: it is memory-bound", "a GEMM is always compute-bound"),
             Option("compute", "The tensor cores: it is compute-bound", "small batches are as efficient as large ones")),
    decide=lambda s: "compute" if _over_ridge(s) >= 1 else "memory",
    why="Decoding and small micro-batches sit left of the ridge; training's thousands of tokens a GEMM sit right of it. Near the ridge neither roof is reached (the engine's GEMM model blends the two).",
)


# ---- 4. TP 16: an NVL72 rack against two DGX B200 -----------------------------------------------------
def _platforms():
    rack, dgx = Cluster.get("gb200-nvl72", domains=1), Cluster.get("dgx-b200", nodes=2)
    return rack, dgx


def _tp16_times(s) -> tuple[float, float]:
    rack, dgx = _platforms()
    m = s["mb"] * MB
    in_rack = x.collective_time("all_reduce", m, 16, rack.intra.latency_s, rack.intra.bandwidth_bytes_per_s).total_s
    two_nodes = x.collective_time("all_reduce", m, 16, dgx.intra.latency_s, dgx.intra.bandwidth_bytes_per_s, "hierarchical", 8,
                                  dgx.inter.latency_s, dgx.inter.bandwidth_bytes_per_s).total_s
    return in_rack, two_nodes


def _tp16_envelope(s) -> float:
    rack, dgx = _platforms()
    m = s["mb"] * MB
    an, bn, ai, bi = dgx.intra.latency_s, dgx.intra.bandwidth_bytes_per_s, dgx.inter.latency_s, dgx.inter.bandwidth_bytes_per_s
    in_rack = 2 * 15 * rack.intra.latency_s + 2 * 15 / 16 * m / rack.intra.bandwidth_bytes_per_s
    two_nodes = 2 * (7 * an + 7 / 8 * m / bn) + 2 * ai + (m / 8) / bi
    return two_nodes / in_rack


def _tp16_nccl(s) -> float:
    rack, dgx = _platforms()
    m = s["mb"] * MB
    return x.nccl_collective_time("all_reduce", m, dgx, 16).total_s / x.nccl_collective_time("all_reduce", m, rack, 16).total_s


TP16 = Problem(
    "tp16", "TP 16: one rack or two nodes?",
    {"mb": (64, 256, 16, 1024)},
    lambda s: (f"A TP 16 group all-reduces {s['mb']} MB of activations. In a GB200 NVL72 rack all 16 GPUs share one NVLink domain: a ring at "
               f"{fmt(_platforms()[0].intra.bandwidth_bytes_per_s / GB)} GB/s each way, α = {fmt(_platforms()[0].intra.latency_s / US)} µs a step. "
               f"On two DGX B200 (8 GPUs a domain) it runs in two levels: reduce-scatter and all-gather on NVLink "
               f"({fmt(_platforms()[1].intra.bandwidth_bytes_per_s / GB)} GB/s, α = {fmt(_platforms()[1].intra.latency_s / US)} µs), and between them each GPU "
               f"all-reduces its 1/8 shard with its twin in the other node on its own NIC ({fmt(_platforms()[1].inter.bandwidth_bytes_per_s / GB)} GB/s, "
               f"α = {fmt(_platforms()[1].inter.latency_s / US)} µs). At line rate, how many times longer does it take on the two DGX B200?"),
    lambda s: _tp16_times(s)[1] / _tp16_times(s)[0], _tp16_envelope,
    lambda s: (f"Rack: 2(15) α + 2 (15/16) M / B = {fmt(_tp16_times(s)[0] / MS)} ms. Two nodes: 2 (7 α + 7/8 M / B_nv) + 2 α_ib + (M/8) / B_ib "
               f"(a two-rank ring moves its shard once each way) = {fmt(_tp16_times(s)[1] / MS)} ms. Ratio {fmt(_tp16_envelope(s))}."),
    "x (two DGX B200 / NVL72)", tolerance=0.03,
    refined=_tp16_nccl, refined_label="At NCCL's achieved rates (the engine's topology)",
    why="At NCCL's rates both run below line rate; the DGX pair's shard still crosses NICs far narrower than NVLink. TP stays inside the NVLink domain, and the domain is what an NVL72 rack enlarges (72 GPUs).",
)


# ---- 5. NICs per GPU and rails -----------------------------------------------------------------
RAIL_CLUSTERS = ("dgx-h100", "pcie-a100", "jean-zay-a100-opa", "gb200-nvl72", "hgx-b300", "dgx-a100")


def _cluster(s) -> Cluster:
    return Cluster.get(s["cluster"])


def _gbit(link) -> float:
    return link.bandwidth_bytes_per_s * 8 / GB


RAILS = Problem(
    "rails", "NICs per GPU",
    {"cluster": RAIL_CLUSTERS},
    lambda s: (f"A {s['cluster']} host has {_cluster(s).gpus_per_node} {_cluster(s).gpu.name} GPUs and {_cluster(s).rails} NICs of "
               f"{fmt(_gbit(_cluster(s).inter))} Gb/s ({_cluster(s).inter.name}). When every GPU of the host sends across the network at once "
               "(a DP ring over whole nodes), what bandwidth does each GPU get, at line rate, in GB/s?"),
    lambda s: _cluster(s).inter_bytes_per_s_per_gpu / _cluster(s).inter.efficiency / GB,
    lambda s: _gbit(_cluster(s).inter) / 8 * min(1, _cluster(s).rails / _cluster(s).gpus_per_node),
    lambda s: (f"{fmt(_gbit(_cluster(s).inter))} Gb/s / 8 = {fmt(_gbit(_cluster(s).inter) / 8)} GB/s a NIC, times {_cluster(s).rails} NICs shared by "
               f"{_cluster(s).gpus_per_node} GPUs: {fmt(_gbit(_cluster(s).inter) / 8 * min(1, _cluster(s).rails / _cluster(s).gpus_per_node))} GB/s each. "
               "With one NIC per GPU (rail-optimised) NCCL runs a ring per rail, so the node's ring crosses on all its NICs at once."),
    "GB/s", tolerance=0.03,
    refined=lambda s: _cluster(s).inter_bytes_per_s_per_gpu / GB, refined_label="At NCCL's measured share of the line rate",
    why="NCCL reaches 46-49 GB/s of an NDR port's 50, and about 85% of an HDR port's 25; with fewer NICs than GPUs the GPUs queue at the NICs they share.",
)


# ---- 6. InfiniBand against NVLink --------------------------------------------------------------
PLATFORMS = ("dgx-h100", "dgx-a100", "dgx-b200", "hgx-b300")


def _ratio(s) -> float:
    c = Cluster.get(s["platform"])
    return c.intra.bandwidth_bytes_per_s / c.inter.bandwidth_bytes_per_s


IB_VS_NVLINK = Problem(
    "ib_vs_nvlink", "The cliff at the node's edge",
    {"platform": PLATFORMS},
    lambda s: (f"On a {s['platform']} ({Cluster.get(s['platform']).gpu.name}), the datasheet gives NVLink as "
               f"{fmt(2 * Cluster.get(s['platform']).intra.bandwidth_bytes_per_s / GB)} GB/s per GPU; each GPU's NIC is "
               f"{Cluster.get(s['platform']).inter.name}. A TP group stretched across two nodes sends one way at each hop. How many times faster "
               "is NVLink, one way, than one NIC port?"),
    _ratio,
    lambda s: (2 * Cluster.get(s["platform"]).intra.bandwidth_bytes_per_s / 2) / (_gbit(Cluster.get(s["platform"]).inter) / 8 * GB),
    lambda s: (f"The datasheet's {fmt(2 * Cluster.get(s['platform']).intra.bandwidth_bytes_per_s / GB)} GB/s counts both directions: one way is "
               f"{fmt(Cluster.get(s['platform']).intra.bandwidth_bytes_per_s / GB)} GB/s. The port: {fmt(_gbit(Cluster.get(s['platform']).inter))} Gb/s / 8 = "
               f"{fmt(Cluster.get(s['platform']).inter.bandwidth_bytes_per_s / GB)} GB/s each way. Ratio {fmt(_ratio(s))}."),
    "x", tolerance=0.03,
    refined=lambda s: Cluster.get(s["platform"]).intra.effective_bytes_per_s / Cluster.get(s["platform"]).inter.effective_bytes_per_s,
    refined_label="At NCCL's measured rates on each",
    why="Both run below line rate (NCCL's ring on NVLink at 75-82%, on a NIC at 85-94%), so the measured cliff is a little smaller; it is the reason TP stays inside an NVLink domain.",
    texts=("A public lab notebook (the seed of Lab 05) calls H100's NVLink 900 GB/s per direction and InfiniBand HDR 400 GB/s: NVLink's 900 is "
           "both directions (450 each way) and an HDR port is 200 Gb/s = 25 GB/s. Its 2.25x cliff is 9x on H100 with NDR."),
)

CHAPTER = ProblemSet(
    NAME, "Problem set 9 · Hardware: rooflines, NVLink domains, NICs",
    (INTENSITY, RIDGE, BOUND, TP16, RAILS, IB_VS_NVLINK),
    reading=("Williams, Waterman and Patterson 2009 (the roofline model); the scaling book's GPU chapter; NVIDIA's DGX H100, DGX B200 and "
             "GB200 NVL72 datasheets; the NCCL tests' PERFORMANCE.md."),
)
VARIANTS = CHAPTER.variants
OUTCOMES = CHAPTER.outcomes_table
LAB = NAME

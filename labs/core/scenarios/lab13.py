"""Lab 13, inside tensor parallelism: its variant settings, its predictions, the tables the lab
shows and the outcome function `python -m labs.grade` recomputes. The split itself is computed on
real arrays (labs.core.engine.tensor_parallel); the at-scale numbers come from the engine
(labs.core.engine.perf.estimate, labs.core.engine.collectives).

Seed 001's week 23 milestone is checked here, claim by claim (SEED_CLAIMS).

The split on arrays, the engine's rows and the legacy questions depend only on the instruments'
settings or the variant's: each is computed once per process and cached (functools.lru_cache,
typed keys); public functions hand out copies, so a caller that edits a row edits its own."""

from __future__ import annotations

import copy
from functools import lru_cache

from labs.core.engine import tensor_parallel as tpm
from labs.core.scenarios.common import Option
from labs.core.engine.validation import check_bool, check_choice
from labs.core.variants import Choice, LabVariants, Numeric, Question, judged

LAB = "13_tensor_parallel"
STEP = "split"
ERA = "megatron-core-2024"

# ---- seed 001, week 23 ----------------------------------------------------------------------------
# The milestone's claims, as the seed states them (seeds/001, week 23): what the lab checks.
SEED_CLAIMS = {"layers": 12, "hidden": 512, "batch": 8, "seq": 512, "tp": 2, "comms": 24, "mb_each": 4, "mb_total": 96,
               "pcie_gb_per_s": 32, "comm_ms": 3, "forward_ms": 50, "overhead": 0.06}
SEED_MODEL = "seed-12l-512"  # labs.core.engine.models: 12 layers, d_model 512, 8 heads, 512 tokens
SEED_SHAPE = tpm.BlockShape(batch=8, seq=512, hidden=512, heads=8)
SPLIT_SHAPE = tpm.BlockShape(batch=2, seq=16, hidden=128, heads=8)  # the instrument's block: small enough for a slider
RANKS = (1, 2, 4, 8)


def seed_cluster():
    """Two A100 PCIe GPUs joined by PCIe Gen4 only: the seed's 'PCIe (~32 GB/s)' setting."""
    from labs.core.engine.hardware import GPUS, HOSTS, LINKS, Cluster

    return Cluster(GPUS["a100-pcie-80gb"], 2, 1, LINKS["pcie4"], LINKS["ib-hdr"], None, "2x A100 PCIe", HOSTS["dgx-a100"])


# ---- the split, computed ------------------------------------------------------------------------------
def split_report(block: str, ranks: int, sequence_parallel: bool = False, wire: str = "fp64", shape: tpm.BlockShape = SPLIT_SHAPE) -> dict:
    """The block split over `ranks` against the unsplit block, on the same arrays: the largest
    difference of the output, the input gradient and the weight gradients, what each rank sent,
    each collective call, and the activation bytes each rank holds outside the split region."""
    check_choice("block", block, tpm.BLOCKS)
    check_choice("ranks", ranks, RANKS)
    check_bool("sequence_parallel", sequence_parallel)
    return copy.deepcopy(_split_report(block, ranks, sequence_parallel, wire, shape))


@lru_cache(maxsize=64, typed=True)
def _split_report(block: str, ranks: int, sequence_parallel: bool, wire: str, shape: tpm.BlockShape) -> dict:
    """One setting's split, once per process (24 settings: the grader met every one in a class).
    Run on one BLAS thread: these matrices are 32 x 128, and OpenBLAS's threads waiting for each
    other on a busy machine cost 0.1-0.3 s of CPU a setting (3.1 s for all 24 on 2 cores under
    load), one thread 0.29 s for all 24 (threadpoolctl, limited here only)."""
    with _blas_controller().limit(limits=1, user_api="blas"):
        return _split_report_on_arrays(block, ranks, sequence_parallel, wire, shape)


@lru_cache(maxsize=1)
def _blas_controller():
    """threadpoolctl's view of the loaded BLAS, found once (a search of the process's libraries,
    ~1 ms, that threadpool_limits would repeat for every setting)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@lru_cache(maxsize=8, typed=True)
def _unsplit(block: str, wire: str, shape: tpm.BlockShape) -> tuple:
    """The block's weights, input x, output gradient dz and its unsplit run: the same for every
    split of it (8 settings a block), so made once (read only by the splits)."""
    weights = tpm.make_weights(shape, block)
    x, dz = tpm.block_inputs(shape)
    return weights, x, dz, tpm.run_block(x, dz, weights, block, shape, 1, wire=wire)


def _split_report_on_arrays(block: str, ranks: int, sequence_parallel: bool, wire: str, shape: tpm.BlockShape) -> dict:
    weights, x, dz, whole = _unsplit(block, wire, shape)
    # one rank without SP is the unsplit run's own call
    split = whole if ranks == 1 and not sequence_parallel else tpm.run_block(x, dz, weights, block, shape, ranks, sequence_parallel, wire)
    scale = max(float(abs(whole.output).max()), 1.0)
    return {
        "output_diff": float(abs(split.output - whole.output).max()),
        "grad_input_diff": float(abs(split.grad_input - whole.grad_input).max()),
        "grad_weight_diff": max(float(abs(split.grad_weights[k] - whole.grad_weights[k]).max()) for k in weights),
        "relative_diff": float(abs(split.output - whole.output).max()) / scale,
        "sent_per_rank": float(split.sent_per_rank.max()),
        "forward_sent_per_rank": float(split.forward_sent_per_rank.max()) if ranks > 1 else 0.0,
        "calls": split.calls, "forward_calls": split.forward_calls,
        "held_bytes": split.replicated_bytes_per_rank, "held_unsplit_bytes": whole.replicated_bytes_per_rank,
        "payload_bytes": shape.tokens * shape.hidden * tpm.wire_itemsize(wire),
    }


def collectives_per_layer_forward() -> int:
    """Forward collectives one transformer layer runs under TP: its attention block's and its
    MLP block's, counted on the split arrays."""
    return sum(split_report(block, 2)["forward_calls"] for block in ("attention", "mlp-gelu"))


def seed_estimate(tp: int = SEED_CLAIMS["tp"]):
    """The engine's step for seed 001's model, batch 8, TP over two A100 PCIe GPUs."""
    from labs.core.engine.models import Model
    from labs.core.engine.perf import Plan, estimate

    return estimate(Model.get(SEED_MODEL), seed_cluster(), Plan(tp=tp, micro_batch=SEED_SHAPE.batch, global_batch=SEED_SHAPE.batch))


def seed_check(tp: int = SEED_CLAIMS["tp"]) -> dict:
    """Seed 001's milestone recomputed: the all-reduces of a forward pass counted on the arrays,
    their bytes counted at the seed's size, their PCIe time from the collective cost model, and
    the engine's step (forward and backward) on two A100 PCIe GPUs."""
    from labs.core.engine.collectives import all_reduce_time

    counted = tpm.forward_all_reduce_bytes(SEED_SHAPE, tp, "bf16")
    comms = SEED_CLAIMS["layers"] * collectives_per_layer_forward()
    link = seed_cluster().intra
    one = all_reduce_time(counted["payload_bytes"], tp, link.effective_bytes_per_s, link.latency_s)
    est = seed_estimate(tp)
    return {
        "comms": comms, "payload_bytes": counted["payload_bytes"], "sent_per_rank": counted["sent_per_rank"],
        "total_bytes": comms * counted["payload_bytes"], "pcie_forward_s": comms * one, "link": link.name,
        "link_bytes_per_s": link.effective_bytes_per_s, "estimate": est,
        "engine_tp_share": est.time.tp_comm / est.step_time_s,
    }


# ---- the scaling claim ---------------------------------------------------------------------------------
COUNTED_WIDTHS = (128, 256, 512, 1024)  # d_model where the bytes are counted on arrays (8 tokens, TP 2)
ENGINE_WIDTHS = (256, 512, 1024, 2048, 4096, 8192, 16384)


def counted_bytes_per_token(hidden: int, tp: int = 2) -> float:
    """Bytes one rank sends per token for one forward all-reduce, counted on a TP MLP's arrays."""
    shape = tpm.BlockShape(batch=1, seq=8, hidden=hidden, heads=8)
    return tpm.forward_all_reduce_bytes(shape, tp, "bf16")["sent_per_rank"] / shape.tokens


def width_model(hidden: int, seq: int = SEED_SHAPE.seq):
    """Seed 001's 12-layer model at another width (heads grow with it: 64-wide heads)."""
    from labs.core.engine.models import Model

    return Model.get(SEED_MODEL, hidden=hidden, heads=max(1, hidden // 64), seq_len=seq)


def engine_width_row(hidden: int, seq: int = SEED_SHAPE.seq, tp: int = 2) -> dict:
    """Per token and layer at a width, from the engine: TP bytes each GPU sends (forward and
    backward) and the layer's model FLOPs (forward and backward)."""
    return dict(_engine_width_row(hidden, seq, tp))


@lru_cache(maxsize=64, typed=True)
def _engine_width_row(hidden: int, seq: int, tp: int) -> dict:
    from labs.core.engine.perf import Plan, estimate

    model = width_model(hidden, seq)
    est = estimate(model, seed_cluster(), Plan(tp=tp, micro_batch=SEED_SHAPE.batch, global_batch=SEED_SHAPE.batch))
    tokens = SEED_SHAPE.batch * seq
    return {"hidden": hidden, "tp_bytes_per_token_layer": est.comm_bytes_per_gpu["tp"] / tokens / model.layers,
            "flops_per_token_layer": 3 * model.layer_forward_flops() / seq}


SCALING_OPTIONS = (
    Option("quad_cubic", "Traffic x4 and FLOPs x8: communication quadratic, compute cubic in d", "TP traffic grows with d squared"),
    Option("lin_quad", "Traffic x2 and FLOPs x4: communication linear, compute quadratic in d", "the FLOPs grow with d only"),
    Option("lin_lin", "Traffic x2 and FLOPs x2: both grow linearly in d, the ratio stays", "FLOPs per token grow linearly in d"),
    Option("quad_quad", "Traffic x4 and FLOPs x4: both grow as d squared, the ratio stays", "activations grow with d squared"),
)
SCALING_CLAIMS = {"quad_cubic": (4, 8), "lin_quad": (2, 4), "lin_lin": (2, 2), "quad_quad": (4, 4)}


def scaling_measured(hidden: int, seq: int) -> tuple[float, float]:
    """(TP bytes, FLOPs) per token and layer when d_model doubles from `hidden`, engine."""
    a, b = engine_width_row(hidden, seq), engine_width_row(2 * hidden, seq)
    return b["tp_bytes_per_token_layer"] / a["tp_bytes_per_token_layer"], b["flops_per_token_layer"] / a["flops_per_token_layer"]


def scaling_answer(hidden: int, seq: int) -> str:
    """The option nearest the engine's two ratios, on a log scale."""
    import math

    traffic, flops = scaling_measured(hidden, seq)
    return min(SCALING_CLAIMS, key=lambda k: abs(math.log(SCALING_CLAIMS[k][0] / traffic)) + abs(math.log(SCALING_CLAIMS[k][1] / flops)))


def scaling_explanations(hidden: int, seq: int) -> dict[str, str]:
    traffic, flops = scaling_measured(hidden, seq)
    measured = (f"from d = {hidden} to {2 * hidden}, per token and layer, the engine's TP bytes grow {traffic:.2f}x and the FLOPs "
                f"{flops:.2f}x (24 d^2 of GEMMs and 4 s d of attention per token forward)")
    answer = scaling_answer(hidden, seq)
    return {k: ("what the engine finds: " if k == answer else "not what the engine finds: ") + f"{measured}." for k in SCALING_CLAIMS}


# ---- where TP stops --------------------------------------------------------------------------------------
SWEEP_GPUS = 64
SWEEP_TPS = (1, 2, 4, 8, 16, 32, 64)
DOMAINS = {"nodes": "8-GPU nodes on InfiniBand", "domain": "64 GPUs of a GB200 NVL72 rack, one NVLink domain"}
SWEEP_GPU_KEYS = {"h100": ("h100-sxm", "dgx-h100"), "b200": ("b200", "dgx-b200")}
# The sweep's three platforms, each a catalog preset (labs.core.engine.hardware.CLUSTERS, with its
# sources): (gpu, domain) as sweep_cluster takes them, and the GPU's catalog key. The rack's curve is
# the same whichever GPU the nodes have: no H100 platform joins 64 GPUs on NVLink.
SWEEP_PLATFORMS = {"dgx-h100": ("h100", "nodes", "h100-sxm"), "dgx-b200": ("b200", "nodes", "b200"),
                   "gb200-nvl72": ("b200", "domain", "gb200")}
SWEEP_PLATFORM_NAMES = {"dgx-h100": "DGX H100 (8 nodes of 8)", "dgx-b200": "DGX B200 (8 nodes of 8)",
                        "gb200-nvl72": "GB200 NVL72 (64 GPUs of one rack)"}
NVL72_TRAY_GPUS = 4  # a GB200 NVL72 compute tray (host): 4 GPUs (pf_gb200_nvl72_gpus_per_tray)


def sweep_cluster(gpu: str, domain: str):
    """64 GPUs either as 8 nodes of 8 (DGX H100 or DGX B200: NVLink inside a node, InfiniBand between),
    or as 16 of the 18 trays of one GB200 NVL72 rack: all 64 in one 72-GPU NVLink 5 domain (the
    catalog's gb200-nvl72 preset, whatever `gpu` the nodes have)."""
    from labs.core.engine.hardware import Cluster

    check_choice("gpu", gpu, SWEEP_GPU_KEYS)
    check_choice("domain", domain, DOMAINS)
    if domain == "nodes":
        return Cluster.get(SWEEP_GPU_KEYS[gpu][1], nodes=SWEEP_GPUS // 8)
    return Cluster.get("gb200-nvl72", nodes=SWEEP_GPUS // NVL72_TRAY_GPUS)


def platform_sweeps(model_key: str, overlap: bool = True) -> dict[str, list[dict]]:
    """The TP sweep on each of SWEEP_PLATFORMS (DGX H100, DGX B200, GB200 NVL72)."""
    return {p: tp_sweep(model_key, gpu, domain, overlap) for p, (gpu, domain, _) in SWEEP_PLATFORMS.items()}


def platform_unconfirmed() -> dict[str, tuple[str, ...]]:
    """Each sweep platform's GPU name and the GPU fields the catalog marks unconfirmed
    (validate.unconfirmed_constants; tests/test_unconfirmed.py lists them)."""
    from labs.core.engine.hardware import GPUS
    from labs.core.engine.validate import unconfirmed_constants

    notes = unconfirmed_constants()
    return {GPUS[key].name: tuple(w.split()[2] for w, _ in notes if w.split()[:2] == ["gpu", key]) for _, _, key in SWEEP_PLATFORMS.values()}


def sweep_plan(tp: int, overlap: bool = True):
    from labs.core.engine.perf import Plan

    return Plan.for_era(ERA, tp=tp, pp=1, dp=SWEEP_GPUS // tp, micro_batch=1, global_batch=128, zero_stage=1,
                        recompute="selective", sequence_parallel=True, tp_comm_overlap=overlap)


def tp_sweep(model_key: str, gpu: str, domain: str, overlap: bool = True) -> list[dict]:
    """The engine's step at each TP degree the model's heads allow, DP filling the 64 GPUs."""
    return [dict(r) for r in _tp_sweep(model_key, gpu, domain, overlap)]


def kv_replicated_model(model, tp: int):
    """The model as a TP rank past the K/V heads runs it (review 38bda0b, W2): Megatron-Core splits
    the query groups over TP (`divide(num_query_groups, world_size)` asserts they divide), so TP
    beyond the K/V heads needs each rank to hold a whole replicated K/V head, as inference engines
    (vLLM) do. Priced as the same model with `tp` K/V heads: each rank's K/V weights, their
    gradients and optimizer state, K/V GEMMs and K/V activations are one head's, not kv/tp of one."""
    from dataclasses import replace

    if tp <= model.kv_head_count:
        return model
    return replace(model, kv_heads=tp, name=f"{model.name}, K/V replicated to {tp} heads")


@lru_cache(maxsize=64, typed=True)
def _tp_sweep(model_key: str, gpu: str, domain: str, overlap: bool) -> tuple[dict, ...]:
    from labs.core.engine.models import Model
    from labs.core.engine.perf import estimate

    model, cluster = Model.get(model_key), sweep_cluster(gpu, domain)
    rows = []
    for tp in SWEEP_TPS:
        if model.heads % tp:
            continue
        plan = sweep_plan(tp, overlap)
        base = estimate(model, cluster, plan)  # K/V split as if a fraction of a head could be held
        e = estimate(kv_replicated_model(model, tp), cluster, plan) if tp > model.kv_head_count else base
        rows.append({"tp": tp, "step_s": e.step_time_s, "tp_comm_s": e.time.tp_comm, "compute_s": e.time.compute, "fits": e.fits,
                     "memory_gb": e.memory.total / 1e9, "mfu": base.mfu * base.step_time_s / e.step_time_s,  # the model's own FLOPs
                     "kv_heads_per_rank": max(model.kv_head_count / tp, 1.0), "kv_heads": model.kv_head_count,
                     "kv_replicated": tp > model.kv_head_count, "kv_replication_gb": (e.memory.total - base.memory.total) / 1e9,
                     "kv_replication_s": e.step_time_s - base.step_time_s})
    return tuple(rows)


def best_tp(model_key: str, gpu: str = "h100", domain: str = "nodes", overlap: bool = True) -> int | None:
    """The TP degree with the shortest step among those that fit and Megatron-Core builds (TP no
    wider than the K/V heads; None if none)."""
    fits = [r for r in tp_sweep(model_key, gpu, domain, overlap) if r["fits"] and not r["kv_replicated"]]
    return min(fits, key=lambda r: r["step_s"])["tp"] if fits else None


def scaling_book_threshold(model_key: str, gpu: str) -> dict:
    """The scaling book's bound on TP (jax-ml/scaling-book, training chapter, 'Tensor
    Parallelism'): an MLP's forward computes 4 B D F / (Y C) and all-gathers plus reduce-scatters
    B x D bf16 activations, 4 B D / W; compute-bound while Y < F W / C. Its assumptions: the
    collectives overlap the matmuls perfectly, the matmuls run at the peak C, W is the one-way
    NVLink bandwidth per GPU, attention and latency are left out."""
    from labs.core.engine.hardware import GPUS, LINKS
    from labs.core.engine.models import Model

    check_choice("gpu", gpu, tuple(SWEEP_GPU_KEYS) + ("gb200",))
    g = GPUS[SWEEP_GPU_KEYS[gpu][0] if gpu in SWEEP_GPU_KEYS else gpu]
    w = LINKS[g.nvlink].bandwidth_bytes_per_s
    f = Model.get(model_key).ffn
    return {"ffn": f, "peak_flops": g.bf16_flops, "link_bytes_per_s": w, "intensity": g.bf16_flops / w, "max_tp": f * w / g.bf16_flops}


TP_OPTIONS = (
    Option("4", "TP 4: half the TP traffic of TP 8, inside one node", "underestimates the memory per GPU"),
    Option("8", "TP 8: all of one node, the most TP inside NVLink", "TP is best at one node, whatever the model"),
    Option("16", "TP 16: two nodes, half the compute per GPU again", "more TP always means a shorter step"),
    Option("32", "TP 32: four nodes, the least memory per GPU", "the least memory per GPU is the fastest"),
)
SWEEP_MODELS = ("llama3-70b", "llama2-70b")


# ---- variants (labs.variants) ------------------------------------------------------------------------------
# Ranges where the lessons hold (tests/test_lab13.py walks them all).
VARIANT_TPS = (2, 4, 8)
VARIANT_BATCHES = (4, 8)
VARIANT_WIDTHS = (512, 1024, 2048)
VARIANT_SEQS = (512, 1024)
DEFAULT_SETTINGS = {"tp": 2, "batch": 8, "width": 512, "seq": 512, "model": "llama3-70b"}
RING_TOLERANCE = 0.10  # of the answer


def check_settings(settings: dict | None) -> dict:
    v = dict(DEFAULT_SETTINGS if settings is None else settings)
    v.setdefault("gpu", "h100")  # the first edition's sweep ran on DGX H100 only
    v.setdefault("seq_grows", False)  # editions 1-3 keep the sequence when d doubles
    unknown = sorted(set(v) - set(DEFAULT_SETTINGS) - {"gpu", "seq_grows"})
    if unknown:
        raise ValueError(f"unknown variant setting(s) {unknown}")
    check_bool("seq_grows", v.get("seq_grows"))
    check_choice("tp", v.get("tp"), VARIANT_TPS)
    check_choice("batch", v.get("batch"), VARIANT_BATCHES)
    check_choice("width", v.get("width"), VARIANT_WIDTHS)
    check_choice("seq", v.get("seq"), _SETTING_SEQS)
    check_choice("model", v.get("model"), _SETTING_MODELS)
    check_choice("gpu", v.get("gpu"), _SWEEP_GPUS)
    return v


def draw_settings(d) -> dict:
    return {"tp": d.choice("tp", VARIANT_TPS), "batch": d.choice("batch", VARIANT_BATCHES), "width": d.choice("width", VARIANT_WIDTHS),
            "seq": d.choice("seq", VARIANT_SEQS), "model": d.choice("model", SWEEP_MODELS)}


def ring_bytes_answer(settings: dict | None) -> float:
    """MB each rank sends in one ring all-reduce of the MLP output, b x s x d bf16 (engine)."""
    return _ring_mb(check_settings(settings))


def _ring_mb(v: dict) -> float:
    """ring_bytes_answer at settings already checked."""
    from labs.core.engine.collectives import bytes_sent_per_rank

    return bytes_sent_per_rank("all_reduce", v["batch"] * SEED_SHAPE.seq * SEED_SHAPE.hidden * 2, v["tp"]) / 1e6


def tp_explanations(model_key: str) -> dict[str, str]:
    rows = {r["tp"]: r for r in tp_sweep(model_key, "h100", "nodes")}
    out = {}
    for o in TP_OPTIONS:
        r = rows[int(o.key)]
        out[o.key] = f"step {r['step_s']:.1f} s, TP communication {r['tp_comm_s']:.1f} s, {r['memory_gb']:.0f} GB per GPU{'' if r['fits'] else ' (does not fit)'}." + (
            f" Megatron-Core would not build it: its {r['kv_heads']} query groups (K/V heads) must divide TP; priced with each rank "
            f"holding a replicated K/V head (+{r['kv_replication_gb']:.1f} GB, +{r['kv_replication_s']:.2f} s)." if r["kv_replicated"] else "")
    return out


def build_questions_v1(settings: dict) -> dict:
    from labs.core.engine.models import Model

    v = check_settings(settings)
    name = Model.get(v["model"]).name
    best = best_tp(v["model"])
    return {
        **ring_and_scaling(v),
        "tp_best": Choice(
            f"{name} on 64 H100s in 8-GPU nodes, DP filling the rest, sequence parallelism and Transformer Engine's TP overlap on: "
            "which TP degree gives the fastest step among the layouts that fit in memory?",
            TP_OPTIONS, None if best is None else str(best), tp_explanations(v["model"]),
        ),
    }


def ring_and_scaling(v: dict) -> dict:
    ring = ring_bytes_answer(v)
    payload = v["batch"] * SEED_SHAPE.seq * SEED_SHAPE.hidden * 2 / 1e6
    return {
        "ring": Numeric(
            f"Seed 001's model (d_model {SEED_SHAPE.hidden}) with batch {v['batch']} x {SEED_SHAPE.seq} tokens, activations in bf16, "
            f"split over TP = {v['tp']} ranks: how many MB does each rank send in one ring all-reduce of the MLP's output? "
            f"(right within {RING_TOLERANCE:.0%})",
            ring, RING_TOLERANCE * ring, "MB",
            f"the payload is b x s x d x 2 bytes = {payload:.2f} MB; a ring all-reduce sends 2(n-1)/n of it from each rank: "
            f"{ring:.2f} MB (section 2 counts the seed's own setting on the arrays).",
        ),
        "scaling": Choice(
            f"Seed 001 ends: 'at larger d_model, communication scales quadratically while compute scales cubically'. Take its "
            f"12-layer model at d_model = {v['width']} with {v['seq']}-token sequences and double d_model (TP, batch and sequence "
            "unchanged). Per token and layer, how do the bytes each TP rank sends and the FLOPs change?",
            SCALING_OPTIONS, scaling_answer(v["width"], v["seq"]), scaling_explanations(v["width"], v["seq"]),
        ),
    }


# ---- the second edition (issue 38 item 2): the right answers differ between students in content ------------
# tp_best: the model and the DGX generation are drawn, and the engine's fastest fitting TP is 1, 4 or 8
# (two setups each); the options are TP 1, 4, 8 and 16 whatever the setup. scaling: the sequence is drawn
# short or long; at long sequences attention's 4 s d FLOPs per token (linear in d) outweigh the GEMMs'
# 24 d^2, and doubling d doubles the FLOPs instead of quadrupling them.
TP_SETUPS_V2 = (("llama2-7b", "h100"), ("llama2-13b", "b200"), ("llama2-70b", "b200"), ("llama3-70b", "b200"),
                ("llama2-70b", "h100"), ("gpt3-175b", "b200"))
TP_OPTIONS_V2 = (
    Option("1", "TP 1: no tensor split, data parallelism over all 64 GPUs", "TP only costs: a model that fits needs none"),
    Option("4", "TP 4: half of one node, half the TP traffic of TP 8", "the smallest TP is best, whatever the memory"),
    Option("8", "TP 8: all of one node, the most TP inside NVLink", "TP is best at one node, whatever the model"),
    Option("16", "TP 16: two nodes, half the compute per GPU again", "more TP always means a shorter step"),
)
SCALING_SEQS_V2 = (65536, 131072)  # with VARIANT_SEQS: a short or a long sequence, drawn


def draw_settings_v2(d) -> dict:
    model, gpu = d.choice("tp_setup", TP_SETUPS_V2)
    return {"tp": d.choice("tp", VARIANT_TPS), "batch": d.choice("batch", VARIANT_BATCHES), "width": d.choice("width", VARIANT_WIDTHS),
            "seq": d.choice("seq", VARIANT_SEQS + SCALING_SEQS_V2), "model": model, "gpu": gpu}


def tp_explanations_v2(model_key: str, gpu: str) -> dict[str, str]:
    from labs.core.engine.models import Model

    rows = {r["tp"]: r for r in tp_sweep(model_key, gpu, "nodes")}
    heads = Model.get(model_key).heads
    out = {}
    for o in TP_OPTIONS_V2:
        r = rows.get(int(o.key))
        if r is None:
            out[o.key] = f"the model's {heads} attention heads do not split {o.key} ways: no such layout."
            continue
        out[o.key] = f"step {r['step_s']:.2f} s, TP communication {r['tp_comm_s']:.2f} s, {r['memory_gb']:.0f} GB per GPU{'' if r['fits'] else ' (does not fit)'}." + (
            f" Megatron-Core would not build it: its {r['kv_heads']} query groups (K/V heads) must divide TP." if r["kv_replicated"] else "")
    return out


def tp_question_v2(v: dict) -> Choice:
    from labs.core.engine.models import Model

    platform = next(p for p, (g, domain, _) in SWEEP_PLATFORMS.items() if (g, domain) == (v["gpu"], "nodes"))
    best = best_tp(v["model"], v["gpu"])
    return Choice(
        f"{Model.get(v['model']).name} on 64 GPUs of {SWEEP_PLATFORM_NAMES[platform]}, DP filling the rest, micro-batch 1, ZeRO-1, "
        "sequence parallelism and Transformer Engine's TP overlap on: which TP degree gives the fastest step among the layouts "
        "that fit in memory?",
        TP_OPTIONS_V2, None if best is None else str(best), tp_explanations_v2(v["model"], v["gpu"]),
    )


def build_questions(settings: dict) -> dict:
    v = check_settings(settings)
    return {**ring_and_scaling(v), "tp_best": tp_question_v2(v)}


# ---- the third edition: the scaling key has three mechanisms ---------------------------------------------------
# Doubling d multiplies a layer's forward FLOPs per token, 24 d^2 + 4 s d, by (96 + 8 r) / (24 + 4 r)
# with r = s / d: x3.5-3.9 for short sequences (r <= 2), x3 exactly at r = 6, x2.05-2.3 at r >= 32.
# The sequence is drawn as a multiple of the width, so each regime is a third of the class.
SCALING_RATIOS_V3 = {"short": None, "medium": 6, "long": 64}  # s / d; short draws s from VARIANT_SEQS
SCALING_SEQS_V3 = tuple(sorted({r * d for r in (6, 64) for d in VARIANT_WIDTHS}))
SCALING_OPTIONS_V3 = (
    Option("lin_quad", "Traffic x2 and FLOPs x4: communication linear, compute quadratic in d", "the FLOPs grow with d only"),
    Option("lin_lin", "Traffic x2 and FLOPs x2: both grow linearly in d, the ratio stays", "FLOPs per token grow linearly in d"),
    Option("lin_three", "Traffic x2 and FLOPs x3: GEMMs x4 and attention x2, in equal parts", "attention's FLOPs do not depend on d"),
    Option("quad_cubic", "Traffic x4 and FLOPs x8: communication quadratic, compute cubic in d", "TP traffic grows with d squared"),
)
SCALING_CLAIMS_V3 = {"lin_quad": (2, 4), "lin_lin": (2, 2), "lin_three": (2, 3), "quad_cubic": (4, 8)}


def scaling_answer_v3(hidden: int, seq: int) -> str:
    """The option nearest the engine's two ratios, on a log scale."""
    import math

    traffic, flops = scaling_measured(hidden, seq)
    return min(SCALING_CLAIMS_V3, key=lambda k: abs(math.log(SCALING_CLAIMS_V3[k][0] / traffic)) + abs(math.log(SCALING_CLAIMS_V3[k][1] / flops)))


def scaling_explanations_v3(hidden: int, seq: int) -> dict[str, str]:
    traffic, flops = scaling_measured(hidden, seq)
    answer = scaling_answer_v3(hidden, seq)
    measured = (f"from d = {hidden} to {2 * hidden} at s = {seq:,}, per token and layer, the engine's TP bytes grow {traffic:.2f}x and the "
                f"FLOPs {flops:.2f}x: 24 d^2 of GEMMs grow 4x, 4 s d of attention 2x, and s / d = {seq / hidden:g} sets their mix")
    return {k: ("what the engine finds: " if k == answer else "not what the engine finds: ") + f"{measured}." for k in SCALING_CLAIMS_V3}


def draw_settings_v3(d) -> dict:
    s = draw_settings_v2(d)
    ratio = SCALING_RATIOS_V3[d.choice("scaling_regime", tuple(SCALING_RATIOS_V3))]
    return {**s, "seq": d.choice("seq", VARIANT_SEQS) if ratio is None else ratio * s["width"]}


def build_questions_v3(settings: dict) -> dict:
    v = check_settings(settings)
    q = build_questions(v)
    old = q["scaling"]
    return {**q, "scaling": Choice(old.prompt, SCALING_OPTIONS_V3, scaling_answer_v3(v["width"], v["seq"]), scaling_explanations_v3(v["width"], v["seq"]))}


# ---- the fourth edition: the scaling key in quarters, the seed's claim one of them ------------------------------
# Edition 3's three keys in thirds left a blind rule at 38% over four options: the seed's own claim,
# traffic x4 and FLOPs x8, was right for no one. It is right where the sequence grows with the width:
# per sequence and layer, TP sends b s d (x4 when s and d both double) and the layer does
# s (24 d^2 + 4 s d) FLOPs (x8), the n^2-data, n^3-math picture of one matrix product. The question
# now asks per sequence (the same ratios as per token while s stays), and a quarter of the class
# doubles the sequence with d; the other three quarters keep it at s / d = 0.5 or 1 (x3.7-3.9, the
# GEMMs), 6 (x3) or 64 (x2.2, attention). FLOPs / byte still grows x2 at most in every case.
SCALING_REGIMES_V4 = ("short", "medium", "long", "grows")
SCALING_SHORT_RATIOS_V4 = (0.5, 1)  # s / d of the short sequences, and of the one that grows
SCALING_LONG_RATIOS_V4 = {"medium": 6, "long": 64}
SCALING_SEQS_V4 = tuple(sorted({int(r * d) for r in SCALING_SHORT_RATIOS_V4 for d in VARIANT_WIDTHS}))
SCALING_MARGIN = 2.0  # the nearest claim at least this many times nearer (log distance) than the next


def scaling_measured_v4(hidden: int, seq: int, seq_grows: bool) -> tuple[float, float]:
    """(TP bytes, FLOPs) per sequence and layer when d_model doubles from `hidden` (and the sequence
    with it when `seq_grows`), engine."""
    seq2 = 2 * seq if seq_grows else seq
    a, b = engine_width_row(hidden, seq), engine_width_row(2 * hidden, seq2)
    return (b["tp_bytes_per_token_layer"] * seq2 / (a["tp_bytes_per_token_layer"] * seq),
            b["flops_per_token_layer"] * seq2 / (a["flops_per_token_layer"] * seq))


def scaling_answer_v4(hidden: int, seq: int, seq_grows: bool) -> str | None:
    """The option nearest the engine's two ratios on a log scale; None unless it is SCALING_MARGIN
    times nearer than the next."""
    import math

    traffic, flops = scaling_measured_v4(hidden, seq, seq_grows)
    dist = sorted((abs(math.log(t / traffic)) + abs(math.log(f / flops)), k) for k, (t, f) in SCALING_CLAIMS_V3.items())
    return dist[0][1] if dist[1][0] >= SCALING_MARGIN * dist[0][0] else None


def scaling_explanations_v4(hidden: int, seq: int, seq_grows: bool) -> dict[str, str]:
    traffic, flops = scaling_measured_v4(hidden, seq, seq_grows)
    answer = scaling_answer_v4(hidden, seq, seq_grows)
    if seq_grows:
        measured = (f"from d = {hidden} at s = {seq:,} to d = {2 * hidden} at s = {2 * seq:,}, per sequence and layer, the engine's TP bytes "
                    f"grow {traffic:.2f}x (b s d: both factors double) and the FLOPs {flops:.2f}x (s x (24 d^2 + 4 s d): every term x8), "
                    f"x{traffic / 2:.2f} and x{flops / 2:.2f} per token, twice the tokens; FLOPs per byte still grow "
                    f"only {flops / traffic:.2f}x, linearly in d")
    else:
        measured = (f"from d = {hidden} to {2 * hidden} at s = {seq:,}, per sequence and layer, the engine's TP bytes grow {traffic:.2f}x and the "
                    f"FLOPs {flops:.2f}x: 24 d^2 of GEMMs grow 4x, 4 s d of attention 2x, and s / d = {seq / hidden:g} sets their mix")
    return {k: ("what the engine finds: " if k == answer else "not what the engine finds: ") + f"{measured}." for k in SCALING_CLAIMS_V3}


def draw_settings_v4(d) -> dict:
    s = draw_settings_v2(d)
    regime = d.choice("scaling_regime_v4", SCALING_REGIMES_V4)
    short = d.choice("scaling_short", SCALING_SHORT_RATIOS_V4)
    ratio = SCALING_LONG_RATIOS_V4.get(regime, short)
    return {**s, "seq": int(ratio * s["width"]), "seq_grows": regime == "grows"}


def scaling_question_v4(width: int, seq: int, seq_grows: bool) -> Choice:
    how = f"the sequence doubled with it, to {2 * seq:,} tokens, as long-context models widen their window" if seq_grows else "the sequence unchanged"
    return Choice(
        f"Seed 001 ends: 'at larger d_model, communication scales quadratically while compute scales cubically'. Take its 12-layer "
        f"model at d_model = {width} with {seq:,}-token sequences and double d_model, {how} (TP and batch unchanged). Per sequence "
        "and layer, how do the bytes each TP rank sends and the FLOPs change?",
        SCALING_OPTIONS_V3, scaling_answer_v4(width, seq, seq_grows), scaling_explanations_v4(width, seq, seq_grows),
    )


def build_questions_v4(settings: dict) -> dict:
    v = check_settings(settings)
    return {**build_questions(v), "scaling": scaling_question_v4(v["width"], v["seq"], v["seq_grows"])}


VARIANTS = LabVariants(LAB, draw_settings_v4, build_questions_v4, version=4,
                       older={1: (draw_settings, build_questions_v1), 2: (draw_settings_v2, build_questions), 3: (draw_settings_v3, build_questions_v3)})


def legacy_questions() -> dict[str, Question]:
    """The questions at the default settings, options in written order: how a step saved without
    a variant is graded."""
    return dict(_legacy_questions())


@lru_cache(maxsize=1)
def _legacy_questions() -> dict[str, Question]:
    specs = build_questions_v1(DEFAULT_SETTINGS)
    return {q: Question(q, spec, () if isinstance(spec, Numeric) else tuple(o.key for o in spec.options)) for q, spec in specs.items()}


def legacy_options(question: str) -> tuple[Option, ...]:
    """A multiple-choice question's options lettered in written order (the class dashboard's view)."""
    spec = {"scaling": SCALING_OPTIONS, "tp_best": TP_OPTIONS}[question]
    return tuple(Option("ABCDEFGH"[i], o.label, o.misconception) for i, o in enumerate(spec))


# ---- the outcome the grader recomputes ---------------------------------------------------------------------
_SETTING_SEQS = VARIANT_SEQS + SCALING_SEQS_V2 + SCALING_SEQS_V3 + SCALING_SEQS_V4  # every edition's, as check_settings allows them
_SETTING_MODELS = SWEEP_MODELS + tuple(m for m, _ in TP_SETUPS_V2)
_SWEEP_GPUS = tuple(SWEEP_GPU_KEYS)
INPUT_FIELDS = ("block", "ranks", "sequence_parallel", "width", "gpu", "overlap")


def check_inputs(inputs: dict) -> None:
    """The instruments' settings, each against what the lab offers."""
    check_choice("block", inputs.get("block"), tpm.BLOCKS)
    check_choice("ranks", inputs.get("ranks"), RANKS)
    check_bool("sequence_parallel", inputs.get("sequence_parallel"))
    check_choice("width", inputs.get("width"), ENGINE_WIDTHS)
    check_choice("gpu", inputs.get("gpu"), _SWEEP_GPUS)
    check_bool("overlap", inputs.get("overlap"))


def split_outcomes(inputs: dict, predictions: dict, variant=None) -> dict:
    """What the lab shows for the instruments' setting, and each prediction judged at the
    student's variant (None: the default settings)."""
    check_inputs(inputs)
    settings = check_settings(variant.settings if variant is not None else None)
    # the cached rows read, not copied: check_inputs made split_report's checks, and nothing here edits them
    split = _split_report(inputs["block"], inputs["ranks"], inputs["sequence_parallel"], "fp64", SPLIT_SHAPE)
    width = _engine_width_row(inputs["width"], SEED_SHAPE.seq, 2)
    sweep = {d: _tp_sweep(settings["model"], inputs["gpu"], d, inputs["overlap"]) for d in DOMAINS}
    legacy = legacy_questions() if variant is None else None
    return {
        "split_output_diff": split["output_diff"], "split_grad_diff": split["grad_input_diff"],
        "sent_per_rank_bytes": split["sent_per_rank"], "held_bytes": split["held_bytes"],
        "tp_bytes_per_token_layer": width["tp_bytes_per_token_layer"], "flops_per_token_layer": width["flops_per_token_layer"],
        **{f"best_tp_{d}": (min((r for r in rows if r["fits"]), key=lambda r: r["step_s"])["tp"] if any(r["fits"] for r in rows) else 0) for d, rows in sweep.items()},
        "ring_mb": _ring_mb(settings),
        **{f"{q}_correct": judged(variant, q, predictions, lambda a, q=q: legacy is not None and a is not None and legacy[q].judge(a))
           for q in ("ring", "scaling", "tp_best")},
    }


OUTCOMES = {(LAB, STEP): split_outcomes}

"""`python -m labs.core.engine.validate`: the engine against every public run, era by era, then the
published layouts' memory margins, the mechanism checks of engine v3 and its own picks.

For each era (a software stack, labs.core.engine.eras) it prints the reference file's rows that ran on
it (hardware FLOPs for Narayanan et al. 2021, model FLOPs for Korthikanti et al. 2022), the
engine at the published settings and the best plan the sweep finds within the era: the best
should sit at or somewhat above the published figure (far above would mean the engine believes
in free lunches). An era with no row in the reference file says so. Then the layouts NVIDIA,
Meta and DeepSeek published, each with its margin in HBM; then the mechanisms issue #24 names,
each with the number that shows it; then the GPU constants and the collectives of the NVLink domains
(one host is not one domain: an NVL72 rack is 18) and of Instinct's xGMI mesh against their
nccl-tests / rccl-tests rows; then the plans the engine recommends for three modern jobs.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from labs.core.engine import hardware
from labs.core.engine.calibration import (
    BEYOND_ENGINE, TABLE2_GPUS, deepseek_v3_estimate, layout_estimate, layout_rows, public_runs,
    table2_estimate, table2_plan,
)
from labs.core.engine.datafiles import data_dir
from labs.core.engine.eras import ERAS, stack_constant_rows
from labs.core.engine.gemm import ATTENTION_EFFICIENCY, attention_rate, gemm_time, precision_gemm_time, unfused_elementwise_ratio
from labs.core.engine.precision import GEMM_PRECISIONS
from labs.core.engine.hardware import GPUS, POWER_CURVES, Cluster
from labs.core.engine.models import Model
from labs.core.engine.perf import Plan, estimate
from labs.core.engine.search import sweep

RECOMMEND = (
    # model, cluster, nodes, global batch (sequences), era
    ("gpt3-175b", "dgx-h100", 128, 1536, "megatron-core-2024"),
    ("llama3-70b", "dgx-h100", 8, 128, "megatron-core-2024"),
    ("llama3-70b", "dgx-h100", 8, 128, "pytorch-fsdp2-2024"),
    ("llama3-405b", "meta-h100-roce", 2048, 2048, "llama3-2024"),  # Meta's 16M tokens: 2,048 x 8,192
)


def calibration_table() -> list[dict]:
    out = []
    for row in public_runs():
        best = sweep(row.model, row.cluster, global_batch=row.plan.global_batch, era=row.era).iloc[0]
        same = sweep(row.model, row.cluster, global_batch=row.plan.global_batch, era=row.era, recompute=row.plan.recompute).iloc[0]
        est = row.predict()
        engine = getattr(est, row.metric)
        out.append({
            "id": row.id, "metric": row.metric, "era": row.era, "published": row.published,
            "engine": engine, "error": row.error(),
            # the best plan's speed in the row's units: the published plan's FLOPs at the best plan's step time
            "era_best": engine * est.step_time_s / float(best.step_time_s), "best": best,
            "same_recompute": engine * est.step_time_s / float(same.step_time_s),
        })
    return out


def describe(best) -> str:
    return (
        f"tp={best.tp} pp={best.pp} dp={best.dp} cp={best.cp} mb={best.micro_batch} zero={best.zero_stage} "
        f"recompute={best.recompute} sp={best.sequence_parallel} {best.schedule} v={best.virtual_stages}"
    )


def mechanism_checks() -> list[tuple[str, str]]:
    """(what, the engine's numbers) for each mechanism of engine v3."""
    out = []
    z3 = {n: table2_estimate("ZeRO-3", n) for n in TABLE2_GPUS}
    agg = {n: z3[n].hardware_tflops_per_gpu * n / 1e3 for n in TABLE2_GPUS}
    out.append(("DeepSpeed 2021 ZeRO-3, aggregate PFLOP/s at 384/768/1536 A100s (the paper: flat as the GPUs double)",
                "/".join(f"{agg[n]:.0f}" for n in TABLE2_GPUS) + f"; at 1536: {z3[1536].time.dp_comm:.0f} s of DP/ZeRO wait against {z3[1536].time.compute:.0f} s of compute"))
    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-a100", nodes=192)
    plan = replace(table2_plan("ZeRO-3", 1536), dp_overlap=False)
    ring, tree = (estimate(model, cluster, replace(plan, dp_algorithm=a)).time.dp_comm for a in ("ring", "tree"))
    out.append(("NCCL's tree runs all-reduce only: ZeRO-3 on 1,536 A100s, DP seconds under ring / tree", f"{ring:.2f} / {tree:.2f}"))
    pat = estimate(Model.get("llama3-8b"), Cluster.get("dgx-h100", nodes=64), Plan(tp=8, dp=64, global_batch=512, zero_stage=1, bucket_bytes=25e6))
    pre_pat = estimate(pat.model, pat.cluster, replace(pat.plan, stack="megatron-core-2024"))
    rs = {e.plan.stack: next(c for c in e.collectives if c.key == "dp_reduce") for e in (pat, pre_pat)}
    out.append(("NCCL 2.23's PAT (one GPU per node): Llama 3 8B TP8 x DP64 ZeRO-1, 25 MB buckets, reduce-scatter wire with / without PAT",
                f"{rs[None].wire_s:.3f} / {rs['megatron-core-2024'].wire_s:.3f} s"))
    llama = Model.get("llama3-405b")
    try:
        ulysses = estimate(llama, Cluster.get("meta-h100-roce", nodes=256), Plan.for_era(
            None, tp=8, cp=16, pp=16, dp=1, micro_batch=1, global_batch=16, cp_algorithm="ulysses", sequence_parallel=True))
        out.append(("Ulysses bounded by query heads: Llama 3 405B TP8 CP16", f"runs, CP {ulysses.time.tp_comm:.2f} s of layer communication a step"))
    except ValueError as error:
        out.append(("Ulysses bounded by query heads: Llama 3 405B TP8 CP16", f"refused: {error}"))
    meta = Cluster.get("meta-h100-roce", nodes=1024)
    for n in (16, 32):  # Megatron-LM's range is [pp, micro-batches]: 32 micro-batches here
        try:
            est = estimate(llama, meta, Plan.for_era("llama3-2024", tp=8, pp=16, dp=64, micro_batch=1, global_batch=2048,
                                                     schedule="interleaved", virtual_stages=2, microbatch_group_size=n))
            out.append((f"Interleaving's N = {n}: Llama 3 405B on 8,192 GPUs, PP16 v2, 32 micro-batches", f"step {est.step_time_s:.2f} s, bubble {est.bubble_fraction:.1%}, {est.memory.total / 1e9:.1f} GB"))
        except ValueError as error:
            out.append((f"Interleaving's N = {n}: Llama 3 405B PP16 v2", f"refused: {error}"))
    h100 = Cluster.get("dgx-h100", nodes=16)
    l70 = Model.get("llama3-70b")
    overlapped = estimate(l70, h100, Plan.for_era("megatron-core-2024", tp=8, pp=1, dp=16, micro_batch=1, global_batch=128, zero_stage=1))
    dp = next(c for c in overlapped.collectives if c.key == "dp_reduce")
    out.append(("Overlap is not free: Llama 3 70B on 128 H100s, gradient reduction wire / exposed", f"{dp.wire_s:.2f} / {dp.exposed_s:.3f} s"))
    out.append(("Attention kernels, fraction of bf16 peak on H100 (fa2 / cudnn / fa3)",
                " / ".join(f"{ATTENTION_EFFICIENCY[(k, 'hopper')]:.2f}" for k in ("fa2", "cudnn", "fa3"))))
    out.append(("Eager PyTorch element-wise bytes over fused, Llama 3 8B", f"{unfused_elementwise_ratio(Model.get('llama3-8b')):.2f}x"))
    ds = deepseek_v3_estimate()
    dual = estimate(ds.model, ds.cluster, replace(ds.plan, schedule="dualpipe"))
    ep = {e.plan.schedule: next(c for c in e.collectives if c.key == "ep") for e in (ds, dual)}
    out.append(("DualPipe: DeepSeek-V3 on 2,048 H800s, 1F1B / DualPipe step, bubble, EP all-to-all exposed of its wire time",
                f"{ds.step_time_s:.1f} / {dual.step_time_s:.1f} s, {ds.bubble_fraction:.1%} / {dual.bubble_fraction:.1%}, "
                f"{ep['1f1b'].exposed_s / ep['1f1b'].wire_s:.0%} / {ep['dualpipe'].exposed_s / ep['dualpipe'].wire_s:.0%}"))
    return out


# ---- Engine v4: each GPU constant beside the kernel-benchmark and datasheet rows it rests on ----
KERNEL_ROWS = "kernel_benchmarks_v4.json"  # tests/data/ (not packaged in the wheel: the labs never read it)
ROW_GPUS = {"A100": "a100-sxm-80gb", "H100": "h100-sxm", "H800": "h800-sxm", "H200": "h200-sxm", "B200": "b200", "B300": "b300", "GB200": "gb200", "GB300": "gb300",
            "MI300X": "mi300x", "MI325X": "mi325x", "MI355X": "mi355x"}
# A datasheet row's id ending -> (the GPU field it gives, that field in the row's unit)
_DATASHEET_FIELDS = (
    (r"_bf16_dense_peak$", "bf16_flops", 1e-12), (r"_fp8_dense_peak$", "fp8_flops", 1e-12),
    (r"_fp6_dense_peak$", "fp6_flops", 1e-12), (r"_fp4_dense_peak$", "fp4_flops", 1e-12),
    (r"_hbm_gb$", "hbm_bytes", 1e-9), (r"_hbm_(tbs|bw|tbs_nvidia)$", "hbm_bytes_per_s", 1e-12),
    (r"_(tdp|tbp|power_mamf_run|max_tgp|max_power|typical_board_power|power_limit_smi)$", "tdp_w", 1.0),
    (r"_vram_gib$", "hbm_bytes", 2.0**-30), (r"_vram_bytes$", "hbm_bytes", 1.0), (r"_smi_mib$", "hbm_bytes", 2.0**-20),
    (r"_sms$", "sms", 1.0),
)
_KERNEL_NAMES = {"flashattention-2": "fa2", "fa2 2.7.4.post1": "fa2", "fa3": "fa3", "fa4": "fa4", "cudnn": "cudnn"}


def kernel_rows() -> list[dict]:
    """tests/data/kernel_benchmarks_v4.json's rows ([] where the data is not there, as in a wheel)."""
    path = data_dir() / KERNEL_ROWS
    if not path.exists():
        path = Path(__file__).resolve().parents[3] / "tests" / "data" / KERNEL_ROWS
    return json.loads(path.read_text()) if path.exists() else []


def gemm_rate(gpu, m, n, k, fp8=False) -> float:
    """FLOP/s the engine gives one (m, n, k) GEMM on this GPU (labs.core.engine.gemm.gemm_time)."""
    return 2.0 * m * n * k / float(gemm_time(gpu, m, n, k, fp8=fp8))


# GEMM rows in a block-scaled format, by the Plan.precision they price (labs.core.engine.gemm.PRECISION_KERNELS):
# Azure's cuBLASLt FP4 rows on GB200 (the format not named: block-scaled FP4, taken as NVFP4), DeepGEMM's.
_BLOCK_SCALED_ROWS = {"fp4": "nvfp4", "fp8_blockwise": "fp8_blockwise"}


def gpu_row_checks(rows=None) -> list[dict]:
    """Each kernel-benchmark or datasheet row on a catalogued GPU beside the engine's value: the
    constant a datasheet row gives, the GEMM rate at a GEMM row's shape (the MAMF's best shape),
    the attention rate of the row's kernel, the HBM bandwidth a streaming kernel reaches.
    {gpu, row, what, unit, measured, model}; model None where the engine has nothing to compare."""
    out = []
    for row in kernel_rows() if rows is None else rows:
        key = ROW_GPUS.get(row["hardware"])
        if key is None:
            continue
        gpu, c, what, model = GPUS[key], row["conditions"], row["quantity"], None
        if row["kind"] == "datasheet":
            match = next(((name, scale) for pattern, name, scale in _DATASHEET_FIELDS if re.search(pattern, row["id"])), None)
            if match is None:
                continue
            what, model = match[0], getattr(gpu, match[0]) * match[1]
        elif row["kind"] == "gemm":
            m, n, k = (c["M"], c["N"], c["K"]) if "M" in c else map(int, c["best_shape_MxNxK"].split("x"))
            dtype = c["dtype"]
            what = f"{dtype} GEMM {m}x{n}x{k}" + (" (MAMF)" if row["id"].startswith("mamf_") else "")
            if dtype in ("bf16", "fp16", "fp8", "fp8_e4m3"):  # FP16 runs at BF16's tensor rate
                model = gemm_rate(gpu, m, n, k, fp8=dtype not in ("bf16", "fp16")) / 1e12
            elif dtype in _BLOCK_SCALED_ROWS and gpu.arch in GEMM_PRECISIONS[_BLOCK_SCALED_ROWS[dtype]].archs:
                model = 2.0 * m * n * k / float(precision_gemm_time(gpu, m, n, k, _BLOCK_SCALED_ROWS[dtype])) / 1e12
        elif row["kind"] == "attention":
            kernel = _KERNEL_NAMES.get(c.get("kernel", "").lower())
            what = f"{kernel or c.get('kernel')} attention, head dim {c.get('head_dim', '?')}, {c.get('seqlen', '?')} tokens, causal {c.get('causal', '?')}"
            if c.get("dtype") != "fp8" and (kernel in dict(gpu.attention_flops) or (kernel, gpu.arch) in ATTENTION_EFFICIENCY):
                model = attention_rate(gpu, kernel, c.get("seqlen"), c.get("head_dim")) / 1e12  # at the row's length and head size
        elif row["kind"] == "hbm":
            model = gpu.hbm_bytes_per_s * gpu.hbm_efficiency / 1e12
        else:
            continue
        out.append({"gpu": key, "row": row["id"], "what": what, "unit": row["unit"], "measured": row["value"], "model": model})
    return out


def unconfirmed_constants() -> list[tuple[str, str]]:
    """(which, what is assumed) for every catalog value no measurement or datasheet backs: each
    GPU's `unconfirmed` notes, and every link, host or other sourced catalog entry (and power-curve
    point) whose name or source says "unconfirmed" or "assumed"."""
    out = [(f"gpu {key} {note.split(': ', 1)[0]}", note.split(": ", 1)[1]) for key, gpu in GPUS.items() for note in gpu.unconfirmed]
    marker = re.compile(r"unconfirmed|assum", re.IGNORECASE)
    for table_name, table in vars(hardware).items():
        if table_name == "GPUS" or not isinstance(table, dict) or not table:
            continue
        for key, item in table.items():
            if hasattr(item, "source") and hasattr(item, "name") and marker.search(f"{item.name} {item.source}"):
                said = [part.strip() for part in re.split(r"(?<=[.;])\s+", f"{item.name}. {item.source}") if marker.search(part)]
                out.append((f"{table_name.lower().rstrip('s')} {key}", " ".join(said)))
    for curve, points in POWER_CURVES.items():
        out += [(f"power_curve {curve} {point.watts:g} W", point.source) for point in points if marker.search(point.source)]
    out += [(f"stack {name} {note.split(': ', 1)[0]}", note.split(": ", 1)[1]) for name, era in ERAS.items() for note in era.unconfirmed]
    return sorted(out)


def print_gpu_rows() -> None:
    checks = gpu_row_checks()
    if not checks:
        print(f"\nGPU constants against their rows: {KERNEL_ROWS} is not here (tests/data of the repository)")
        return
    print(f"\nGPU constants against their rows (tests/data/{KERNEL_ROWS}; TFLOP/s, TB/s, GB, W):")
    notes = dict(unconfirmed_constants())
    for key in (key for key in GPUS if any(c["gpu"] == key for c in checks)):
        gpu = GPUS[key]
        print(f"  {gpu.name} ({key}):")
        for c in (c for c in checks if c["gpu"] == key):
            model = "  (not modelled)" if c["model"] is None else f"{c['model']:10.1f} {c['model'] / c['measured'] - 1:+7.1%}"
            print(f"    {c['row']:44s} {c['measured']:10.1f} {c['unit']:7s} engine {model}  {c['what']}")
        for note in gpu.unconfirmed:
            print(f"    unconfirmed {note.split(': ', 1)[0]}: {notes[f'gpu {key} ' + note.split(': ', 1)[0]]}")


def collective_row_checks(rows=None) -> list[dict]:
    """The nccl-tests / rccl-tests all-reduce rows of kernel_benchmarks_v4.json the domains and the
    mesh rest on, each beside the model's bus bandwidth (labs.core.engine.topology.bus_bandwidth):
    the 4 GPUs of a GB200 tray (ring), one NVL72 rack (72 GPUs, one NVLink domain), NVLink
    partitions across InfiniBand, and 8 x MI300X on their xGMI mesh (RCCL)."""
    from labs.core.engine.topology import bus_bandwidth

    out = []
    for r in kernel_rows() if rows is None else rows:
        c = r.get("conditions", {})
        if r["kind"] not in ("nccl", "rccl") or c.get("collective") != "all_reduce" or "bytes" not in c:
            continue
        n, algorithm = c["ranks"], {"ring": "ring", "tree": "tree"}.get(c.get("algorithm"), "auto")
        if r["kind"] == "rccl":
            cluster, where = Cluster.get("mi300x"), "mi300x, 8 GPUs of one xGMI mesh"
        elif "gpus_per_partition" in c:
            g = c["gpus_per_partition"]
            cluster, where = Cluster.get("gb200-nvl72", nodes=c["nvlink_partitions"] * g // 4, gpus_per_domain=g), f"{c['nvlink_partitions']} NVLink domains of {g}, IB"
        elif r["hardware"] == "GB200" and n == 4:
            cluster, where = Cluster.get("gb200-nvl72"), "one GB200 tray (4 GPUs)"
        elif r["hardware"] == "GB200 NVL72" and "nvlink_domains" in c:
            cluster, where = Cluster.get("gb200-nvl72", domains=c["nvlink_domains"]), f"{c['nvlink_domains']} NVL72 rack(s)"
        else:
            continue
        model = bus_bandwidth("all_reduce", c["bytes"], cluster, n, 1, algorithm) / 1e9
        out.append({"row": r["id"], "where": where, "bytes": c["bytes"], "measured": r["value"], "model": model,
                    "error": model / r["value"] - 1})
    return out


def print_collective_rows() -> None:
    rows = collective_row_checks()
    print("\nDomains and the mesh: all-reduce bus bandwidth, measured (nccl-tests / rccl-tests rows of "
          f"tests/data/{KERNEL_ROWS}) and the model's (GB/s):")
    for k in sorted(hardware.CLUSTERS):
        c = hardware.CLUSTERS[k]
        print(f"  {k:18s} host {c.gpus_per_node} GPUs, domain {c.domain_gpus} on {c.intra.name}"
              f"{f' (a mesh of {c.intra.mesh_peers} links per GPU)' if c.intra.mesh_peers else ''}, {c.rails} NICs per host of {c.inter.name}")
    for r in rows:
        print(f"  {r['row']:48s} {r['where']:34s} {r['bytes'] / 2**20:9,.0f} MiB {r['measured']:7.1f} model {r['model']:7.1f} {r['error']:+7.1%}")
    if not rows:
        print(f"  {KERNEL_ROWS} is not here (tests/data of the repository)")


def _fsdp_hooks(stack) -> str:
    """The host time of FSDP's hooks per unshard + reshard of a unit, where the stack runs any."""
    if not (stack.fsdp_s_per_unshard or stack.fsdp_s_per_param):
        return ""
    return f", FSDP hooks {stack.fsdp_s_per_unshard * 1e6:.0f} us a unit + {stack.fsdp_s_per_param * 1e6:.1f} us a parameter per unshard"


def main() -> None:
    table = calibration_table()
    print(f"{'row':40s} {'paper':>7s} {'engine':>7s} {'error':>7s} {'era best':>9s} {'same rc':>8s}  best plan in the era")
    for era in ERAS:
        rows = [r for r in table if r["era"] == era]
        stack = ERAS[era]
        print(f"\n== {era}: attention {stack.attention_kernel}, element-wise {'fused' if stack.fused_elementwise else 'eager'}, "
              f"{stack.kernels_per_layer} kernels a layer, TP overlap {stack.tp_overlap_kind}, ZeRO-3 by {stack.zero3_unit}, p2p {stack.pp_p2p}"
              f"{_fsdp_hooks(stack)}")
        if not rows:
            print("   no row of this stack in the reference file")
        for r in rows:
            flag = f"  (beyond the engine, gap {r['error']:+.1%}: {BEYOND_ENGINE[r['id']]})" if r["id"] in BEYOND_ENGINE else ""
            print(f"{r['id']:40s} {r['published']:7.1f} {r['engine']:7.1f} {r['error']:+7.1%} {r['era_best']:9.1f} {r['same_recompute']:8.1f}  {describe(r['best'])}{flag}")
    print(
        "\nTFLOP/s per GPU in each row's own convention (hardware FLOPs with full recompute for Narayanan 2021, model FLOPs"
        "\nfor Korthikanti 2022). 'era best' is the same work done at the step time of the best plan the era allowed;\n"
        "'same rc' the best plan that keeps the published run's recomputation.\n"
    )
    print("Published layouts, memory on the busiest GPU:")
    for row in layout_rows():
        est = layout_estimate(row)
        print(f"  {row['id']:28s} {est.memory.total / 1e9:6.1f} GB of {est.cluster.gpu.hbm_bytes / 1e9:.1f}, margin {est.hbm_margin_bytes / 1e9:+6.1f} GB")
    ds = deepseek_v3_estimate()
    print(f"  {'deepseek_v3_2048_h800':28s} {ds.memory.total / 1e9:6.1f} GB of {ds.cluster.gpu.hbm_bytes / 1e9:.1f}, margin {ds.hbm_margin_bytes / 1e9:+6.1f} GB")
    dual = estimate(ds.model, ds.cluster, replace(ds.plan, schedule="dualpipe"))  # as it ran (DeepSeek-V3 Sec. 3.2.1)
    print(f"  {'deepseek_v3_2048_dualpipe':28s} {dual.memory.total / 1e9:6.1f} GB of {dual.cluster.gpu.hbm_bytes / 1e9:.1f}, margin {dual.hbm_margin_bytes / 1e9:+6.1f} GB")
    print("\nMechanism checks (engine v3):")
    for what, value in mechanism_checks():
        print(f"  {what}: {value}")
    print_gpu_rows()
    print_collective_rows()
    print("\nStack constants of 2025-26 (labs.core.engine.eras) against their rows:")
    for row in stack_constant_rows():
        print(f"  {row['constant']:46s} engine {row['engine']:9.4g}  row {row['row']:9.4g}  {row['error']:+6.1%}  {row['source']}")
    print("\nGPU power limits (labs.core.engine.hardware.POWER_CURVES): GPT-3 175B at TP 8 on one node, at each documented point:")
    for cluster_key in ("dgx-a100", "dgx-h100"):
        cluster, plan = Cluster.get(cluster_key), Plan(tp=8, pp=1, dp=1, micro_batch=1, global_batch=8)
        full = estimate(Model.get("gpt3-175b"), cluster, plan).time.total
        for point in POWER_CURVES[cluster.gpu.power_curve]:
            capped = estimate(Model.get("gpt3-175b"), cluster.with_power_limit(point.watts), plan).time.total
            print(f"  {cluster.gpu.name} at {point.watts:g} W: GEMM rate x{point.gemm_fraction:.3f}, step {capped:.2f} s (x{capped / full:.3f})")
    print()
    for key, cluster_key, nodes, batch, era in RECOMMEND:
        model, cluster = Model.get(key), Cluster.get(cluster_key, nodes=nodes)
        best = sweep(model, cluster, global_batch=batch, era=era).iloc[0]
        print(
            f"{model.name} on {cluster.gpus:,} {cluster.gpu.name} ({era}), batch {batch} x {model.seq_len}: {describe(best)}: "
            f"MFU {best.mfu:.1%}, bubble {best.bubble_fraction:.1%}, {best.memory_bytes / 1e9:.1f} GB/GPU"
        )


if __name__ == "__main__":
    main()

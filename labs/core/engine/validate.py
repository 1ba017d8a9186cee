"""`python -m labs.core.engine.validate`: the engine against every public run, era by era, then the
published layouts' memory margins, the mechanism checks of engine v3 and its own picks.

For each era (a software stack, labs.core.engine.eras) it prints the reference file's rows that ran on
it (hardware FLOPs for Narayanan et al. 2021, model FLOPs for Korthikanti et al. 2022), the
engine at the published settings and the best plan the sweep finds within the era: the best
should sit at or somewhat above the published figure (far above would mean the engine believes
in free lunches). An era with no row in the reference file says so. Then the layouts NVIDIA,
Meta and DeepSeek published, each with its margin in HBM; then the mechanisms issue #24 names,
each with the number that shows it; then the plans the engine recommends for three modern jobs.
"""

from __future__ import annotations

from dataclasses import replace

from labs.core.engine.calibration import (
    BEYOND_ENGINE, TABLE2_GPUS, deepseek_v3_estimate, layout_estimate, layout_rows, public_runs,
    table2_estimate, table2_plan,
)
from labs.core.engine.eras import ERAS
from labs.core.engine.gemm import ATTENTION_EFFICIENCY, unfused_elementwise_ratio
from labs.core.engine.hardware import POWER_CURVES, Cluster
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

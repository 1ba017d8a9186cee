"""Lab 09, the 64-GPU design worksheet: its two stakeholder jobs, the prediction "64 GPUs, so
DP = 64?" judged by the engine, the worksheet's plan, the checks of the spoken design against
the engine's communication map, and the outcome function `python -m labs.grade` recomputes.

Both jobs run on 8 nodes of 8 GPUs with today's software (Megatron-Core with Transformer Engine,
plus FSDP for ZeRO-3): flash attention, selective recompute, sequence parallelism with TP
communication overlap wherever TP > 1, fp32 gradient reduction overlapped with the backward,
1F1B. The global batch is Llama 2's: 4M tokens, 1,024 sequences of 4,096 (Touvron et al. 2023).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable

from labs.core.engine.hardware import Cluster
from labs.core.engine.layout import RANK_ORDERS, axis_strides
from labs.core.engine.models import Model
from labs.core.engine.perf import COLLECTIVE_KINDS, Estimate, Plan, estimate
from labs.core.scenarios.common import Option
from labs.core.engine.search import sweep
from labs.core.engine.topology import members_per_node
from labs.core.variants import Choice, LabVariants, judged

LAB = "09_64gpu_design"
NODES = 8
GLOBAL_BATCH = 1024
TP_CHOICES = (1, 2, 4, 8)
PP_CHOICES = (1, 2, 4, 8)
MICRO_BATCHES = (1, 2, 4)
# A spoken bottleneck time counts as right within this factor of the engine's (it is read off a
# table rounded to a tenth of a millisecond or to whole milliseconds).
TIME_TOLERANCE = 0.10
SMALL_BATCH = 128  # the PP misconception at a batch an eighth of the stakeholder's


@dataclass(frozen=True)
class Job:
    key: str
    model: str
    cluster: str
    sender: str
    ask: str

    def inputs(self) -> tuple[Model, Cluster]:
        return Model.get(self.model), Cluster.get(self.cluster, nodes=NODES)


JOBS = {
    "13b-a100": Job("13b-a100", "llama2-13b", "dgx-a100", "Research lead, continued pre-training",
                    "We have the 64 A100s for a month. 64 GPUs, so we run 64 data-parallel replicas, right?"),
    "70b-h100": Job("70b-h100", "llama2-70b", "dgx-h100", "Head of pre-training",
                    "The 70B run gets 8 DGX H100 nodes. Same recipe as the 13B: DP = 64?"),
}
JOB_LABELS = {"13b-a100": "Llama 2 13B on 8 DGX A100", "70b-h100": "Llama 2 70B on 8 DGX H100"}


def job(key: str) -> Job:
    if key not in JOBS:
        raise ValueError(f"scenario must be one of {sorted(JOBS)}, got {key!r}")
    return JOBS[key]


def worksheet_plan(tp: int, pp: int, zero_stage: int, micro_batch: int = 1, rank_order: str = RANK_ORDERS[0]) -> Plan:
    """The lab's software around a worksheet's degrees; DP takes the rest of the 64 GPUs."""
    gpus = NODES * 8
    if gpus % (tp * pp):
        raise ValueError(f"tp x pp must divide the {gpus} GPUs, got {tp} x {pp}")
    return Plan(
        tp=tp, pp=pp, dp=gpus // (tp * pp), micro_batch=micro_batch, global_batch=GLOBAL_BATCH, zero_stage=zero_stage,
        recompute="selective", sequence_parallel=tp > 1, tp_comm_overlap=tp > 1, flash_attention=True,
        grad_reduce_dtype="fp32", schedule="1f1b", rank_order=rank_order,
    )


@lru_cache(maxsize=512)  # pure in its arguments: a class's ledgers (and a lab's re-runs) repeat them
def worksheet_estimate(scenario: str, tp: int, pp: int, zero_stage: int, micro_batch: int = 1, rank_order: str = RANK_ORDERS[0]) -> Estimate:
    model, cluster = job(scenario).inputs()
    return estimate(model, cluster, worksheet_plan(tp, pp, zero_stage, micro_batch, rank_order))


# ---- the prediction: 64 GPUs, so DP = 64? --------------------------------------------------
DP64_OPTIONS = (
    Option("A", "Both jobs: 64 replicas of the model, plain data parallelism, no sharding", "a replica per GPU always fits"),
    Option("B", "Both jobs, once ZeRO-3/FSDP shards the model state over all 64 GPUs", "sharding alone fits any model"),
    Option("C", "The 13B only, with ZeRO-3/FSDP; the 70B does not fit even when sharded", "activations are small next to the model state"),
    Option("D", "Neither job: at this micro-batch no DP = 64 layout fits, sharded or not", "sharding cannot beat the model's size"),
)
# The layouts the reveal prices for each job: DP = 64 plain and sharded, and two model-parallel ones.
REFERENCE_LAYOUTS = {
    "DP=64, ZeRO-0": dict(tp=1, pp=1, zero_stage=0),
    "DP=64, ZeRO-3": dict(tp=1, pp=1, zero_stage=3),
    "TP=8 x DP=8, ZeRO-1": dict(tp=8, pp=1, zero_stage=1),
    "TP=4 x PP=4 x DP=4, ZeRO-1": dict(tp=4, pp=4, zero_stage=1),
}


@lru_cache(maxsize=None)
def reference_estimates(micro_batch: int = 1) -> dict[str, dict[str, Estimate]]:
    """job -> layout name -> Estimate, for REFERENCE_LAYOUTS at this micro-batch."""
    return {key: {name: worksheet_estimate(key, **f, micro_batch=micro_batch) for name, f in REFERENCE_LAYOUTS.items()} for key in JOBS}


def dp64_facts(micro_batch: int = 1) -> dict:
    ests = reference_estimates(micro_batch)
    return {key: {"plain": e["DP=64, ZeRO-0"].fits, "sharded": e["DP=64, ZeRO-3"].fits} for key, e in ests.items()}


DP64_CLAIMS: dict[str, Callable[[dict], bool]] = {
    "A": lambda f: all(j["plain"] for j in f.values()),
    "B": lambda f: all(j["sharded"] for j in f.values()) and not all(j["plain"] for j in f.values()),
    "C": lambda f: f["13b-a100"]["sharded"] and not f["13b-a100"]["plain"] and not f["70b-h100"]["sharded"],
    "D": lambda f: not any(j["sharded"] or j["plain"] for j in f.values()),
}


def dp64_answer(micro_batch: int = 1) -> str | None:
    facts = dp64_facts(micro_batch)
    return next((k for k, claim in DP64_CLAIMS.items() if claim(facts)), None)


# ---- the communication map and the spoken design ----------------------------------------------
def map_rows(est: Estimate) -> list[dict]:
    """The communication map as display rows, straight from the Estimate's collectives."""
    dominant = est.dominant_collective
    rows = []
    for c in est.collectives:
        placement = f"inside 1 node ({c.group} GPUs)" if not c.crosses_nodes else f"{c.group} GPUs over {c.nodes} nodes, {c.members_per_node} per node"
        rows.append({
            "key": c.key, "collective": f"{c.axis} {c.op}", "how often": c.frequency, "calls / step": c.calls,
            "GB sent / GPU / step": c.sent_bytes / 1e9, "group": placement, "link": c.link,
            "wire ms": c.wire_s * 1e3, "exposed ms": c.exposed_s * 1e3, "exposed % of step": c.exposed_s / est.step_time_s,
            "dominant": c is dominant,
        })
    return rows


def map_markdown(est: Estimate, mark_dominant: bool) -> str:
    """The communication map as a markdown table and the note under it. The spoken check (section
    6) asks for the collective the step waits for longest, its link and its exposed time: before
    the worksheet is submitted the map lists every collective's numbers and marks none of them
    (the student reads the bottleneck off the map); after the submit (`mark_dominant`) a ★
    marks the dominant one and the note names it."""
    rows = map_rows(est)
    lines = [
        "| | collective | how often | calls / step | sent per GPU / step | group | link | wire time | exposed |",
        "|---|---|---|---:|---:|---|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {'★' if mark_dominant and r['dominant'] else ''} | {r['collective']} | {r['how often']} | {r['calls / step']:,.0f} | {r['GB sent / GPU / step']:,.2f} GB | "
            f"{r['group']} | {r['link']} | {r['wire ms']:,.1f} ms | {r['exposed ms']:,.1f} ms ({r['exposed % of step']:.2%} of the step) |"
        )
    dominant = next((r for r in rows if r["dominant"]), None)
    if dominant is None:
        note = "This design runs no collective: one GPU would do."
    elif mark_dominant:
        note = (f"★ marks the collective the step waits for longest: **{dominant['collective']}** on {dominant['link']}, "
                f"{dominant['exposed ms']:,.1f} ms exposed of {est.step_time_s * 1e3:,.0f} ms per step.")
    else:
        note = "Which collective does the step wait for longest, on which link, for how long? Section 6 asks; the map marks it after you submit."
    return "\n".join(lines) + "\n\n" + note + " *Wire time* is the time the collective occupies its link in one step; *exposed* is what overlap with compute leaves on the critical path."


BOTTLENECK_CHOICES = {f"{axis}: {what}": key for key, (axis, _, what) in COLLECTIVE_KINDS.items() if key != "dp_mirror"}  # no DualPipe here
LINK_CHOICES = {"inside a node (NVLink)": "intra", "across nodes (InfiniBand)": "inter"}


def said_out_loud(est: Estimate, bottleneck: str | None, link: str | None, time_ms: float | None) -> dict:
    """The structured part of the spoken design against the engine's map."""
    d = est.dominant_collective
    if d is None:
        return {"dominant": None, "dominant_link": None, "dominant_exposed_s": 0.0, "bottleneck_correct": bottleneck is None, "link_correct": link is None, "time_correct": not time_ms}
    engine_link = "inter" if d.crosses_nodes else "intra"
    exposed_ms = d.exposed_s * 1e3
    return {
        "dominant": d.key,
        "dominant_link": engine_link,
        "dominant_exposed_s": d.exposed_s,
        "bottleneck_correct": bottleneck == d.key,
        "link_correct": link == engine_link,
        "time_correct": time_ms is not None and abs(time_ms - exposed_ms) <= TIME_TOLERANCE * exposed_ms,
    }


def placements(est: Estimate) -> dict[str, str]:
    """Where each worksheet axis's groups sit under the plan's rank order: inside a node or
    across nodes (labs.core.engine.layout strides, labs.core.engine.topology members per node)."""
    p, cluster = est.plan, est.cluster
    strides = axis_strides(p.rank_order, p.tp, p.cp, p.dp, p.pp)
    out = {}
    for axis, n in (("tp", p.tp), ("pp", p.pp), ("dp", p.dp * p.cp)):
        stride = float(strides["cp" if axis == "dp" else axis])
        g = int(members_per_node(cluster, n, stride))
        if n == 1:
            out[axis] = "none (degree 1)"
        elif axis == "pp" and g < n:
            out[axis] = f"{g} stage{'s' if g > 1 else ''} per {'node' if cluster.domain_gpus == cluster.gpus_per_node else 'NVLink domain'}, {-(-n // g)} {'nodes' if cluster.domain_gpus == cluster.gpus_per_node else 'domains'} ({stride:g} ranks apart)"
        elif g >= n:
            out[axis] = (f"inside one node ({n} of its {cluster.gpus_per_node} GPUs, {stride:g} apart)" if cluster.domain_gpus == cluster.gpus_per_node
                         else f"inside one NVLink domain ({n} of its {cluster.domain_gpus} GPUs, {stride:g} apart)")
        else:
            out[axis] = (f"across {-(-n // g)} nodes, {g} per node ({stride:g} ranks apart)" if cluster.domain_gpus == cluster.gpus_per_node
                         else f"across {-(-n // g)} NVLink domains, {g} per domain ({stride:g} ranks apart)")
    shard = p.shard_group_size or p.dp * p.cp
    out["zero"] = "none: every DP rank keeps the whole state" if p.zero_stage == 0 else f"ZeRO-{p.zero_stage} over the DP group ({shard} ranks): {out['dp']}"
    return out


# ---- misconceptions -----------------------------------------------------------------------------
@lru_cache(maxsize=None)
def pp_costs(scenario: str, global_batch: int = GLOBAL_BATCH) -> list[dict]:
    """TP = 8 inside each node and PP = 1, 2, 4, 8 across nodes (DP the rest), at this batch:
    the bubble and the send/recv each pipeline depth brings."""
    model, cluster = job(scenario).inputs()
    rows = []
    for pp in PP_CHOICES:
        plan = worksheet_plan(8, pp, 1)
        plan = Plan(**{**plan.as_dict(), "global_batch": global_batch})
        e = estimate(model, cluster, plan)
        pp_row = next((c for c in e.collectives if c.key == "pp"), None)
        rows.append({
            "pp": pp, "dp": plan.dp, "microbatches": plan.microbatches, "bubble_fraction": e.bubble_fraction, "bubble_s": e.time.bubble,
            "pp_wire_s": pp_row.wire_s if pp_row else 0.0, "pp_exposed_s": pp_row.exposed_s if pp_row else 0.0,
            "pp_link": pp_row.link if pp_row else "-", "mfu": e.mfu, "fits": e.fits, "memory_bytes": e.memory.total, "step_time_s": e.step_time_s,
        })
    return rows


def best_plans(scenario: str):
    """Every plan of the lab's software for the job, best first (labs.core.engine.search.sweep)."""
    model, cluster = job(scenario).inputs()
    return sweep(model, cluster, global_batch=GLOBAL_BATCH, cp=1, schedule=["1f1b"], recompute=["selective"], micro_batch=list(MICRO_BATCHES),
                 tp=[t for t in TP_CHOICES if model.heads % t == 0], pp=list(PP_CHOICES), tp_comm_overlap=True, grad_reduce_dtype="fp32")


@lru_cache(maxsize=None)
def recipe(scenario: str) -> dict:
    """The three-step recipe applied to the job: fit memory, reach the global batch, maximise throughput."""
    plans = best_plans(scenario)
    fitting = plans[plans["fits"]]
    best = fitting.iloc[0]
    smallest = int((fitting["tp"] * fitting["pp"]).min())
    return {
        "frame": plans, "plans": len(plans), "fitting": len(fitting), "smallest_model_parallel": smallest,
        "best": best, "best_m": int(GLOBAL_BATCH // (best["micro_batch"] * best["dp"])),
    }


# ---- the ledger step ---------------------------------------------------------------------------
REASONS = ("reason_tp", "reason_pp", "reason_dp", "reason_zero")
REASON_CHARS = 100
PARAGRAPH_CHARS = 2000


def inputs_estimate(inputs: dict) -> Estimate:
    """The worksheet's design as a ledger step's inputs record it."""
    return worksheet_estimate(inputs["scenario"], int(inputs["tp"]), int(inputs["pp"]), int(inputs["zero_stage"]), int(inputs.get("micro_batch", 1)),
                              inputs.get("rank_order", RANK_ORDERS[0]))


def worksheet_outcomes(inputs: dict, predictions: dict, variant=None) -> dict:
    """What the lab shows for a worksheet and the grader recomputes: the plan's fit and MFU, the
    engine's dominant collective with its link and exposed time, the spoken claims against them,
    and the committed prediction against the engine's answer."""
    est = inputs_estimate(inputs)
    time_ms = inputs.get("bottleneck_time_ms")
    spoken = said_out_loud(est, inputs.get("bottleneck"), inputs.get("bottleneck_link"), None if time_ms is None else float(time_ms))
    # the student's own key from the second edition on (first-edition ledgers recorded the default one)
    correct = variant.questions["dp64"].key if variant is not None and variant.version >= 2 else dp64_answer()
    return {
        "fits": est.fits,
        "mfu": est.mfu,
        "step_time_s": est.step_time_s,
        "memory_gb": est.memory.total / 1e9,
        **spoken,
        "correct_option": correct,
        "prediction_correct": judged(variant, "dp64", predictions, lambda a: correct is not None and a == correct),
        # from the third edition on (review X8): "PP across nodes is free", judged at the student's variant
        **({"pp_free_correct": judged(variant, "pp_free", predictions, lambda a: False)}
           if variant is not None and "pp_free" in variant.questions and "pp_free" in predictions else {}),
    }


OUTCOMES: dict[tuple[str, str], Callable[[dict, dict], dict]] = {
    (LAB, "worksheet"): worksheet_outcomes,
}


# ---- per-student variants (labs.variants) ------------------------------------------------------
# The micro-batch the DP = 64 question asks about: at 1 and 2 the 13B fits sharded (38 and 70 of
# 86 GB today) and the 70B does not; at 4 neither does. The key moves with it.
VARIANT_MICRO_BATCH = (1, 2, 4)


def draw_settings_v1(d) -> dict:
    return {"micro_batch": d.choice("micro_batch", VARIANT_MICRO_BATCH)}


def build_questions_v1(s: dict) -> dict:
    mb = int(s["micro_batch"])
    return {
        "dp64": Choice(
            f"64 GPUs, so DP = 64? With this worksheet's software (selective recompute: every layer's activations are kept for the "
            f"backward, none recomputed in full) and micro-batch {mb}, for which job is DP = 64 a design that fits in memory?",
            DP64_OPTIONS, dp64_answer(mb),
        ),
    }


# ---- variants, second edition: the recompute setting varies too ----------------------------------------
# The first edition drew only the micro-batch. Now half the students ask under full activation
# recompute, where FSDP alone fits both jobs (the 70B at 33-57 of 86 GB, micro-batch 1-4): the key
# is B there, C or D under selective recompute (the worksheet's own software).
VARIANT_RECOMPUTE = ("selective", "full")
RECOMPUTE_WORDS = {
    "selective": "this worksheet's software (selective recompute: every layer's activations are kept for the backward, none recomputed in full)",
    "full": "full activation recompute (each layer keeps only its input and recomputes the rest in the backward; the worksheet itself runs selective)",
}


@lru_cache(maxsize=None)
def reference_estimates_at(micro_batch: int, recompute: str) -> dict[str, dict[str, Estimate]]:
    """reference_estimates under another recompute setting (selective is the worksheet's own)."""
    if recompute == "selective":
        return reference_estimates(micro_batch)
    out = {}
    for key in JOBS:
        model, cluster = job(key).inputs()
        out[key] = {name: estimate(model, cluster, replace(worksheet_plan(f["tp"], f["pp"], f["zero_stage"], micro_batch), recompute=recompute))
                    for name, f in REFERENCE_LAYOUTS.items()}
    return out


def dp64_facts_at(micro_batch: int, recompute: str) -> dict:
    ests = reference_estimates_at(micro_batch, recompute)
    return {key: {"plain": e["DP=64, ZeRO-0"].fits, "sharded": e["DP=64, ZeRO-3"].fits} for key, e in ests.items()}


def dp64_answer_at(micro_batch: int, recompute: str) -> str | None:
    facts = dp64_facts_at(micro_batch, recompute)
    held = [k for k, claim in DP64_CLAIMS.items() if claim(facts)]
    return held[0] if len(held) == 1 else None


def dp64_explanations_at(micro_batch: int, recompute: str) -> dict[str, str]:
    """The reveal's line per option at the variant's micro-batch and recompute setting."""
    ests = reference_estimates_at(micro_batch, recompute)
    e13, e70 = ests["13b-a100"], ests["70b-h100"]
    z3_13, z3_70, plain13, plain70 = e13["DP=64, ZeRO-3"], e70["DP=64, ZeRO-3"], e13["DP=64, ZeRO-0"], e70["DP=64, ZeRO-0"]
    hbm = plain13.cluster.gpu.hbm_bytes / 1e9  # the 13B's A100s
    hbm70 = plain70.cluster.gpu.hbm_bytes / 1e9  # the 70B's H100s (P2, review 38bda0b: each job's own HBM)
    full = reference_estimates_at(micro_batch, "full")["70b-h100"]["DP=64, ZeRO-3"]
    sel70 = reference_estimates(micro_batch)["70b-h100"]["DP=64, ZeRO-3"]

    def gb(e: Estimate) -> str:
        return f"{e.memory.total / 1e9:,.0f} GB"

    a = (f"plain data parallelism keeps the whole model state on every GPU, {plain13.memory.model_state / plain13.model.params:.0f} bytes per parameter "
         f"(bf16 weights, fp32 gradients, fp32 Adam state): {gb(plain13)} per GPU with activations for the 13B and {gb(plain70)} for the 70B, "
         f"against {hbm:.1f} GB of HBM on the 13B's {plain13.cluster.gpu.name} and {hbm70:.1f} GB on the 70B's {plain70.cluster.gpu.name}.")
    if z3_70.fits and z3_13.fits:
        b = (f"ZeRO-3 divides the model state by 64, and with {recompute} recompute each layer keeps little for the backward: the 13B needs "
             f"{gb(z3_13)} per GPU of {hbm:.1f} GB and the 70B {gb(z3_70)} of {hbm70:.1f} GB. The price is the forward run twice: the 70B reaches "
             f"{z3_70.mfu:.1%} MFU ({z3_70.hfu:.1%} HFU), against the {sel70.mfu:.1%} a selective step would reach if it fitted.")
        c = (f"with {recompute} recompute the 70B fits sharded as well: {gb(z3_70)} per GPU, {z3_70.memory.activations / 1e9:,.0f} GB of it "
             "activations; TP and PP are one way to fit it, not the only one.")
    else:
        note = (f" With full recomputation, which this question does not use, FSDP alone would fit it: {gb(full)} per GPU at {full.mfu:.1%} MFU "
                f"({full.hfu:.1%} HFU: the gap is the forward passes run twice), against the {z3_70.mfu:.1%} a selective step would reach "
                "if it fitted.") if full.fits else ""
        b = (f"ZeRO-3 divides the model state by 64 but not the activations: the 70B still needs {gb(z3_70)} per GPU, "
             f"{z3_70.memory.activations / 1e9:,.0f} GB of it activations of {z3_70.model.layers} layers, which no ZeRO stage shards." + note)
        split = [(name.split(", ")[0], e70[name]) for name in ("TP=4 x PP=4 x DP=4, ZeRO-1", "TP=8 x DP=8, ZeRO-1")]
        fitting = [(name, e) for name, e in split if e.fits]
        seventy = (f"The 70B fits once TP and PP split its layers: {fitting[0][0]} needs {gb(fitting[0][1])} and reaches {fitting[0][1].mfu:.1%}"
                   if fitting else
                   f"The 70B needs more than these splits at micro-batch {micro_batch}: {split[0][0]} still needs {gb(split[0][1])}")
        c = ((f"the 13B at DP = 64 with ZeRO-3 needs {gb(z3_13)} per GPU and reaches {z3_13.mfu:.1%} MFU "
              f"(TP = 8 x DP = 8: {e13['TP=8 x DP=8, ZeRO-1'].mfu:.1%}). " + seventy
              + (f"; full recomputation fits it too, at {full.mfu:.1%} (Lab 06)." if full.fits else "."))
             if z3_13.fits else
             (f"at micro-batch {micro_batch} the 13B needs {gb(z3_13)} per GPU even sharded over 64: {z3_13.memory.activations / 1e9:,.0f} GB of it "
              "activations, which ZeRO does not shard."))
    d = ((f"at micro-batch {micro_batch} the activations alone are {z3_13.memory.activations / 1e9:,.0f} GB per GPU for the 13B and "
          f"{z3_70.memory.activations / 1e9:,.0f} GB for the 70B, and no ZeRO stage shards them: a smaller micro-batch (more "
          "accumulation), recomputation or model parallelism is what fits.")
         if not z3_13.fits else
         (f"sharded over 64 GPUs the 13B's state is {z3_13.memory.model_state / 1e9:,.1f} GB per GPU: with its activations at micro-batch "
          f"{micro_batch}, {gb(z3_13)}, inside the {hbm:.1f} GB."))
    return {"A": a, "B": b, "C": c, "D": d}


def draw_settings(d) -> dict:
    return {"micro_batch": d.choice("micro_batch", VARIANT_MICRO_BATCH), "recompute": d.choice("recompute", VARIANT_RECOMPUTE)}


def build_questions(s: dict) -> dict:
    mb, recompute = int(s["micro_batch"]), s["recompute"]
    return {
        "dp64": Choice(
            f"64 GPUs, so DP = 64? With {RECOMPUTE_WORDS[recompute]} and micro-batch {mb}, for which job is DP = 64 a design that fits in memory?",
            DP64_OPTIONS, dp64_answer_at(mb, recompute), dp64_explanations_at(mb, recompute),
        ),
    }


# ---- variants, third edition: seed 000's "PP across nodes is free" as a committed prediction (review X8) ------
# The 70B with TP 8 inside each node and PP stages across the nodes: the point-to-point sends are a
# few MB per micro-batch and hide behind compute (0.1% of the step or less), unlike TP across nodes;
# the bubble, (p-1)/(m+p-1), is what a pipeline costs, and m is the batch over DP. At 1,024
# sequences (Llama 2's batch) it is under 1%: nearly free. At 64 it is 6-10%.
PP_FREE_JOB = "70b-h100"
PP_FREE_BATCHES = (64, 1024)
PP_FREE_DEPTHS = (2, 4, 8)
PP_FREE_NEARLY = 0.01  # under this share of the step, bubble and exposed sends together: "nearly free"
PP_FREE_COSTLY = 0.03  # the bubble at least this share: what the pipeline costs
PP_FREE_OPTIONS = (
    Option("free", "Next to nothing: bubble and sends together stay under 1% of the step", "a pipeline always costs a lot"),
    Option("bubble", "The bubble: stages idle while the pipeline fills and drains, several percent", "PP across nodes is free"),
    Option("sends", "The sends: each micro-batch's activations cross InfiniBand between stages", "point-to-point sends are as costly as TP's"),
    Option("tp_like", "As much as TP across nodes: every layer's activations leave the node", "PP talks every layer, as TP does"),
)


def pp_free_facts(batch: int, pp: int) -> dict:
    """The engine's pipeline at (batch, pp): the bubble's and the exposed sends' shares of the step,
    the bytes on the wire, and what TP across nodes would expose on the same job (TP 16, PP 1)."""
    row = next(r for r in pp_costs(PP_FREE_JOB, batch) if r["pp"] == pp)
    step = row["step_time_s"]
    tp16 = tp_across_nodes(batch)
    return {"tp16_s": tp16.time.tp_comm, "tp16_share": tp16.time.tp_comm / tp16.step_time_s,"bubble": row["bubble_fraction"], "bubble_s": row["bubble_s"], "sends": row["pp_exposed_s"] / step, "sends_s": row["pp_exposed_s"],
            "wire_s": row["pp_wire_s"], "step_s": step, "microbatches": row["microbatches"], "dp": row["dp"]}


@lru_cache(maxsize=None)
def tp_across_nodes(batch: int) -> Estimate:
    """The same job with its model split across nodes by TP instead: TP 16 over two nodes, PP 1."""
    model, cluster = job(PP_FREE_JOB).inputs()
    return estimate(model, cluster, replace(worksheet_plan(16, 1, 1), global_batch=batch))


PP_FREE_CLAIMS = {
    "free": lambda f: f["bubble"] + f["sends"] < PP_FREE_NEARLY,
    "bubble": lambda f: f["bubble"] >= PP_FREE_COSTLY and f["bubble_s"] > 10 * f["sends_s"],
    "sends": lambda f: f["sends"] >= PP_FREE_COSTLY and f["sends_s"] > f["bubble_s"],
    "tp_like": lambda f: f["sends"] >= 0.2,
}


def pp_free_answer(batch: int, pp: int) -> str | None:
    f = pp_free_facts(batch, pp)
    held = [k for k, claim in PP_FREE_CLAIMS.items() if claim(f)]
    return held[0] if len(held) == 1 else None


def pp_free_explanations(batch: int, pp: int) -> dict[str, str]:
    f = pp_free_facts(batch, pp)
    measured = (f"at {batch:,} sequences PP {pp} runs {f['microbatches']:,} micro-batches per pipeline (DP {f['dp']}): the bubble, "
                f"(p-1)/(m+p-1), is {f['bubble']:.1%} of the step ({f['bubble_s'] * 1e3:,.0f} ms), the sends expose "
                f"{f['sends_s'] * 1e3:,.1f} ms ({100 * f['sends']:.2g}% of the step)")
    return {
        "free": measured + (": nearly free at this batch." if f["bubble"] + f["sends"] < PP_FREE_NEARLY else ": not free."),
        "bubble": measured + (": the bubble is the cost." if f["bubble"] >= PP_FREE_COSTLY else ": too many micro-batches for the bubble to matter."),
        "sends": measured + f"; the sends take {f['wire_s'] * 1e3:,.0f} ms on the wire in all and hide behind compute.",
        "tp_like": measured + f"; stages send only at their boundaries, once per micro-batch each way, while TP 16 across two nodes "
                   f"would expose {f['tp16_s']:,.1f} s of TP communication ({f['tp16_share']:.0%} of its step), every layer.",
    }


def draw_settings_v3(d) -> dict:
    return {**draw_settings(d), "pp_batch": d.choice("pp_batch", PP_FREE_BATCHES), "pp_depth": d.choice("pp_depth", PP_FREE_DEPTHS)}


def pp_free_question(batch: int, pp: int) -> Choice:
    return Choice(
        f"Seed 000: 'PP across nodes is free.' The 70B on 8 DGX H100 nodes, TP 8 inside each node, PP {pp} across the nodes "
        f"(DP {64 // (8 * pp)}), micro-batch 1, a global batch of {batch:,} sequences: what does the pipeline cost the step?",
        PP_FREE_OPTIONS, pp_free_answer(batch, pp), pp_free_explanations(batch, pp),
    )


def build_questions_v3(s: dict) -> dict:
    return {**build_questions(s), "pp_free": pp_free_question(int(s["pp_batch"]), int(s["pp_depth"]))}


# ---- variants, fourth edition: the dp64 keys in thirds (issue 38 item 2) --------------------------------------
# Editions 2-3 drew the recompute setting and the micro-batch independently: "both, sharded" (full
# recompute) was right for half the class. Now the case is drawn first, a third each: full recompute
# at micro-batch 1, 2 or 4 (both jobs fit sharded), selective at 1 or 2 (the 13B only), selective at
# 4 (neither); the engine still decides the key at the drawn setting.
DP64_CASES = {"both_sharded": (("full", (1, 2, 4)),), "13b_only": (("selective", (1, 2, 1)),), "neither": (("selective", (4, 4, 4)),)}  # 3 picks each


def draw_settings_v4(d) -> dict:
    ((recompute, micro_batches),) = DP64_CASES[d.choice("dp64_case", tuple(DP64_CASES))]
    return {**draw_settings_v3(d), "recompute": recompute, "micro_batch": d.choice("micro_batch", micro_batches)}


VARIANTS = LabVariants(LAB, draw_settings_v4, build_questions_v3, version=4,
                       older={1: (draw_settings_v1, build_questions_v1), 2: (draw_settings, build_questions), 3: (draw_settings_v3, build_questions_v3)})


# ---- variants, fifth edition: the pp_free keys in quarters (issue 38 item 2) -----------------------------------
# Edition 3's two keys ("next to nothing" at 1,024 sequences, "the bubble" at 64) were each right for
# half the class, and the two mechanisms that never win (the sends, TP-like traffic) were distractors
# a blind rule could skip. The options now say how much of the step the pipeline costs, in four bands,
# and the batch is drawn from four, a quarter each: the bubble, (p-1)/(m+p-1) with m = batch / DP, is
# 0.4-0.7% at 1,024 sequences, 1.5-2.7% at 256, 5.9-9.9% at 64 and 20-30% at 16 for PP 2-8 (the
# exposed sends add at most 0.5%), so each band is the key at one batch whatever the depth. The
# engine decides at the drawn setting, and refuses a key (None) within PP_FREE_MARGIN of a band's edge.
PP_FREE_BATCHES_V5 = (16, 64, 256, 1024)
PP_FREE_BANDS = {"free": (0.0, 0.01), "few": (0.01, 0.04), "tenth": (0.04, 0.15), "large": (0.15, 1.0)}  # share of the step
PP_FREE_MARGIN = 0.15  # relative: a cost within 15% of a band's edge decides no key
PP_FREE_OPTIONS_V5 = (
    Option("free", "Under 1% of the step: fill, drain and sends all but vanish", "PP across nodes is free"),
    Option("few", "1% to 4% of the step: a short bubble, the sends hidden", "the bubble is small whatever the batch"),
    Option("tenth", "4% to 15% of the step: the stages idle a tenth or so", "a pipeline costs a tenth whatever the batch"),
    Option("large", "Over 15% of the step: stages wait a good part of it", "the sends cost as much as TP's, every layer"),
)


def pp_free_cost(batch: int, pp: int) -> float:
    """What the pipeline costs the step (engine): the bubble's share plus the exposed sends'."""
    f = pp_free_facts(batch, pp)
    return f["bubble"] + f["sends"]


def pp_free_answer_v5(batch: int, pp: int) -> str | None:
    cost = pp_free_cost(batch, pp)
    for key, (low, high) in PP_FREE_BANDS.items():
        if low <= cost < high:
            clear = (low == 0.0 or cost >= low * (1 + PP_FREE_MARGIN)) and (high == 1.0 or cost <= high * (1 - PP_FREE_MARGIN))
            return key if clear else None
    return None


def pp_free_explanations_v5(batch: int, pp: int) -> dict[str, str]:
    f = pp_free_facts(batch, pp)
    cost = f["bubble"] + f["sends"]
    measured = (f"at {batch:,} sequences PP {pp} runs {f['microbatches']:,} micro-batches per pipeline (DP {f['dp']}): the bubble, "
                f"(p-1)/(m+p-1), is {f['bubble']:.1%} of the step ({f['bubble_s'] * 1e3:,.0f} ms), the sends expose "
                f"{f['sends_s'] * 1e3:,.1f} ms ({100 * f['sends']:.2g}% of the step), {cost:.1%} in all")
    answer = pp_free_answer_v5(batch, pp)
    why = {
        "free": "the micro-batches outnumber the stages so far that fill and drain vanish",
        "few": "the bubble is small but measurable, and the sends hide behind compute",
        "tenth": "too few micro-batches per pipeline: the fill and drain idle the stages",
        "large": f"so few micro-batches that the stages idle for much of the step; the sends are still small: TP 16 across two "
                 f"nodes would expose {f['tp16_s']:,.1f} s ({f['tp16_share']:.0%} of its step)",
    }
    return {k: measured + (f": {why[k]}." if k == answer else f", not {band_words(k)}.") for k in PP_FREE_BANDS}


def band_words(key: str) -> str:
    low, high = PP_FREE_BANDS[key]
    return f"under {high:.0%}" if low == 0.0 else f"over {low:.0%}" if high == 1.0 else f"{low:.0%} to {high:.0%}"


def draw_settings_v5(d) -> dict:
    return {**draw_settings_v4(d), "pp_batch": d.choice("pp_batch_v5", PP_FREE_BATCHES_V5)}


def pp_free_question_v5(batch: int, pp: int) -> Choice:
    old = pp_free_question(batch, pp)
    return Choice(old.prompt.replace("what does the pipeline cost the step?", "what share of the step does the pipeline cost?"),
                  PP_FREE_OPTIONS_V5, pp_free_answer_v5(batch, pp), pp_free_explanations_v5(batch, pp))


def build_questions_v5(s: dict) -> dict:
    return {**build_questions(s), "pp_free": pp_free_question_v5(int(s["pp_batch"]), int(s["pp_depth"]))}


# ---- variants, sixth edition: the dp64 keys in quarters (issue 38 item 2) -------------------------------------
# Edition 4's three keys in thirds left a blind rule at 37% over four options: option A, 64 plain
# replicas, is right at no setting (the 13B's plain replica needs 240-364 GB per GPU, the 70B's over
# 1.2 TB, on 80 GB GPUs). Its place goes to a real fourth answer: whether the 13B fits with its
# weights still replicated (ZeRO-2: gradients and Adam state sharded, the bf16 weights whole on every
# GPU) or only once ZeRO-3 shards the weights too. The case is drawn first, a quarter each: full
# recompute at micro-batch 1, 2 or 4 (both jobs fit with ZeRO-3), selective at 1 (the 13B with
# ZeRO-2, 63 of 86 GB), selective at 2 (the 13B with ZeRO-3 only: 95 GB with ZeRO-2, 71 with ZeRO-3),
# selective at 4 (neither). Plain replicas stay priced in the reveal and the misconceptions table.
# The engine decides at the drawn setting; a layout within DP64_MARGIN of its GPU's HBM decides no key.
DP64_MARGIN = 0.05
DP64_OPTIONS_V6 = (
    DP64_OPTIONS[1],
    Option("C_zero2", "The 13B only, and ZeRO-2 already fits it: each GPU keeps the whole weights", "replicated weights cost little next to Adam"),
    Option("C_zero3", "The 13B only, and only with ZeRO-3: its weights must be sharded as well", "ZeRO-2 leaves too much on each GPU"),
    DP64_OPTIONS[3],
)
DP64_CASES_V6 = {"both_sharded": ("full", (1, 2, 4)), "13b_zero2": ("selective", (1, 1, 1)), "13b_zero3": ("selective", (2, 2, 2)),
                 "neither": ("selective", (4, 4, 4))}  # 3 picks each (a pick's number of values never depends on another)


@lru_cache(maxsize=None)
def dp64_estimate(scenario: str, zero_stage: int, micro_batch: int, recompute: str) -> Estimate:
    """DP = 64 for a job at a ZeRO stage, micro-batch and recompute setting."""
    model, cluster = job(scenario).inputs()
    return estimate(model, cluster, replace(worksheet_plan(1, 1, zero_stage, micro_batch), recompute=recompute))


def dp64_fit(scenario: str, zero_stage: int, micro_batch: int, recompute: str) -> bool | None:
    """Whether the layout fits, or None when its memory is within DP64_MARGIN of the HBM."""
    e = dp64_estimate(scenario, zero_stage, micro_batch, recompute)
    share = e.memory.total / e.cluster.gpu.hbm_bytes
    return None if abs(share - 1) < DP64_MARGIN else share < 1


def dp64_answer_v6(micro_batch: int, recompute: str) -> str | None:
    z2, z3, big = (dp64_fit("13b-a100", 2, micro_batch, recompute), dp64_fit("13b-a100", 3, micro_batch, recompute),
                   dp64_fit("70b-h100", 3, micro_batch, recompute))
    if None in (z2, z3, big) or dp64_estimate("13b-a100", 0, micro_batch, recompute).fits:
        return None
    if z3 and big:
        return "B"
    if big:
        return None  # the 70B fitting where the 13B does not: no option says so
    return "C_zero2" if z2 else "C_zero3" if z3 else "D"


def dp64_explanations_v6(micro_batch: int, recompute: str) -> dict[str, str]:
    old = dp64_explanations_at(micro_batch, recompute)
    z0, z2, z3 = (dp64_estimate("13b-a100", z, micro_batch, recompute) for z in (0, 2, 3))
    hbm = z2.cluster.gpu.hbm_bytes / 1e9
    weights = z2.model.params * 2 / 1e9  # bf16

    def verdict(e: Estimate) -> str:
        return "fits" if e.fits else "does not fit"

    big = dp64_estimate("70b-h100", 3, micro_batch, recompute)
    seventy = f"the 70B with ZeRO-3 needs {big.memory.total / 1e9:,.0f} GB, which {verdict(big)} in {big.cluster.gpu.hbm_bytes / 1e9:.1f} GB"
    zero2 = (f"with ZeRO-2 every GPU still keeps the 13B's whole bf16 weights, {weights:,.0f} GB, beside 1/64 of its gradients and Adam "
             f"state: {z2.memory.total / 1e9:,.0f} GB per GPU at micro-batch {micro_batch} with {recompute} recompute, which {verdict(z2)} "
             f"in {hbm:.1f} GB (plain replicas, ZeRO-0: {z0.memory.total / 1e9:,.0f} GB)" + (f"; but {seventy}: not the 13B only." if big.fits else "."))
    zero3 = (f"ZeRO-3 shards the weights too: the 13B needs {z3.memory.total / 1e9:,.0f} GB per GPU, which {verdict(z3)}, against "
             f"{z2.memory.total / 1e9:,.0f} GB with ZeRO-2, which {verdict(z2)}; {seventy}.")
    return {"B": old["B"], "C_zero2": zero2, "C_zero3": zero3, "D": old["D"]}


def draw_settings_v6(d) -> dict:
    recompute, micro_batches = DP64_CASES_V6[d.choice("dp64_case_v6", tuple(DP64_CASES_V6))]
    return {**draw_settings_v5(d), "recompute": recompute, "micro_batch": d.choice("micro_batch", micro_batches)}


def build_questions_v6(s: dict) -> dict:
    mb, recompute = int(s["micro_batch"]), s["recompute"]
    return {
        **build_questions_v5(s),
        "dp64": Choice(
            f"64 GPUs, so DP = 64? With {RECOMPUTE_WORDS[recompute]} and micro-batch {mb}, for which job is DP = 64 a design that fits "
            "in memory, and with which ZeRO/FSDP stage?",
            DP64_OPTIONS_V6, dp64_answer_v6(mb, recompute), dp64_explanations_v6(mb, recompute),
        ),
    }


VARIANTS = LabVariants(LAB, draw_settings_v6, build_questions_v6, version=6,
                       older={1: (draw_settings_v1, build_questions_v1), 2: (draw_settings, build_questions), 3: (draw_settings_v3, build_questions_v3),
                              4: (draw_settings_v4, build_questions_v3), 5: (draw_settings_v5, build_questions_v5)})

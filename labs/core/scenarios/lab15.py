"""Lab 15, where the tokens go: DeepSeek-V3's router run on arrays (labs.core.engine.routing) under
no balancing, Switch Transformer's auxiliary loss and DeepSeek-V3's bias update, with and without
node-limited routing; the hot expert priced by the engine on DeepSeek-V3's published layout
(Lab 11's: PP 16, EP 64 over 8 H800 nodes, 15,360 sequences of 4K); the three predictions per
student, and the outcome function the grader recomputes.

A step routes a sample of TOKENS = 128 tokens here; loads are read over windows of WINDOW = 50
steps (6,400 tokens, 200 a balanced expert), where one sample's counting noise no longer hides
the router's own imbalance. An expert keeps ceil(c x its balanced load) of each window's tokens.
Why 128 and not 256: a run costs steps x tokens x experts normals and top-k's, and every setting
the instruments reach is routed ahead (lab15_runs.npz, scripts/route_lab15.py: 252 runs, ~40 s of
CPU). Half the sample halves that; the counting noise
of a window grows (200 tokens a balanced expert, not 400), so the busiest expert sits about
half as far again above the mean, while every drop question keeps its order and margin
(tests/test_lab15.py prints each variant's).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import lru_cache, partial
from pathlib import Path

from labs.core.engine.routing import (
    SCHEMES,
    RouterRun,
    RouterSetting,
    StoredRuns,
    load_runs,
    route_many,
    save_runs,
)
from labs.core.engine.validation import check_choice
from labs.core.scenarios import lab11
from labs.core.scenarios.common import Option
from labs.core.variants import Choice, LabVariants, Numeric, Question, Specs, judged

LAB = "15_moe_routing"
STEP = "routing"

MODEL = lab11.MOE_MODEL  # DeepSeek-V3: 256 routed experts, 8 a token, EP 64 over 8 nodes
EP, NODES = 64, 8
SEED = 15  # one router draw for everyone: the settings, not the dice, differ between students
STEPS = 500
TOKENS = 128  # routed a step (a sample of the step's batch)
WINDOW = 50
SCHEME_LABELS = {"none": "no balancing (top-k of the logits)", "aux_loss": "Switch auxiliary loss", "bias": "DeepSeek-V3 bias update"}
BASELINE_LABEL = "no balancing, every node"  # the instruments' reference router: it reads the skew and drift only
AUX_COEFFS = (0.001, 0.01, 0.1)
GAMMAS = (0.0001, 0.001, 0.01)
NODE_LIMITS = (8, 4, 2, 1)  # 8: every node (no limit); DeepSeek-V3: 4
SKEWS = (0.15, 0.3, 0.6)
DRIFTS = (0.0, 0.01, 0.03)
CAPACITIES = (1.0, 1.1, 1.25, 1.5, 2.0)
DEFAULT_INPUTS = {"scheme": "bias", "aux_coeff": 0.01, "gamma": 0.001, "max_nodes": 4, "skew": 0.3, "drift": 0.01, "capacity": 1.25}
DISPATCH_BYTES, COMBINE_BYTES = 1, 2  # DeepSeek-V3 Sec. 3.3: FP8 dispatch, BF16 combine


def setting(scheme: str = "bias", aux_coeff: float = 0.01, gamma: float = 0.001, max_nodes: int = 4, skew: float = 0.3, drift: float = 0.01) -> RouterSetting:
    model = lab11.moe_model()
    return RouterSetting(experts=model.experts, top_k=model.experts_per_token, tokens=TOKENS, steps=STEPS, gpus=EP, nodes=NODES, skew=skew, drift=drift,
                         scheme=scheme, aux_coeff=aux_coeff, gamma=gamma, max_nodes=None if max_nodes == NODES else max_nodes, seed=SEED)


def _run_key(scheme: str = "bias", aux_coeff: float = 0.01, gamma: float = 0.001, max_nodes: int = 4, skew: float = 0.3, drift: float = 0.01) -> tuple:
    """A run's key, the knobs a scheme does not read normalised so that they share its run."""
    if scheme != "aux_loss":
        aux_coeff = 0.01
    if scheme != "bias":
        gamma = 0.001
    return (scheme, float(aux_coeff), float(gamma), int(max_nodes), float(skew), float(drift))


_RUNS: dict[tuple, RouterRun] = {}  # one run per setting and process (the lab, the grader and the variants share it)
_RUNS_LOCK = threading.Lock()
MAX_RUNS = 256  # about 0.5 MB a run (its int32 loads), more than the instruments' 252 settings; the oldest goes first


STORE = Path(__file__).with_name("lab15_runs.npz")  # every instrument setting's run: `python scripts/route_lab15.py` writes it
STORE_EVERY = 10  # steps a stored load row sums: the heatmap's column; every window the lab reads (10, 50) is a multiple
_stored: tuple[dict[tuple, int], StoredRuns] | None = None  # the store's index by key and its runs, opened on the first call


def instrument_keys() -> list[tuple]:
    """Every run the instruments reach, by _run_key: each scheme at its own knobs (none: 1, the
    aux loss: 3 coefficients, the bias: 3 rates) x 4 node limits x 3 skews x 3 drifts = 252. The
    variants' questions read a subset (their skew and drift pairs are instrument ones)."""
    knobs = [("none", 0.01, 0.001)] + [("aux_loss", a, 0.001) for a in AUX_COEFFS] + [("bias", 0.01, g) for g in GAMMAS]
    return [_run_key(scheme, a, g, m, sk, dr) for scheme, a, g in knobs for m in NODE_LIMITS for sk in SKEWS for dr in DRIFTS]


def write_store(path: Path = STORE) -> None:
    """Route every instrument setting (one draw: they share the stream) and keep them in `path`."""
    keys = instrument_keys()
    save_runs(path, route_many(setting(*k) for k in keys), STORE_EVERY)


def stored_run(key: tuple) -> RouterRun | None:
    """The store's run for a _run_key, read when first asked for (None: not stored, or the store is stale)."""
    global _stored
    if _stored is None:
        keys = instrument_keys()
        runs = load_runs(STORE, [setting(*k) for k in keys])
        _stored = ({}, ()) if runs is None else ({k: i for i, k in enumerate(keys)}, runs)
    index, runs = _stored
    return runs[index[key]] if key in index else None


def router_runs(keys) -> list[RouterRun]:
    """Runs for several settings (each a dict or tuple of router_run's arguments): the store's
    when it holds them (it was made by today's router), those it does not computed together:
    settings that draw the same numbers share one draw (routing.route_many)."""
    keys = [_run_key(**k) if isinstance(k, dict) else _run_key(*k) for k in keys]
    with _RUNS_LOCK:
        missing = list(dict.fromkeys(k for k in keys if k not in _RUNS))
        for k in missing:
            run = stored_run(k)
            if run is not None:
                _RUNS[k] = run
        missing = [k for k in missing if k not in _RUNS]
        if missing:
            for k, run in zip(missing, route_many(setting(*k) for k in missing)):
                _RUNS[k] = run
            while len(_RUNS) > MAX_RUNS:
                _RUNS.pop(next(iter(_RUNS)))
        return [_RUNS[k] for k in keys]


def router_run(scheme: str = "bias", aux_coeff: float = 0.01, gamma: float = 0.001, max_nodes: int = 4, skew: float = 0.3, drift: float = 0.01) -> RouterRun:
    """One router run per setting and process (see router_runs)."""
    return router_runs([(scheme, aux_coeff, gamma, max_nodes, skew, drift)])[0]


def summary(run: RouterRun) -> dict:
    """The numbers the lab shows for a run: the last window's busiest expert and GPU over the
    mean, the drops at each capacity factor, the dispatch's copies per token by link. Made once
    per run (a class's ledgers read a dozen runs a thousand times); each call gets its own dicts."""
    made = run.memo(("lab15.summary", WINDOW, CAPACITIES), lambda: _summary(run))
    return {**made, "dropped": dict(made["dropped"])}


def _summary(run: RouterRun) -> dict:
    s = run.setting
    per_token = s.tokens / s.gpus
    return {
        "busiest_expert": float(run.busiest_expert_over_mean(WINDOW)[-1]), "busiest_gpu": float(run.busiest_gpu_over_mean(WINDOW)[-1]),
        "busiest_gpu_first": float(run.busiest_gpu_over_mean(WINDOW)[0]),
        "dropped": {c: run.dropped_share(c, WINDOW) for c in CAPACITIES},
        "network_per_token": float(run.network_copies.mean() / per_token), "nvlink_per_token": float(run.nvlink_copies.mean() / per_token),
    }


def a2a_bytes(network_per_token: float, nvlink_per_token: float) -> dict:
    """Dispatch (FP8) and combine (BF16) bytes one GPU sends per MoE layer for one micro-batch
    (the model's 4,096 tokens a GPU), by link: copies per token x hidden x bytes."""
    model = lab11.moe_model()
    per = model.seq_len * model.hidden * (DISPATCH_BYTES + COMBINE_BYTES)
    return {"network": network_per_token * per, "nvlink": nvlink_per_token * per}


def engine_copies(max_nodes: int) -> tuple[float, float]:
    """The engine's all-to-all per token (labs.core.engine.experts: k experts spread at random,
    capped at max_nodes nodes): (network, NVLink) copies."""
    from labs.core.engine.experts import destination_nodes

    model, g = lab11.moe_model(), EP // NODES
    nodes = float(destination_nodes(model, NODES, 0 if max_nodes == NODES else max_nodes))
    return nodes * (NODES - 1) / NODES, model.experts_per_token * (g - 1) / g


# ---- the hot expert's price (the engine) -----------------------------------------------------------------
def step_cost(busiest_gpu: float) -> dict:
    """DeepSeek-V3's step on its published layout, balanced and with every expert GEMM run at the
    busiest GPU's tokens (the EP group waits for it): the engine's capacity factor set to the
    busiest GPU's load over the mean pads every expert to that load. The all-to-all stays priced
    at the mean GPU's bytes; the experts run as one grouped GEMM (labs.core.engine.gemm.grouped_gemm_time:
    each expert's tokens pad to the tile, each reads its own weights)."""
    ratio = round(max(1.0, float(busiest_gpu)), 3)
    balanced, hot = lab11.moe_estimate(), lab11.moe_estimate(capacity=ratio)
    return {"ratio": ratio, "balanced_s": balanced.step_time_s, "hot_s": hot.step_time_s, "rise": hot.step_time_s / balanced.step_time_s - 1,
            "compute_s": balanced.time.compute, "hot_compute_s": hot.time.compute, "ep_comm_s": balanced.time.ep_comm, "mfu": balanced.mfu, "hot_mfu": hot.mfu}


# ---- variants: the three predictions -------------------------------------------------------------------------
VARIANT_ROUTERS = ((0.3, 0.01), (0.15, 0.0))  # (skew, drift): the instruments' default router, and a milder fixed one
VARIANT_AUX = (0.01, 0.1)
DEFAULT_SETTINGS = {"skew": 0.3, "drift": 0.01, "aux_coeff": 0.01}
BALANCE_TOLERANCE = (5.0, 0.3)  # percentage points: the larger of 5 and 30% of the answer
COST_TOLERANCE = (3.0, 0.25)


def check_settings(settings: dict | None) -> dict:
    v = dict(DEFAULT_SETTINGS if settings is None else settings)
    unknown = sorted(set(v) - set(DEFAULT_SETTINGS))
    if unknown:
        raise ValueError(f"unknown variant setting(s) {unknown}")
    check_choice("skew", v.get("skew"), sorted({sk for sk, _ in VARIANT_ROUTERS}))
    check_choice("drift", v.get("drift"), sorted({dr for _, dr in VARIANT_ROUTERS}))
    if (v["skew"], v["drift"]) not in VARIANT_ROUTERS:
        raise ValueError(f"skew and drift must be one of the pairs {list(VARIANT_ROUTERS)}, got {(v['skew'], v['drift'])}")
    check_choice("aux_coeff", v.get("aux_coeff"), VARIANT_AUX)
    return v


def draw_settings(d) -> dict:
    skew, drift = d.choice("router", VARIANT_ROUTERS)
    return {"skew": skew, "drift": drift, "aux_coeff": d.choice("aux_coeff", VARIANT_AUX)}


def every_variant_setting() -> list[dict]:
    """The variants' settings: few, so that a class's grading runs few routers (each run is
    steps x tokens x experts normals and top-k's)."""
    return [{"skew": sk, "drift": dr, "aux_coeff": a} for sk, dr in VARIANT_ROUTERS for a in VARIANT_AUX]


def balance_answer(v: dict) -> float:
    """% the busiest expert is above the mean over steps 451-500 of the bias update (gamma 0.001, no node limit)."""
    return 100 * (summary(router_run("bias", max_nodes=NODES, skew=v["skew"], drift=v["drift"]))["busiest_expert"] - 1)


def _variant_keys(v: dict) -> dict[str, dict]:
    """The runs a variant's questions read, by the drop question's option id (the balance
    question reads "bias", the cost question "none")."""
    at = {"skew": v["skew"], "drift": v["drift"]}
    return {"none": {"scheme": "none", "max_nodes": NODES, **at}, "aux": {"scheme": "aux_loss", "aux_coeff": v["aux_coeff"], "max_nodes": NODES, **at},
            "bias": {"scheme": "bias", "max_nodes": NODES, **at}, "node_limit": {"scheme": "none", "max_nodes": 4, **at}}


def drop_routers(v: dict) -> dict[str, RouterRun]:
    """The drop question's four routers at the variant's skew and drift, by option id."""
    keys = _variant_keys(v)
    return dict(zip(keys, router_runs(keys.values())))


def drop_shares(v: dict) -> dict[str, float]:
    return {k: r.dropped_share(1.25, WINDOW) for k, r in drop_routers(v).items()}


def drop_answer(v: dict) -> str | None:
    """The router that drops the fewest, when it drops at most 0.8 x the next (else none is clear)."""
    shares = sorted(drop_shares(v).items(), key=lambda kv: kv[1])
    (best, low), (_, second) = shares[0], shares[1]
    return best if low <= 0.8 * second and second - low >= 1e-4 else None


def drop_options(v: dict) -> tuple[Option, ...]:
    return (
        Option("none", "No balancing: each token's top 8 experts by its logits", "the router balances itself"),
        Option("aux", f"Switch Transformer's auxiliary loss at alpha = {v['aux_coeff']:g}", "an auxiliary loss is always too weak"),
        Option("bias", "DeepSeek-V3's bias update at gamma = 0.001, no auxiliary loss", "the bias update always balances best"),
        Option("node_limit", "No balancing loss, each token limited to 4 of the 8 nodes", "node limits spread the load"),
    )


def cost_ratio(v: dict) -> float:
    """The busiest GPU's load over the mean, steps 451-500, without balancing at the variant's skew and drift."""
    return round(summary(router_run("none", max_nodes=NODES, skew=v["skew"], drift=v["drift"]))["busiest_gpu"], 2)


def cost_answer(v: dict) -> float:
    return 100 * step_cost(cost_ratio(v))["rise"]


def _tolerance(answer: float, rule: tuple[float, float]) -> float:
    return max(rule[0], rule[1] * abs(answer))


def balance_question(v: dict) -> Numeric:
    model, balance = lab11.moe_model(), balance_answer(v)
    drift = "fixed" if v["drift"] == 0 else f"drifting (each expert's popularity a random walk of {v['drift']:g} logits a step)"
    return Numeric(
        f"{model.name}'s router: {model.experts} experts, {model.experts_per_token} a token, expert popularity skewed by {v['skew']:g} "
        f"logits (std) and {drift}. DeepSeek-V3's bias update (gamma = 0.001) runs for {STEPS} steps. Over steps 451-500 "
        f"({WINDOW} x {TOKENS} tokens), how many % above the mean expert's load is the busiest expert's? "
        f"(right within the larger of {BALANCE_TOLERANCE[0]:g} points and {BALANCE_TOLERANCE[1]:.0%})",
        balance, _tolerance(balance, BALANCE_TOLERANCE), "%",
        f"the router's arrays: the busiest of {model.experts} experts got {balance:.1f}% more than the mean over those {WINDOW} steps. "
        "The bias moves each expert by gamma a step whatever its imbalance; what is left is the drift it chases and the sample's counting noise.",
    )


def drops_question(v: dict) -> Choice:
    shares, names = drop_shares(v), {o.key: o.label for o in drop_options(v)}
    return Choice(
        f"Same router and skew. Every expert keeps at most 1.25 x its balanced load of each {WINDOW}-step window (capacity factor 1.25) "
        f"and drops the rest. Over {STEPS} steps, which router drops the fewest tokens?",
        drop_options(v), drop_answer(v),
        {k: f"drops {shares[k]:.2%} of the token copies it routes ({names[k]})." for k in shares},
    )


def cost_question(v: dict) -> Numeric:
    model, ratio = lab11.moe_model(), cost_ratio(v)
    cost = step_cost(ratio)
    return Numeric(
        f"Without balancing, the busiest GPU of the EP group (EP {EP}, 4 experts a GPU) receives {ratio:.2f}x the mean GPU's tokens. "
        f"{model.name} on its published layout (PP 16, EP 64, 2,048 H800s) takes {cost['balanced_s']:.1f} s a step balanced. "
        "By how many % does the step grow when every expert GEMM waits for the busiest GPU? "
        f"(right within the larger of {COST_TOLERANCE[0]:g} points and {COST_TOLERANCE[1]:.0%})",
        100 * cost["rise"], _tolerance(100 * cost["rise"], COST_TOLERANCE), "%",
        f"the engine: {cost['balanced_s']:.1f} s balanced, {cost['hot_s']:.1f} s with the expert GEMMs at {ratio:.2f}x: the step's compute "
        f"goes from {cost['compute_s']:.1f} s to {cost['hot_compute_s']:.1f} s, the all-to-all ({cost['ep_comm_s']:.1f} s) is priced unchanged.",
    )


def build_questions(settings: dict) -> dict:
    """The balance question (the page's first) built now; the drop and cost questions, whose
    routers and step prices it does not read, when first read (Specs)."""
    v = check_settings(settings)
    return {"balance": balance_question(v), "drops": partial(drops_question, v), "cost": partial(cost_question, v)}


VARIANTS = LabVariants(LAB, draw_settings, build_questions)


@lru_cache(maxsize=1)
def _legacy_questions() -> dict[str, Question]:
    specs = Specs(build_questions(DEFAULT_SETTINGS))
    return {q: Question(q, spec, () if isinstance(spec, Numeric) else tuple(o.key for o in spec.options)) for q, spec in specs.items()}


def legacy_questions() -> dict[str, Question]:
    """The questions at the default settings, options in written order: how a step saved
    without a variant is graded."""
    return dict(_legacy_questions())


def legacy_options(question: str) -> tuple[Option, ...]:
    """The drop question's options lettered in written order (the class dashboard's view)."""
    if question != "drops":
        raise ValueError(f"question must be 'drops' (the lab's only multiple-choice question), got {question!r}")
    return tuple(Option("ABCD"[i], o.label, o.misconception) for i, o in enumerate(drop_options(DEFAULT_SETTINGS)))


# ---- the outcome the grader recomputes ----------------------------------------------------------------------
INPUT_FIELDS = ("scheme", "aux_coeff", "gamma", "max_nodes", "skew", "drift", "capacity")


def check_inputs(inputs: dict) -> None:
    """The instruments' settings, each against what the lab offers."""
    for name, allowed in (("scheme", SCHEMES), ("aux_coeff", AUX_COEFFS), ("gamma", GAMMAS), ("max_nodes", NODE_LIMITS),
                          ("skew", SKEWS), ("drift", DRIFTS), ("capacity", CAPACITIES)):
        check_choice(name, inputs.get(name), allowed)


def routing_outcomes(inputs: dict, predictions: dict, variant=None) -> dict:
    """What the lab shows for the instruments' router, and each prediction judged at the
    student's variant (None: the default settings)."""
    check_inputs(inputs)
    run = router_run(inputs["scheme"], inputs["aux_coeff"], inputs["gamma"], inputs["max_nodes"], inputs["skew"], inputs["drift"])
    s = summary(run)
    cost = step_cost(s["busiest_gpu"])
    legacy = legacy_questions() if variant is None else None
    return {
        "busiest_expert": s["busiest_expert"], "busiest_gpu": s["busiest_gpu"], "dropped_share": s["dropped"][inputs["capacity"]],
        "network_per_token": s["network_per_token"], "nvlink_per_token": s["nvlink_per_token"],
        "step_time_s": cost["hot_s"], "balanced_step_time_s": cost["balanced_s"],
        **{f"{q}_correct": judged(variant, q, predictions, lambda a, q=q: legacy is not None and a is not None and legacy[q].judge(a))
           for q in ("balance", "drops", "cost")},
    }


OUTCOMES: dict[tuple[str, str], Callable[[dict, dict], dict]] = {(LAB, STEP): routing_outcomes}

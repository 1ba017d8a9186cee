"""Lab 15: the router on arrays (labs.core.engine.routing) against hand counts and the papers'
rules: top-k counts, capacity and dropping counted by hand, the bias update's sign rule, the
Switch auxiliary loss at its minimum, node-limited routing, the dispatch's copies against the
engine's formula; the scenario's variants deterministic per id; the grader recomputing a ledger;
and the notebook headless (locked, commit, reveal, the instruments at both ends, submit)."""

import hashlib
import json
import math
import re
from pathlib import Path

import marimo as mo
import numpy as np
import pytest
from test_lab15_svg import check_heatmap, check_router_lines

from labs.core.engine import routing
from labs.core.engine.routing import (
    RouterSetting,
    aux_loss_value,
    capacity,
    dropped,
    node_limited_mask,
    route,
    route_many,
    top_k_mask,
)
from labs.core.scenarios import lab15
from labs.core.variants import Specs

SMALL = dict(experts=16, top_k=2, tokens=64, steps=40, gpus=8, nodes=2)


# ---- the router's pieces against hand counts ----------------------------------------------------------
def test_top_k_counts_sum_to_k_times_tokens():
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((100, 32))
    mask = top_k_mask(scores, 4)
    assert (mask.sum(axis=1) == 4).all() and mask.sum() == 4 * 100
    assert (np.sort(scores, axis=1)[:, -4:].min(axis=1) == np.where(mask, scores, np.inf).min(axis=1)).all()
    run = route(RouterSetting(**SMALL))
    assert (run.loads.sum(axis=1) == 2 * 64).all()


def test_capacity_and_drops_by_hand():
    """4 experts, 10 tokens, top-1: balanced load 2.5; at c = 1.25 each keeps ceil(3.125) = 4;
    loads 7, 2, 1, 0 drop 3 (Switch Transformer Sec. 2.2: tokens past capacity are dropped)."""
    s = RouterSetting(experts=4, top_k=1, tokens=10, steps=1, gpus=2, nodes=1)
    assert capacity(s, 1.25) == 4 and capacity(s, 1.0) == 3 and capacity(s, 2.0) == 5
    assert dropped(np.array([7, 2, 1, 0]), 4) == 3 and dropped(np.array([7, 2, 1, 0]), 3) == 4
    with pytest.raises(ValueError, match="capacity_factor"):
        capacity(s, 0.9)


def test_switch_capacity_factor_drops_less_as_it_grows():
    """Switch Transformer Sec. 2.2 / Table 1: a larger capacity factor drops fewer tokens; at 1.0
    a router that is not perfectly balanced always drops some."""
    run = route(RouterSetting(**SMALL, skew=0.5))
    shares = [run.dropped_share(c) for c in (1.0, 1.25, 1.5, 2.0, 8.0)]
    assert shares == sorted(shares, reverse=True) and shares[0] > 0 and shares[-1] == 0


def test_aux_loss_of_a_uniform_router_is_its_coefficient():
    """Switch's alpha E sum f_i P_i: f_i = P_i = 1/E gives alpha (its minimum), here with E = 8, k = 2."""
    probs = np.full((16, 8), 1 / 8)
    chosen = np.zeros((16, 8), dtype=bool)
    for t in range(16):
        chosen[t, [(2 * t) % 8, (2 * t + 1) % 8]] = True
    assert aux_loss_value(probs, chosen, 0.01) == pytest.approx(0.01)
    skewed = np.tile(np.array([0.5, 0.3] + [0.2 / 6] * 6), (16, 1))
    top = np.zeros_like(chosen)
    top[:, :2] = True
    assert aux_loss_value(skewed, top, 0.01) > 0.01


def test_bias_update_follows_the_sign_rule_and_balances():
    """DeepSeek-V3 Sec. 2.1.2: after a step every overloaded expert's bias falls by gamma and every
    underloaded one's rises by gamma; over steps the busiest expert comes down toward the mean."""
    one = route(RouterSetting(**{**SMALL, "steps": 1}, skew=0.8, scheme="bias", gamma=0.01))
    load = one.loads[0]
    assert np.allclose(one.bias, 0.01 * np.sign(load.mean() - load))
    none = route(RouterSetting(**{**SMALL, "steps": 400}, skew=0.8, scheme="none"))
    bias = route(RouterSetting(**{**SMALL, "steps": 400}, skew=0.8, scheme="bias", gamma=0.01))
    assert bias.busiest_expert_over_mean(100)[-1] < 0.8 * none.busiest_expert_over_mean(100)[-1]
    assert bias.busiest_expert_over_mean(100)[-1] < bias.busiest_expert_over_mean(100)[0]


def test_aux_loss_pulls_toward_balance_and_stays_near_alpha():
    none = route(RouterSetting(**{**SMALL, "steps": 400}, skew=0.8))
    aux = route(RouterSetting(**{**SMALL, "steps": 400}, skew=0.8, scheme="aux_loss", aux_coeff=0.1))
    assert aux.busiest_expert_over_mean(100)[-1] < 0.8 * none.busiest_expert_over_mean(100)[-1]
    assert aux.aux_loss[-100:].mean() == pytest.approx(0.1, rel=0.15) and aux.aux_loss[-100:].mean() < aux.aux_loss[:10].mean()


def test_node_limited_routing_keeps_each_token_on_at_most_m_nodes():
    """DeepSeek-V3: 8 experts of 256 over 8 nodes, at most 4 nodes a token, each node ranked by
    its top 8/4 = 2 scores. By hand on one token: nodes of 4 experts, M = 1, k = 2."""
    scores = np.array([[0.9, 0.1, 0.1, 0.1, 0.8, 0.7, 0.0, 0.0]])  # node 0: 0.9 + 0.1, node 1: 0.8 + 0.7
    assert node_limited_mask(scores, 2, 2, 1).nonzero()[1].tolist() == [4, 5]
    rng = np.random.default_rng(1)
    mask = node_limited_mask(rng.standard_normal((200, 256)), 8, 8, 4)
    assert (mask.sum(axis=1) == 8).all() and (mask.reshape(200, 8, 32).any(axis=2).sum(axis=1) <= 4).all()


def _kept_nodes_top_k(scores: np.ndarray, k: int, nodes: int, m: int) -> np.ndarray:
    """The docstring's node limit on whole arrays: every node whose top k/M sum reaches the M-th
    highest is kept (ties keep them all), then every score of a kept node at or above the k-th
    highest of the kept nodes' scores is chosen."""
    t, e = scores.shape
    grouped = scores.reshape(t, nodes, e // nodes)
    best = np.sort(grouped, axis=-1)[..., -(k // m):].sum(axis=-1)
    keep = best >= np.sort(best, axis=-1)[:, -m][:, None]
    kept = np.where(np.repeat(keep, e // nodes, axis=1), scores, -np.inf)
    return kept >= np.sort(kept, axis=-1)[:, -k][:, None]


@pytest.mark.parametrize("m", [1, 2, 4])
def test_node_limited_mask_is_the_whole_array_rule_with_and_without_ties(m):
    """node_limited_mask (which ranks only the kept nodes' scores when exactly M nodes are kept,
    and every node's top k otherwise) on 256 experts over 8 nodes, k = 8: scores in halves (the
    node sums exact in any order, many ties: a tie at the M-th node keeps more) and continuous
    ones, a (steps, tokens, experts) chunk as the router passes it."""
    rng = np.random.default_rng(m)
    halves = np.round(rng.standard_normal((300, 256)) * 2) / 2
    assert (_kept_nodes_top_k(halves, 8, 8, m).reshape(300, 8, 32).any(axis=2).sum(axis=1) > m).any()  # some rows tie
    for scores in (halves, rng.standard_normal((300, 256)).astype(np.float32)):
        got = node_limited_mask(scores.reshape(3, 100, 256), 8, 8, m).reshape(300, 256)
        assert np.array_equal(got, _kept_nodes_top_k(scores, 8, 8, m)), m


def test_runs_routed_together_have_the_bits_of_each_routed_alone():
    """route_many draws a stream once for its settings and makes each chunk's logits and affinities
    once per (skew, drift): every run has the bits of its setting routed on its own."""
    at = lambda **kw: RouterSetting(**{**SMALL, "drift": 0.05, "scheme": "bias", **kw})
    settings = [at(max_nodes=2), at(max_nodes=1), at(gamma=0.01), at(skew=0.9, max_nodes=1), at(scheme="aux_loss", skew=0.9), at(scheme="none", max_nodes=2)]
    together = route_many(settings)
    for s, run in zip(settings, together):
        alone = route(s)
        for f in ("loads", "network_copies", "nvlink_copies", "bias", "aux_loss"):
            a, b = getattr(run, f), getattr(alone, f)
            assert (a is None) == (b is None) and (a is None or np.array_equal(a, b)), (s, f)


def test_dispatch_copies_match_the_engines_formula():
    """Uniform routing over 8 nodes of 8 GPUs: the engine's N (1 - (1 - 1/N)^k) (N - 1)/N network
    copies a token (it draws the k experts independently) and k (g - 1)/g NVLink copies, within
    a few %; node-limited to 4 nodes, the network copies fall under 4 x 7/8."""
    s = lab15.setting("none", skew=0.0, drift=0.0, max_nodes=8)
    run = route(RouterSetting(**{**s.__dict__, "steps": 20}))
    per_token = s.tokens / s.gpus
    engine_net, engine_nvl = lab15.engine_copies(8)
    assert run.network_copies.mean() / per_token == pytest.approx(engine_net, rel=0.08)
    assert run.nvlink_copies.mean() / per_token == pytest.approx(engine_nvl, rel=0.03)
    limited = route(RouterSetting(**{**s.__dict__, "steps": 20, "max_nodes": 4}))
    assert limited.network_copies.mean() / per_token <= 4 * 7 / 8 + 1e-9


def test_bad_settings_are_refused_by_name():
    for kw, field in ((dict(top_k=300), "top_k"), (dict(gpus=48), "gpus"), (dict(scheme="sinkhorn"), "scheme"), (dict(max_nodes=3), "max_nodes"),
                      (dict(skew=float("nan")), "skew"), (dict(steps=10**6), "steps x tokens"),
                      (dict(experts=8, top_k=8, tokens=8, gpus=4, nodes=4, max_nodes=1), "max_nodes")):  # a node of 2 experts has no top 8
        with pytest.raises(ValueError, match=field):
            RouterSetting(**kw)


def test_the_same_setting_gives_the_same_run():
    a, b = route(RouterSetting(**SMALL, drift=0.05, scheme="bias")), route(RouterSetting(**SMALL, drift=0.05, scheme="bias"))
    assert (a.loads == b.loads).all() and (a.bias == b.bias).all()
    assert not (route(RouterSetting(**SMALL, drift=0.05, seed=1)).loads == a.loads).all()


def _digest(run) -> dict:
    """The fixture's hashes: each array's bytes, the loads as int64 (as route kept them then; it keeps int32 now)."""
    arrays = {name: getattr(run, name) for name in ("loads", "network_copies", "nvlink_copies", "aux_loss", "bias")}
    arrays["loads"] = np.asarray(arrays["loads"], dtype=np.int64)
    return {name: None if a is None else hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16] for name, a in arrays.items()}


def test_the_vectorised_router_reproduces_the_step_by_step_one_bit_for_bit():
    """tests/data/lab15_router_digests.json holds the hashes of every array of 17 runs made by the
    step-by-step route() of commit 69bb894 (all three schemes, node limits 1 to 8, with and
    without drift, small and at the lab's size). The chunked route and route_many, which share
    one draw among settings of the same stream, give the same bits for every case with drift
    (small ones, and the lab-sized ones run together: one stream, six settings). Without drift
    the stream now draws the walk too (one stream for every setting), so those runs changed:
    they are checked against _reference_route below instead."""
    cases = json.loads((Path(__file__).parent / "data" / "lab15_router_digests.json").read_text())["cases"]
    small = [c for c in cases if c["setting"]["experts"] == 16 and c["setting"].get("drift")]
    full = [c for c in cases if c["setting"]["experts"] == 256 and c["setting"]["drift"]]
    assert len(small) == 6 and len(full) == 6 and {c["setting"]["scheme"] for c in full} == {"none", "bias", "aux_loss"}
    for c in small:
        assert _digest(route(RouterSetting(**c["setting"]))) == c["digest"], c["setting"]
    runs = route_many([RouterSetting(**c["setting"]) for c in full])
    assert [_digest(r) for r in runs] == [c["digest"] for c in full]


def _reference_route(s: RouterSetting) -> dict:
    """The module docstring's router one step and one token at a time: each token's experts by
    argsort, its nodes ranked by their top k/M scores one by one, its copies counted by hand;
    drawn as routing._draws documents (the base, step 0's noise, then each later step's walk
    step and noise). The balancing updates are the docstring's formulas, written as route writes
    them (float order decides bits)."""
    rng = np.random.default_rng(s.seed)
    t, e, k = s.tokens, s.experts, s.top_k
    per_node, per_gpu, gpus_a_node = e // s.nodes, e // s.gpus, s.gpus // s.nodes
    base, walk, bias = rng.standard_normal(e).astype(np.float32), np.zeros(e, dtype=np.float32), np.zeros(e)
    loads, network, nvlink, aux = [], [], [], []
    for step in range(s.steps):
        if step == 0:
            noise = rng.standard_normal((1, t, e), dtype=np.float32)[0]
        else:
            block = rng.standard_normal((1, t + 1, e), dtype=np.float32)[0]
            walk = walk + block[0]
            noise = block[1:]
        z = noise + (s.skew * base + s.drift * walk)
        if s.scheme == "bias":
            scores = 1.0 / (1.0 + np.exp(-z)) + bias.astype(np.float32)
        else:
            z = z + bias.astype(np.float32)
            scores = z
        chosen = np.zeros((t, e), dtype=bool)
        for token in range(t):
            allowed = np.arange(e)
            if s.max_nodes is not None and s.max_nodes < s.nodes:
                node_score = [np.sort(scores[token, n * per_node:(n + 1) * per_node])[-(k // s.max_nodes):].sum() for n in range(s.nodes)]
                kept = np.argsort(node_score)[::-1][:s.max_nodes]
                allowed = np.concatenate([np.arange(n * per_node, (n + 1) * per_node) for n in sorted(kept)])
            chosen[token, allowed[np.argsort(scores[token, allowed])[::-1][:k]]] = True
        count = chosen.sum(axis=0)
        loads.append(count)
        if step % routing.COPY_EVERY == 0:
            net = nvl = 0
            for token in range(t):
                source = token * s.gpus // t
                experts = np.flatnonzero(chosen[token])
                net += len({x // per_node for x in experts} - {source // gpus_a_node})
                nvl += sum((x // per_gpu) % gpus_a_node != source % gpus_a_node for x in experts)
            network.append(net / s.gpus)
            nvlink.append(nvl / s.gpus)
        if s.scheme == "bias":
            bias += s.gamma * np.sign(count.mean() - count)
        elif s.scheme == "aux_loss":
            p = np.exp(z - z.max(axis=1, keepdims=True))
            probs = p / p.sum(axis=1, keepdims=True)
            f = count / (t * k)
            mean_p = probs.mean(axis=0)
            aux.append(s.aux_coeff * e * float(np.dot(f, mean_p)))
            grad = s.aux_coeff * e * (mean_p * f - (probs * (probs @ f)[:, None]).mean(axis=0))
            bias -= routing.ROUTER_LR * grad
    return {"loads": np.array(loads), "network_copies": np.array(network), "nvlink_copies": np.array(nvlink), "aux_loss": np.array(aux) if aux else None, "bias": bias}


@pytest.mark.parametrize("scheme", routing.SCHEMES)
@pytest.mark.parametrize("drift, max_nodes", [(0.0, None), (0.0, 4), (0.05, 4), (0.05, None)])
def test_the_router_is_its_step_by_step_reference(scheme, drift, max_nodes):
    """route (chunked draws, the node limit ranked on each kept node's top k) gives exactly the
    arrays of _reference_route, with and without drift and node limit: 64 experts on 8 nodes of
    one GPU, 8 a token, 4 nodes kept (DeepSeek-V3's 8 of 256 over 4 of 8 nodes, scaled down)."""
    s = RouterSetting(experts=64, top_k=8, tokens=16, steps=31, gpus=8, nodes=8, skew=0.8, drift=drift, scheme=scheme, gamma=0.01, aux_coeff=0.1, max_nodes=max_nodes)
    run, ref = route(s), _reference_route(s)
    for name, expected in ref.items():
        got = getattr(run, name)
        assert (got is None) == (expected is None) and (got is None or np.array_equal(got, expected)), name


def test_runs_of_one_stream_share_a_draw_and_the_lab_caches_them():
    """route_many draws once per stream (same seed, sizes, steps, drift or none): the scenario's
    router_runs computes only what it has not run, and a knob a scheme does not read shares the run."""
    a, b = lab15.router_runs([{"scheme": "none", "max_nodes": 8, "skew": 0.3, "drift": 0.0}, ("none", 0.1, 0.01, 8, 0.3, 0.0)])
    assert a is b and lab15.router_run("none", max_nodes=8, skew=0.3, drift=0.0) is a
    assert routing._stream_key(lab15.setting("none", skew=0.15, drift=0.01)) == routing._stream_key(lab15.setting("aux_loss", skew=0.6, drift=0.03))
    assert routing._stream_key(lab15.setting("none", drift=0.0)) == routing._stream_key(lab15.setting("none", drift=0.01))
    assert routing._stream_key(lab15.setting("none")) != routing._stream_key(RouterSetting(**{**lab15.setting("none").__dict__, "seed": 16}))


def test_a_class_needs_few_router_runs_all_of_one_stream():
    """Grading a class runs every variant's routers and the instruments' defaults: 2 routers x
    2 auxiliary-loss coefficients give 4 variants, and their questions read 10 runs (none, bias,
    the node limit and the aux loss at each coefficient, per router); the instruments' default
    router under each scheme, with and without the node limit, adds the 2 node-limited
    balancing runs: 12, every one reading the same draw."""
    keys = {lab15._run_key(**k) for v in lab15.every_variant_setting() for k in lab15._variant_keys(v).values()}
    assert len(lab15.every_variant_setting()) == 4 and len(keys) == 10
    defaults = {lab15._run_key(**{k: lab15.DEFAULT_INPUTS[k] for k in ("aux_coeff", "gamma", "skew", "drift")}, scheme=s, max_nodes=m)
                for s in lab15.SCHEMES for m in (8, 4)}
    assert len(keys | defaults) == 12
    assert len({routing._stream_key(lab15.setting(*k)) for k in keys | defaults}) == 1



def test_a_runs_summary_is_made_once_and_each_caller_gets_its_own():
    """summary() reads a run once (a class's 1,000 ledgers read a dozen runs): the same numbers as
    reading the run afresh, in dicts a caller may change without changing the next caller's."""
    run = lab15.router_run("none", max_nodes=lab15.NODES, skew=0.3, drift=0.01)
    first = lab15.summary(run)
    assert first == lab15._summary(run)
    assert first["busiest_gpu"] == float(run.busiest_gpu_over_mean(lab15.WINDOW)[-1])
    assert first["dropped"][1.25] == run.dropped_share(1.25, lab15.WINDOW)
    first["dropped"][1.25] = -1.0
    first["busiest_gpu"] = -1.0
    again = lab15.summary(run)
    assert again["dropped"][1.25] == run.dropped_share(1.25, lab15.WINDOW) and again["busiest_gpu"] > 1


# ---- the scenario: variants, the engine's price, the grader ------------------------------------------------
def test_hot_expert_cost_is_the_engines():
    c = lab15.step_cost(1.5)
    from labs.core.scenarios.lab11 import moe_estimate

    assert c["hot_s"] == pytest.approx(moe_estimate(capacity=1.5).step_time_s) and c["balanced_s"] == pytest.approx(moe_estimate().step_time_s)
    assert c["rise"] > 0 and lab15.step_cost(1.0)["rise"] == pytest.approx(0.0)


def test_variants_are_deterministic_per_id_and_differ_in_content():
    from labs.variants import variant

    a, again = variant(lab15.LAB, "ada", salt="s"), variant(lab15.LAB, "  ada ", salt="s")
    assert a == again
    drawn = [variant(lab15.LAB, f"student-{i:03d}", salt="s") for i in range(40)]
    keys = {next(o.label for o in v.questions["drops"].spec.options if o.key == v.questions["drops"].spec.correct) for v in drawn}
    assert len(keys) >= 2, "the drop question's right router must differ between students"
    assert len({round(v.questions["balance"].spec.answer, 6) for v in drawn}) >= 2
    assert len({round(v.questions["cost"].spec.answer, 6) for v in drawn}) >= 2


def test_every_variant_has_one_clear_answer():
    """At every setting a student can draw: the drop question's router drops at most 0.8 x the
    next and at least 0.01 points less; the numbers are positive; and the two routers' keys
    differ by more than their tolerances (a classmate's number is wrong for the other router).
    The margins are printed."""
    from labs.variants import Draw

    drawn = {json.dumps(lab15.draw_settings(Draw(f"id-{i}")), sort_keys=True) for i in range(200)}
    assert drawn == {json.dumps(v, sort_keys=True) for v in lab15.every_variant_setting()}
    answers = {}
    for v in lab15.every_variant_setting():
        q = Specs(lab15.build_questions(v))
        shares = sorted(lab15.drop_shares(v).items(), key=lambda kv: kv[1])
        print(v, "drops:", {k: f"{x:.3%}" for k, x in shares}, f"balance {q['balance'].answer:.1f}%, cost {q['cost'].answer:.1f}%")
        assert q["drops"].correct == shares[0][0] and shares[0][1] <= 0.8 * shares[1][1] and shares[1][1] - shares[0][1] >= 1e-4
        assert math.isfinite(q["balance"].answer) and q["balance"].answer > 0 and q["cost"].answer > 0
        answers[(v["skew"], v["drift"])] = q
    (a, b) = answers.values()
    for name in ("balance", "cost"):
        x, y = a[name], b[name]
        assert abs(x.answer - y.answer) > max(x.tolerance, y.tolerance), (name, x.answer, y.answer)
    with pytest.raises(ValueError, match="skew and drift"):
        lab15.check_settings({"skew": 0.15, "drift": 0.01, "aux_coeff": 0.01})


def test_outcomes_refuse_bad_inputs_by_name_and_the_grader_recomputes(tmp_path):
    from labs.core.state import DesignLedger
    from labs.grade import grade, grade_document
    from labs.variants import variant

    with pytest.raises(ValueError, match="capacity"):
        lab15.routing_outcomes({**lab15.DEFAULT_INPUTS, "capacity": 1.3}, {})
    with pytest.raises(ValueError, match="scheme"):
        lab15.routing_outcomes({**lab15.DEFAULT_INPUTS, "scheme": "sinkhorn"}, {})
    v = variant(lab15.LAB, "grace", salt="")
    preds = {"balance": f"{v.questions['balance'].spec.answer:.2f}", "drops": v.questions["drops"].key, "cost": "0"}
    out = lab15.routing_outcomes(lab15.DEFAULT_INPUTS, preds, variant=v)
    assert out["balance_correct"] and out["drops_correct"] and not out["cost_correct"]
    ledger = DesignLedger("grace", directory=tmp_path)
    for q, a in preds.items():
        ledger.commit_prediction(lab15.LAB, q, a, variant=v.record())
    ledger.save_step(lab15.LAB, lab15.STEP, dict(lab15.DEFAULT_INPUTS), preds, out, variant=v.record())
    table, problems = grade([str(tmp_path)])
    row = table[(table.lab == lab15.LAB)].iloc[0]
    assert not problems and row["status"] == "ok" and bool(row["balance_correct"]) and not bool(row["cost_correct"])
    doc = json.loads(ledger.path.read_text())
    doc["labs"][lab15.LAB][lab15.STEP]["outcomes"]["cost_correct"] = True
    assert grade_document(doc, "f.json")[0]["tampered"]


# ---- the notebook, headless ----------------------------------------------------------------------------------
from test_notebooks import (
    LABS,
    Pressed,
    committed,
    load_app,
    mine,
    text_of,
    with_instruments,
)

LAB15 = next((p for p in LABS if p.name == "15_moe_routing.py"), None)


@pytest.fixture(scope="module")
def app():
    return load_app(LAB15)


def _all_committed(student: str | None = None) -> dict:
    out = {}
    for q in ("balance", "drops", "cost"):
        question = mine(lab15.LAB, q, student)
        out.update(committed(q, question, question.spec.answer if question.numeric else question.key))
    return out


@pytest.mark.usefixtures("ledger_dir")
def test_locked_until_committed(app):
    outputs, defs = app.run()
    text = text_of(outputs)
    assert "Commit to a prediction" in text and "router_view" not in defs and "submitted" not in defs
    for hidden in ("engine says", "Right", "Key takeaways", "The equations behind"):
        assert hidden not in text


@pytest.mark.usefixtures("ledger_dir")
def test_commit_reveals_and_the_instruments_follow_the_router(app):
    outputs, defs = app.run(defs=_all_committed())
    text = text_of(outputs)
    assert "Right" in text and "Key takeaways" in text and "The equations behind" in text
    run = lab15.router_run(**{k: lab15.DEFAULT_INPUTS[k] for k in ("scheme", "aux_coeff", "gamma", "max_nodes", "skew", "drift")})
    chart = defs["router_chart"]  # SVG: the heatmap (an image and its colour bar) above, the busiest GPU's line for the reference router and this one below
    check_heatmap(chart, run)
    reference = lab15.router_run("none", max_nodes=lab15.NODES, skew=lab15.DEFAULT_INPUTS["skew"], drift=lab15.DEFAULT_INPUTS["drift"])
    check_router_lines(chart, run, reference, lab15.SCHEME_LABELS[run.setting.scheme])
    assert chart in text and defs["drops_view"] in text  # both charts shown as markup, no Plotly figure
    assert defs["baseline_view"] is reference  # the reference router reads every node, whatever the node limit
    assert f"{lab15.summary(run)['busiest_gpu']:.2f}x" in text


@pytest.mark.usefixtures("ledger_dir")
@pytest.mark.parametrize("end", [0, -1])
def test_every_instrument_at_both_ends(app, end):
    pick = lambda values: values[end]
    widgets = dict(
        scheme_dropdown=mo.ui.dropdown(options=list(lab15.SCHEMES), value=pick(list(lab15.SCHEMES))),
        aux_dropdown=mo.ui.dropdown(options=[str(a) for a in lab15.AUX_COEFFS], value=str(pick(lab15.AUX_COEFFS))),
        gamma_dropdown=mo.ui.dropdown(options=[str(g) for g in lab15.GAMMAS], value=str(pick(lab15.GAMMAS))),
        nodes_slider=mo.ui.slider(steps=list(lab15.NODE_LIMITS), value=pick(lab15.NODE_LIMITS)),
        skew_slider=mo.ui.slider(steps=list(lab15.SKEWS), value=pick(lab15.SKEWS)),
        drift_slider=mo.ui.slider(steps=list(lab15.DRIFTS), value=pick(lab15.DRIFTS)),
        capacity_slider=mo.ui.slider(steps=list(lab15.CAPACITIES), value=pick(lab15.CAPACITIES)),
    )
    outputs, defs = app.run(defs={**_all_committed(), **with_instruments(app, "router_panel", **widgets)})
    inputs = {**defs["router_setting"], "capacity": pick(lab15.CAPACITIES)}
    assert inputs["skew"] == pick(lab15.SKEWS) and inputs["scheme"] == pick(list(lab15.SCHEMES))
    out = lab15.routing_outcomes(inputs, {})
    assert f"{out['step_time_s']:.1f} s" in text_of(outputs)
    shown = re.sub(r"(?:[A-Za-z0-9+=]|\\u002f|/){100,}", "", text_of(outputs))  # not the charts' base64 (the heatmap's PNG, typed arrays)
    assert "nan" not in shown.lower().replace("nanos", "")


@pytest.mark.usefixtures("ledger_dir")
def test_submit_lands_in_the_ledger_and_the_grader_recomputes_it(app, ledger_dir):
    from labs.grade import grade

    defs_in = {**_all_committed("lab fifteen"), "student_input": mo.ui.text(value="lab fifteen"), "submit_button": Pressed()}
    _, defs = app.run(defs=defs_in)
    step = defs["submitted"]["labs"][lab15.LAB][lab15.STEP]
    assert step["inputs"] == lab15.DEFAULT_INPUTS
    assert step["outcomes"]["balance_correct"] and step["outcomes"]["drops_correct"] and step["outcomes"]["cost_correct"]
    table, problems = grade([str(ledger_dir)])
    assert not problems
    row = table[(table.lab == lab15.LAB) & (table.step == lab15.STEP)].iloc[0]
    assert row["status"] == "ok" and bool(row["balance_correct"]) and bool(row["cost_correct"])



def _cells(path: Path) -> list[tuple[set[str], str]]:
    """Each @app.cell of a notebook: the names it reads (its parameters) and its body's source."""
    import ast

    cells = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and any("app.cell" in ast.unparse(d) for d in node.decorator_list):
            cells.append(({a.arg for a in node.args.args}, "\n".join(ast.unparse(b) for b in node.body)))
    return cells


def test_a_capacity_move_reruns_neither_the_router_nor_its_other_charts():
    """The capacity factor only re-reads the runs' loads: the cells that read its slider (directly
    or through router_inputs) route nothing and draw no router chart (heatmap and busiest GPU),
    and the one cell that routes does not read it (the notebook before this split routed, and
    redrew every chart, on each capacity move)."""
    cells = _cells(LAB15)
    routing_cells = [refs for refs, body in cells if "router_runs(" in body and "nodes_slider" in refs]
    assert len(routing_cells) == 1 and not routing_cells[0] & {"capacity_slider", "router_inputs"}
    for refs, body in cells:
        if refs & {"capacity_slider", "router_inputs"}:
            assert not any(f in body for f in ("router_runs(", "router_chart(")), sorted(refs)


def test_a_move_of_the_routers_own_knobs_runs_one_router():
    """The reference router the charts compare against (no balancing, every node) reads the skew
    and drift only: the routing cell asks for it at max_nodes=NODES, not at the node limit, so a
    node-limit, scheme, alpha or gamma move runs one router (it ran two: the reference followed the
    node limit)."""
    (body,) = [body for refs, body in _cells(LAB15) if "router_runs(" in body and "nodes_slider" in refs]
    assert "'max_nodes': NODES, 'skew': router_setting['skew'], 'drift': router_setting['drift']" in body


@pytest.mark.parametrize("instrument", ["scheme_dropdown", "aux_dropdown", "gamma_dropdown", "nodes_slider", "skew_slider", "drift_slider", "capacity_slider"])
def test_a_move_reruns_no_submit_and_no_hud(instrument):
    """The submit reads the instruments through router_inputs() when pressed: no move re-runs it
    (it reads the ledger file) or the HUD after it. Before, every move re-ran 6 cells (the router,
    the drops, the all-to-all, the inputs, the submit and the HUD); now 3 at most (1 for capacity)."""
    from test_lab11_12_moves import rerun_by

    hit = rerun_by(LAB15, instrument)
    print(instrument, [sorted(c["refs"]) for c in hit])
    assert hit and not any("submit_to_ledger" in c["body"] or "hud(" in c["body"] for c in hit)
    assert len(hit) == (1 if instrument == "capacity_slider" else 3)


@pytest.mark.usefixtures("ledger_dir")
def test_the_submit_reads_every_instrument_when_pressed(app):
    """router_inputs() returns what the instruments show, read when called (the ledger's inputs)."""
    _, defs = app.run(defs=_all_committed())
    assert defs["router_inputs"]() == lab15.DEFAULT_INPUTS
    defs["nodes_slider"]._update(2)  # the slider's index into its steps, as the page sends it
    defs["capacity_slider"]._update(0)
    assert defs["router_inputs"]() == {**lab15.DEFAULT_INPUTS, "max_nodes": lab15.NODE_LIMITS[2], "capacity": lab15.CAPACITIES[0]}


# ---- the live-lecture hold (ui.gate, the commits' held=): as tests/test_lecture_hold.py checks Labs 05-13 ----
@pytest.mark.parametrize("key", ["balance", "drops", "cost"])
def test_a_held_question_shows_nothing_of_its_answer_after_commit(key, tmp_path, monkeypatch):
    from lab_hold import check_held_question

    check_held_question(Path(__file__).resolve().parents[1] / "labs" / "15_moe_routing.py", key, tmp_path, monkeypatch)


def test_the_hot_expert_prose_holds_few_tokens_an_expert_are_weight_bound():
    """Section "What the hot expert costs the step" says the engine runs a GPU's experts as one
    grouped GEMM in which, below a few hundred tokens an expert, the weights' bytes and not the
    FLOPs set the time. Checked by hand on the lab's H800 and DeepSeek-V3's expert (fc1 of 2 x
    2,048 outputs over hidden 7,168, 4 experts a GPU): at 64 tokens an expert the FLOPs at the bf16
    peak take 4.6x less time than reading the 4 experts' bf16 weights once at the HBM's datasheet
    rate, and the engine's time is at least that read; at 4,096 tokens the FLOPs take the longer."""
    from labs.core.engine.gemm import grouped_gemm_time
    from labs.core.scenarios import lab11

    gpu, model = lab11.moe_cluster().gpu, lab11.moe_model()
    n, k, experts = 2 * model.expert_ffn, model.hidden, 4
    weights_s = experts * 2 * n * k / gpu.hbm_bytes_per_s  # bf16 weights read once
    for tokens, weight_bound in ((64, True), (4096, False)):
        flops_s = experts * 2 * tokens * n * k / gpu.bf16_flops
        engine_s = grouped_gemm_time(gpu, tokens, n, k, groups=experts)
        print(f"{tokens} tokens an expert: FLOPs at peak {flops_s * 1e6:.1f} us, weights at the datasheet HBM rate {weights_s * 1e6:.1f} us, engine {engine_s * 1e6:.1f} us")
        assert (weights_s > flops_s) == weight_bound
        assert engine_s >= max(weights_s, flops_s)

"""Per-student variants (labs.variants): every variant in a lab's range keeps exactly one right
answer with room to spare, computed by the engine at that variant; ids spread over numbers and
keys; the same id and salt give the same lab; the grader regenerates a variant from a ledger,
grades at it and flags a record that differs. The checks are of structure and of agreement with
the engine (whose numbers move as it improves), not of typed-in numbers."""

from __future__ import annotations

import itertools
import json

import pytest

from labs import variants
from labs.core.hardware import GPUS
from labs.variants import Draw, Numeric, variant

LABS = ("05_parallelism", "06_zero_sweep", "07_pipeline_visualizer", "08_collectives", "09_64gpu_design", "10_failures_at_scale", "11_long_context_moe")
IDS = [f"student-{i:03d}" for i in range(200)]


class Every(Draw):
    """A Draw that picks the combination `picks` names (index per pick name), recording the
    names and sizes it meets, so a lab's whole range can be walked."""

    def __init__(self, picks: dict[str, int]):
        super().__init__("walk")
        self.picks, self.sizes = picks, {}

    def choice(self, name, values):
        values = tuple(values)
        self.sizes[name] = len(values)
        return values[self.picks.get(name, 0)]


def every_setting(lab: str) -> list[dict]:
    """Every settings dict a lab's draw can produce (its picks are independent and few)."""
    recipe = variants.registry()[lab]
    probe = Every({})
    recipe.draw(probe)
    names = sorted(probe.sizes)
    out = []
    for combo in itertools.product(*(range(probe.sizes[n]) for n in names)):
        out.append(recipe.draw(Every(dict(zip(names, combo)))))
    unique = {json.dumps(s, sort_keys=True): s for s in out}
    return list(unique.values())


def built(lab: str, settings: dict) -> dict:
    return variants.registry()[lab].build(settings)


# ---- every variant keeps one right answer, with a margin ------------------------------------------
def _one_claim(claims: dict, facts) -> str:
    held = [k for k, claim in claims.items() if claim(facts)]
    assert len(held) == 1, f"claims holding: {held}"
    return held[0]


def margins_05(s, q):
    from labs.core.scenarios import lab05

    f = lab05.act1_facts(params_b=s["params_b"])
    assert _one_claim(lab05.ACT1_CLAIMS, f) == q["cause"].correct
    # B's claim with room: bytes flat, compute an order smaller, the reduction well past half the compute
    assert f["bytes_ratio"] < 1.3 and f["compute_ratio"] < 0.05 and f["exposed_over_compute"] > 0.75, f
    assert f["latency_share"] < 0.4 and f["across_nodes_gbs"] > 0.6 * f["nvlink_gbs"], f
    ests = lab05.act2_option_estimates(s["design_batch"])
    fitting = sorted((e.mfu for e in ests.values() if e.fits), reverse=True)
    assert ests[q["design"].correct].mfu == fitting[0] and fitting[0] - fitting[1] > 0.05, fitting


def margins_06(s, q):
    from labs.core.scenarios import lab06

    fit = q["fit"]
    assert isinstance(fit, Numeric) and fit.answer >= 1
    act = lab06.fit_activations(s)
    n = int(fit.answer)
    hbm = GPUS[s["gpu"]].hbm_bytes
    assert lab06.dp_memory(lab06.FIT_MODEL, n, lab06.FIT_STAGE, act).total <= hbm < lab06.dp_memory(lab06.FIT_MODEL, n - 1, lab06.FIT_STAGE, act).total
    assert abs(lab06.VENDOR_CLAIM_GPUS - fit.answer) > 1.5 * fit.tolerance, "the vendor's one server must not pass"
    f = lab06.zero2_facts(s["accumulation"])
    assert _one_claim(lab06.ZERO2_CLAIMS, f) == q["zero2"].correct
    assert f["accumulated"] >= 2 and abs(f["one"] - 1) < 0.005, f


def margins_07(s, q):
    from labs.core.pipeline import bubble_fraction

    p, m = s["seed_p"], s["seed_m"]
    u = q["utilisation"]
    for misread in (1 - (p - 1) / m, 1 - p / (m + p), m / (m + p)):  # bubble over ideal time; p slots
        assert abs(100 * misread - u.answer) > 1.5 * u.tolerance, (p, m, misread, u.answer)
    mb = q["microbatches"]
    bubbles = {o.key: bubble_fraction(s["deep_p"], int(o.label), "1f1b", 1, "total") for o in mb.options}
    under = [k for k, b in bubbles.items() if b < s["target"]]
    assert mb.correct == min(under, key=lambda k: int(next(o.label for o in mb.options if o.key == k)))
    assert len({o.label for o in mb.options}) == len(mb.options), "options must differ"
    for k, b in bubbles.items():
        if k not in under:
            assert b > 1.5 * s["target"], (k, b)


def margins_08(s, q):
    from labs.core.scenarios import lab08

    ring = q["ring"]
    for misread in (s["ring_gb"], 2 * s["ring_gb"], s["ring_gb"] * s["ring_n"]):  # once, exactly twice, N times
        assert abs(misread - ring.answer) > 1.5 * ring.tolerance, (misread, ring.answer)
    f = lab08.bucket_facts(s["bucket_bytes"], s["bucket_nodes"])
    assert _one_claim(lab08.BUCKET_CLAIMS, f) == q["bucket"].correct
    assert f["lead"] > 1.5, f


def margins_09(s, q):
    from labs.core.scenarios import lab09

    mb = s["micro_batch"]
    assert _one_claim(lab09.DP64_CLAIMS, lab09.dp64_facts(mb)) == q["dp64"].correct
    for job in lab09.reference_estimates(mb).values():
        for e in (job["DP=64, ZeRO-0"], job["DP=64, ZeRO-3"]):
            hbm = e.cluster.gpu.hbm_bytes
            assert abs(e.memory.total - hbm) > 0.1 * hbm, (e.model.name, mb, e.memory.total / 1e9)


def margins_10(s, q):
    from labs.core.scenarios import lab10

    mtbf = q["mtbf"]
    assert mtbf.answer > 1 and mtbf.tolerance < mtbf.answer / 2
    assert _one_claim(dict(zip("ABCD", (lambda c, k=k: c[k] for k in "ABCD"))), lab10.cadence_claims(s["gpus"])) == q["cadence"].correct
    f = lab10.cadence_margins(s["gpus"])
    assert f["best_over_often"] > 0.005 and f["best_over_daily"] > 0.1 and f["async_spread"] > 0.1, f


def margins_11(s, q):
    from labs.core.scenarios import lab11

    ests = lab11.fit_estimates_at(s["seq_len"], s["cp"])
    assert _one_claim(lab11.FIT_CLAIMS, {k: e.fits for k, e in ests.items()}) == q["fit"].correct
    for name in ("plain", "full", "cp"):
        hbm = ests[name].cluster.gpu.hbm_bytes
        assert abs(ests[name].memory.total - hbm) > 0.1 * hbm, (name, s, ests[name].memory.total / 1e9)
    f = lab11.moe_facts(s["ep"], s["max_nodes"])
    assert _one_claim(lab11.MOE_CLAIMS, f) == q["moe"].correct
    assert f["moe"] > 2 * f["dense"] and f["a2a"] > 5 * max(f["grad_increase"], 0.0), f


MARGINS = {"05_parallelism": margins_05, "06_zero_sweep": margins_06, "07_pipeline_visualizer": margins_07, "08_collectives": margins_08,
           "09_64gpu_design": margins_09, "10_failures_at_scale": margins_10, "11_long_context_moe": margins_11}


@pytest.mark.parametrize("lab", LABS)
def test_every_variant_keeps_one_right_answer_with_room(lab):
    settings = every_setting(lab)
    assert len(settings) >= 2, "a lab's variants must differ"
    for s in settings:
        q = built(lab, s)
        for name, spec in q.items():
            if isinstance(spec, Numeric):
                continue
            assert spec.correct in {o.key for o in spec.options}, (lab, s, name)
            assert all(o.misconception for o in spec.options), f"{lab} {name}: every option carries a misconception"
            lengths = [len(o.label) for o in spec.options]
            assert max(lengths) <= 1.6 * min(lengths) or max(lengths) - min(lengths) <= 20, (lab, name, lengths)
        MARGINS[lab](s, q)


# ---- ids, salts and keys ----------------------------------------------------------------------------
@pytest.mark.parametrize("lab", LABS)
def test_ids_spread_numbers_and_keys(lab):
    drawn = [variant(lab, i) for i in IDS]
    assert variant(lab, IDS[0]) == drawn[0] and variant(lab, f"  {IDS[0]} ") == drawn[0], "the same id gives the same lab"
    assert len({json.dumps(v.settings, sort_keys=True) for v in drawn}) >= 2, "ids must see different numbers"
    assert drawn[0].seed != drawn[1].seed
    choice = [q for q in drawn[0].questions if not drawn[0].questions[q].numeric]
    numeric = [q for q in drawn[0].questions if drawn[0].questions[q].numeric]
    varied = [q for q in choice if len({v.questions[q].key for v in drawn}) == 4]
    varied += [q for q in numeric if len({v.questions[q].spec.answer for v in drawn}) >= 2]
    assert len(varied) * 2 >= len(drawn[0].questions), f"{lab}: questions whose key or number varies: {varied}"
    for q in choice:  # keys spread over A-D: none holds more than half the ids
        keys = [v.questions[q].key for v in drawn]
        assert max(keys.count(k) for k in "ABCD") < len(keys) / 2, (lab, q)


def test_the_salt_changes_the_lab_and_the_ledger_keeps_only_its_fingerprint():
    a, b = variant("07", "ada", salt="fall-2026"), variant("07", "ada", salt="spring-2027")
    assert a.seed != b.seed and a.salt != b.salt
    assert "fall-2026" not in json.dumps(a.record())
    assert variant("07", "ada", salt="fall-2026") == a


def test_the_cli_prints_the_variant(capsys):
    assert variants.main(["7", "ada", "--salt", "s"]) == 0
    out = json.loads(capsys.readouterr().out)
    v = variant("07", "ada", salt="s")
    assert out["lab"] == "07_pipeline_visualizer" and out["variant"] == v.seed and out["settings"] == v.settings
    assert out["questions"]["microbatches"]["key"] == v.questions["microbatches"].key
    assert out["questions"]["utilisation"]["answer"] == pytest.approx(v.questions["utilisation"].spec.answer)
    assert {"answer", "tolerance"} <= set(out["questions"]["utilisation"])
    assert variants.main(["99", "ada"]) == 2


def test_python_m_labs_variants_finds_every_lab():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "labs.variants", "10", "ada", "--salt", "s"], capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["settings"] == variant("10", "ada", salt="s").settings


def test_a_numeric_answer_is_judged_within_its_tolerance():
    q = variant("10", "ada").questions["mtbf"]
    assert q.judge(f"{q.spec.answer:.1f}") and q.judge(str(q.spec.answer + 0.9 * q.spec.tolerance))
    assert not q.judge(str(q.spec.answer + 1.1 * q.spec.tolerance))
    assert not q.judge("many") and not q.judge("nan") and not q.judge(None)


# ---- the grader --------------------------------------------------------------------------------------
def _ledger(tmp_path, student, salt=None, tamper=None):
    from labs.core.scenarios.lab07 import pipeline_outcomes
    from labs.core.state import DesignLedger

    v = variant("07", student, salt)
    ledger = DesignLedger(student, directory=tmp_path)
    micro = v.questions["microbatches"]
    wrong = next(o.key for o in micro.options if o.key != micro.key)
    util = f"{v.questions['utilisation'].spec.answer:.1f}"
    ledger.commit_prediction(v.lab, "utilisation", util, variant=v.record())
    ledger.commit_prediction(v.lab, "microbatches", wrong, variant=v.record())
    inputs = dict(p=4, m=8, schedule="1f1b", v=1, tf=1.0, tb=1.0, tw=1.0)
    preds = {"utilisation": util, "microbatches": wrong}
    ledger.save_step(v.lab, "pipeline", inputs, preds, pipeline_outcomes(inputs, preds, variant=v), variant=v.record())
    if tamper:
        doc = json.loads(ledger.path.read_text())
        tamper(doc["variants"][v.lab])
        ledger.path.write_text(json.dumps(doc))
    return v


def test_the_grader_regenerates_the_variant_and_grades_at_it(tmp_path):
    from labs.grade import grade

    v = _ledger(tmp_path, "ada", salt="s")
    table, problems = grade([str(tmp_path)], salt="s")
    row = table.iloc[0]
    assert not problems and row["status"] == "ok" and not row["tampered"], row["status"]
    assert row["variant"] == v.seed and row["utilisation_correct"] and not row["microbatches_correct"]
    micro = v.questions["microbatches"]
    assert row["option.microbatches"] == micro.option_id(row["answer.microbatches"]) != micro.spec.correct  # the option named, whatever its letter


@pytest.mark.parametrize("tamper", [
    lambda rec: rec["settings"].update(deep_p=rec["settings"]["deep_p"] * 2),
    lambda rec: rec["questions"]["microbatches"]["order"].reverse(),
    lambda rec: rec["questions"]["utilisation"].update(answer=rec["questions"]["utilisation"]["answer"] + 10),
])
def test_the_grader_flags_a_recorded_variant_that_differs(tmp_path, tamper):
    from labs.grade import grade

    _ledger(tmp_path, "bo", salt="s", tamper=tamper)
    table, _ = grade([str(tmp_path)], salt="s")
    row = table.iloc[0]
    assert row["tampered"] and "recorded variant differs" in row["status"], row["status"]


def test_the_grader_flags_another_salt(tmp_path):
    from labs.grade import grade

    _ledger(tmp_path, "cy", salt="s")
    row = grade([str(tmp_path)], salt="not-s")[0].iloc[0]
    assert row["tampered"] and "another class salt" in row["status"]


def test_a_ledger_without_a_variant_is_graded_as_before(tmp_path):
    from labs.core.scenarios.lab07 import microbatch_answer, pipeline_outcomes, utilisation_answer
    from labs.core.state import DesignLedger
    from labs.grade import grade

    ledger = DesignLedger("old", directory=tmp_path)
    preds = {"utilisation": utilisation_answer(), "microbatches": microbatch_answer()}
    for q, a in preds.items():
        ledger.commit_prediction("07_pipeline_visualizer", q, a)
    inputs = dict(p=4, m=8, schedule="1f1b", v=1, tf=1.0, tb=1.0, tw=1.0)
    ledger.save_step("07_pipeline_visualizer", "pipeline", inputs, preds, pipeline_outcomes(inputs, preds))
    row = grade([str(tmp_path)])[0].iloc[0]
    assert row["status"] == "ok" and row["variant"] == "" and row["right"] == 2

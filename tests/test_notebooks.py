"""Labs run headless: locked by default, every option judged by the engine, submit lands in
the ledger; `marimo check --strict` and `marimo export html` pass for every lab."""

import importlib.util
import json
from pathlib import Path

import marimo as mo
import pytest

pytestmark = pytest.mark.usefixtures("ledger_dir")

from labs.core.scenarios.lab05 import dp_wall_estimate
from marimo_cli import exported, start_exports, strict_check_failure
from labs.core.state import DesignLedger, load_schema

ROOT = Path(__file__).resolve().parents[1]
LABS = sorted((ROOT / "labs").glob("[0-9][0-9]_*.py"))
FLAGSHIP = ROOT / "labs" / "05_parallelism.py"


def load_app(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem.replace("0", "lab0", 1), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


_SHARED_APPS: dict[Path, object] = {}


def shared_app(path: Path):
    """The notebook at `path` loaded once for the session (a load has marimo compile every cell:
    0.1-0.3 s of CPU a lab). Each app.run() is a run of its own in the calling test's environment:
    no lab reads the environment when it is loaded."""
    if path not in _SHARED_APPS:
        _SHARED_APPS[path] = load_app(path)
    return _SHARED_APPS[path]


def answered(options, key):
    return mo.ui.radio(options={f"{o.key}) {o.label}": o.key for o in options}, value=next(f"{o.key}) {o.label}" for o in options if o.key == key))


class Commit:
    """Stands in for a lab's [commit, skip] buttons with one of them pressed."""

    def __init__(self, skip: bool = False):
        self.value = [not skip, skip]

    def _mime_(self):
        return "text/plain", "committed"


def mine(lab: str, question: str, student: str | None = None):
    """A question as a headless run sees it: the variant of `student`, by default the id a lab
    uses with no name typed (LABS_STUDENT, else "student"; labs.variants)."""
    import os

    from labs.variants import variant

    return variant(lab, student or os.environ.get("LABS_STUDENT") or "student").questions[question]


def committed(prefix: str, options, key) -> dict:
    """defs that answer a lab's prediction `prefix` with `key` and press commit (None: skip).
    `options` is a list of options, or a variant's question (labs.variants.Question): then `key`
    is one of its letters, or for a numeric question the number typed."""
    if getattr(options, "numeric", False):
        widget = mo.ui.number(value=None if key is None else float(key))
        return {f"{prefix}_question": widget, f"{prefix}_commit_buttons": Commit(skip=key is None)}
    options = getattr(options, "options", options)
    radio = answered(options, key) if key else mo.ui.radio(options={f"{o.key}) {o.label}": o.key for o in options})
    return {f"{prefix}_question": radio, f"{prefix}_commit_buttons": Commit(skip=key is None)}


def right(question) -> object:
    """The answer the engine judges right at the headless run's variant: a letter or a number."""
    return question.spec.answer if question.numeric else question.key


def wrong(question) -> object:
    """An answer judged wrong there: another letter, or a number three tolerances off."""
    if question.numeric:
        return question.spec.answer + 3 * question.spec.tolerance
    return next(o.key for o in question.options if o.key != question.key)


class Pressed:
    """Stands in for a clicked mo.ui.run_button."""

    value = True

    def _mime_(self):
        return "text/plain", "pressed"


_DEFAULTS = {}


def with_instruments(app, panel: str, **changed) -> dict:
    """A lab makes its instruments, and their panel `panel`, in one cell, so app.run(defs=...)
    must be given all of that cell's widgets: the lab's own, with `changed` swapped in."""
    if id(app) not in _DEFAULTS:
        _DEFAULTS[id(app)] = app.run()[1]
    cell = next(c for c in app._cell_manager.cells() if panel in c.defs)
    return {name: changed.get(name, _DEFAULTS[id(app)][name]) for name in cell.defs}


def text_of(outputs) -> str:
    parts = []
    for out in outputs:
        if out is None:
            continue
        parts.append(out.text if hasattr(out, "text") else str(out))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def app():
    return shared_app(FLAGSHIP)


def test_locked_by_default(app):
    outputs, defs = app.run()
    for name in ("act1_curve", "act1_current", "act2_estimate", "submitted"):
        assert name not in defs
    assert "Commit to a prediction" in text_of(outputs)


C1, C2 = (mine("05_parallelism", q) for q in ("cause", "design"))  # Act I's and Act II's questions at the headless variant
def mine_variant(lab: str):
    from labs.variants import variant

    return variant(lab, "student")


def _params_b() -> int:
    return mine_variant("05_parallelism").settings["params_b"]


def test_stakeholder_figures_are_the_engines(app):
    from labs.core.scenarios.lab05 import act1_story_facts

    outputs, _ = app.run()
    text = text_of(outputs)
    for mfu in act1_story_facts(mine_variant("05_parallelism").settings)["mfu"]:
        assert f"{mfu:.0%}" in text


def strong_512() -> dict:
    """Act I's instruments at a fixed batch of 512 sequences with Megatron's buckets, whatever the headless variant's runs."""
    return {"scaling_radio": mo.ui.radio(options={"fixed global batch (strong scaling)": False, "fixed per-GPU batch (weak scaling)": True},
                                         value="fixed global batch (strong scaling)"),
            "batch_dropdown": mo.ui.dropdown(options={"512 sequences": 512}, value="512 sequences"),
            "fabric_dropdown": mo.ui.dropdown(options={"InfiniBand NDR 400 Gb/s": "ib-ndr"}, value="InfiniBand NDR 400 Gb/s"),
            "bucket_dropdown": mo.ui.dropdown(options={"Megatron's default": 0}, value="Megatron's default")}


def test_unlocked_instruments_match_the_engine(app):
    _, defs = app.run(defs={**committed("act1", C1, C1.key), **with_instruments(app, "act1_instruments", gpus_slider=mo.ui.slider(steps=[8, 64, 512], value=512),
                                                                                 **strong_512())})
    assert defs["act1_current"].mfu == pytest.approx(dp_wall_estimate(512, params_b=_params_b()).mfu)
    assert [e.cluster.gpus for e in defs["act1_curve"]] == [8, 16, 32, 64, 128, 256, 512]  # 1024 GPUs cannot split 512 sequences


@pytest.mark.parametrize("key", [o.key for o in C1.options])
def test_act1_feedback_agrees_with_the_engine(app, key):
    outputs, _ = app.run(defs={**committed("act1", C1, key)})
    correct = C1.key
    text = text_of(outputs)
    assert ("**Right.**" in text or "Right." in text) == (key == correct)


@pytest.mark.parametrize("key", [o.key for o in C2.options])
def test_act2_feedback_agrees_with_the_engine(app, key):
    # Act I answered wrongly, so any "Right." on the page is Act II's verdict.
    outputs, defs = app.run(defs={**committed("act2", C2, key), **committed("act1", C1, wrong(C1))})
    text = text_of(outputs)
    assert ("Right." in text) == (key == C2.key)
    assert text.count(f"engine says {C2.key}") == (key != C2.key) + (C1.key == C2.key)  # Act I's wrong answer gets its own
    _assert_act2_starts_at_pure_dp(defs["act2_estimate"], mine_variant("05_parallelism").settings)


def _assert_act2_starts_at_pure_dp(est, settings):
    """Act II's instruments start at pure data parallelism (TP 1, PP 1, micro-batch 1) for the variant's model."""
    from labs.core.scenarios.lab05 import design_estimate, design_model_of, design_plan, design_platform_of, design_inputs

    model_key = design_model_of(settings)
    expected = design_estimate(design_plan(1, 1, 1, int(settings["design_batch"])), model_key, design_platform_of(settings))
    assert est.model.name == design_inputs(model_key)[0].name and (est.plan.tp, est.plan.pp, est.plan.micro_batch) == (1, 1, 1)
    assert est.mfu == pytest.approx(expected.mfu, rel=1e-9) and est.fits == expected.fits


@pytest.mark.parametrize("model_key", ["gpt3-175b", "llama2-70b", "llama3-70b"])  # lab05.DESIGN_MODELS_V6
def test_act2_follows_the_variants_model(app, ledger_dir, model_key):
    """Act II's stakeholder, instruments, reveal and reflection are the variant's model's: the
    message names it, the instruments start at pure DP for it, the reveal judges the key right and
    prints the engine's line for each option, and the reflection quotes TP 8 against TP 16 for it."""
    from labs.core.scenarios.lab05 import design_inputs, tp_reflection
    from labs.variants import variant

    student = next(f"model-{i}" for i in range(400) if variant("05_parallelism", f"model-{i}").settings["design_model"] == model_key)
    v = variant("05_parallelism", student)
    c1, c2 = v.questions["cause"], v.questions["design"]
    outputs, defs = app.run(defs={**committed("act1", c1, wrong(c1)), **committed("act2", c2, c2.key), "student_input": mo.ui.text(value=student)})
    text = text_of(outputs)
    model = design_inputs(model_key)[0]
    assert f"for {model.name} ({model.params / 1e9:.1f}B parameters" in text
    _assert_act2_starts_at_pure_dp(defs["act2_estimate"], v.settings)
    assert "Right." in text
    import html

    for letter, line in c2.explanations.items():
        assert line and line in html.unescape(text), (letter, line)
    r = tp_reflection(v.settings)
    assert f"<strong>{r['inside'].time.tp_comm:.2f} s</strong>" in text and f"<strong>{r['across'].time.tp_comm:.2f} s</strong>" in text
    assert r["inside"].time.tp_comm < r["across"].time.tp_comm and r["across"].plan.tp > r["across"].cluster.gpus_per_node


def test_submit_writes_both_steps_to_a_valid_ledger(app, ledger_dir):
    t1, t2 = (mine("05_parallelism", q, "headless tester") for q in ("cause", "design"))
    _, defs = app.run(defs={
        **committed("act1", t1, t1.key),
        **committed("act2", t2, t2.key),
        "student_input": mo.ui.text(value="headless tester"),
        "submit_button": Pressed(),
    })
    doc = defs["submitted"]
    steps = doc["labs"]["05_parallelism"]
    assert steps["act1"]["outcomes"]["prediction_correct"] is True
    assert steps["act2"]["inputs"]["tp"] == 1 and steps["act2"]["inputs"]["pp"] == 1
    from labs.variants import variant as _variant
    from labs.core.scenarios.lab05 import design_estimate, design_model_of, design_plan

    settings = _variant("05_parallelism", "headless tester").settings
    assert steps["act2"]["outcomes"]["fits"] is design_estimate(design_plan(1, 1, 1, settings["design_batch"]), design_model_of(settings)).fits
    import jsonschema
    saved = json.loads(DesignLedger("headless tester", ledger_dir).path.read_text())
    jsonschema.validate(saved, load_schema())


def test_commit_records_the_prediction_and_submit_the_design(app, ledger_dir):
    """Committing writes the answer and its time to the ledger at once; no design step is saved
    until the submit button is pressed."""
    app.run(defs={**committed("act1", C1, C1.key), **committed("act2", C2, C2.key)})
    doc = DesignLedger(None, ledger_dir).load()
    assert doc["predictions"]["05_parallelism"]["cause"]["answer"] == C1.key
    assert doc["predictions"]["05_parallelism"]["design"]["answer"] == C2.key
    assert doc["variants"]["05_parallelism"]["settings"] == mine_variant("05_parallelism").settings
    assert doc["labs"] == {}


def test_committed_answer_survives_a_change(app, ledger_dir):
    """A second commit with another answer is recorded as a change; the reveal and the saved
    outcome keep judging the first commitment."""
    app.run(defs=committed("act1", C1, C1.key))
    outputs, defs = app.run(defs=committed("act1", C1, wrong(C1)))
    record = DesignLedger(None, ledger_dir).committed("05_parallelism", "cause")
    assert record["answer"] == C1.key and [c["answer"] for c in record["changes"]] == [wrong(C1)]
    assert defs["act1_committed"].answer == C1.key
    text = text_of(outputs)
    assert "Right." in text and f"Later answers are recorded as changes: {wrong(C1)}" in text


def test_skipped_prediction_is_recorded_as_skipped(app, ledger_dir):
    outputs, defs = app.run(defs=committed("act1", C1, None))
    assert DesignLedger(None, ledger_dir).committed("05_parallelism", "cause")["answer"] is None
    assert defs["act1_committed"].skipped and "You skipped this prediction" in text_of(outputs)
    assert "act1_current" in defs  # skipping opens the instruments too


def test_nothing_gives_the_answer_away_before_the_commit(app):
    """Choosing an option without committing unlocks nothing: no reveal, no equations, no
    takeaways, no instruments."""
    outputs, defs = app.run(defs={"act1_question": answered(C1.options, C1.key), "act2_question": answered(C2.options, C2.key)})
    text = text_of(outputs)
    for hidden in ("engine says", "Right.", "Key takeaways", "The equations behind", "Reflection"):
        assert hidden not in text
    assert "act1_current" not in defs and "act2_estimate" not in defs


@pytest.mark.parametrize("lab", LABS, ids=[p.name for p in LABS])
def test_marimo_check_strict(lab):
    failure = strict_check_failure(lab)  # one check run for every notebook (tests/marimo_cli.py)
    assert not failure, failure


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """The folder where every lab's `marimo export html` runs, all started at once."""
    folder = tmp_path_factory.mktemp("exports")
    start_exports(LABS, folder)
    return folder


@pytest.mark.parametrize("lab", LABS, ids=[p.name for p in LABS])
def test_export_html_exits_0(lab, exports):
    result, out = exported(lab, exports)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert out.stat().st_size > 10_000


def test_invalid_setting_is_explained_at_submit(app, ledger_dir):
    """Act I at 1,024 GPUs cannot split 512 sequences: submit saves Act II, says why Act I was
    not saved, and keeps the submit row."""
    outputs, defs = app.run(defs={
        **committed("act1", C1, C1.key),
        **committed("act2", C2, C2.key),
        **with_instruments(app, "act1_instruments", gpus_slider=mo.ui.slider(steps=[8, 1024], value=1024), **strong_512()),
        "submit_button": Pressed(),
    })
    text = text_of(outputs)
    assert defs["act1_current"] is None
    assert "act1 not saved: its setting is invalid" in text and "Saved act2 to" in text
    assert list(defs["submitted"]["labs"]["05_parallelism"]) == ["act2"]
    assert "Submit my design to the ledger" in text or "pressed" in text

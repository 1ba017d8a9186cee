"""The grader: a valid class, committed predictions, tampering, identity, and every kind of hostile
file and input, none of which may stop the grading of the others."""

import csv
import json
import math
import os


from labs.core import state
from labs.core.scenarios.lab05 import act1_correct_option, act1_outcomes, act2_best_option, act2_outcomes
from labs.core.scenarios.lab07 import pipeline_outcomes
from labs.core.engine.pipeline import MAX_TIMELINE_OPS
from labs.core.state import DesignLedger, Roster
from labs.grade import grade, main, shown, summary

ACT1_INPUTS = dict(gpus=64, global_batch=512, fixed_per_gpu=False, fabric="ib-ndr", algorithm="ring", overlap=True, params_b=7)
ACT2_INPUTS = dict(tp=8, pp=8, dp=16, micro_batch=1, global_batch=1536, zero_stage=1, recompute="selective", sequence_parallel=True, flash_attention=True)
PIPE_INPUTS = dict(p=4, m=8, schedule="1f1b", v=1, tf=1.0, tb=2.0, tw=1.0)
RIGHT1, RIGHT2 = act1_correct_option(), act2_best_option()
WRONG1, WRONG2 = next(k for k in "ABCD" if k != RIGHT1), next(k for k in "ABCD" if k != RIGHT2)


def write_student(folder, name, cause=RIGHT1, design=RIGHT2):
    ledger = DesignLedger(name, folder)
    ledger.save_step("05_parallelism", "act1", ACT1_INPUTS, {"cause": cause}, act1_outcomes(ACT1_INPUTS, {"cause": cause}))
    ledger.save_step("05_parallelism", "act2", ACT2_INPUTS, {"design": design}, act2_outcomes(ACT2_INPUTS, {"design": design}))
    return ledger.path


def hostile(folder, name, lab, step, inputs, predictions=None):
    """A ledger written as a student could hand it in: any inputs, through the same schema."""
    doc = {"schema_version": 1, "student": name, "engine_version": "0", "created": "t", "updated": "t",
           "labs": {lab: {step: {"saved": "t", "inputs": inputs, "predictions": predictions or {}, "outcomes": {}}}}}
    path = folder / state.ledger_filename(name)
    path.write_text(json.dumps(doc))
    return path


def test_valid_class_is_graded_scored_and_summarised(tmp_path, capsys):
    write_student(tmp_path, "ann")
    write_student(tmp_path, "bob", cause=WRONG1, design=WRONG2)
    table, problems = grade([str(tmp_path)])
    assert not problems and len(table) == 4 and set(table.status) == {"ok"}
    right = table.set_index(["student", "step"])["prediction_correct"]
    assert right[("ann", "act1")] and right[("ann", "act2")] and not right[("bob", "act1")] and not right[("bob", "act2")]
    assert main([str(tmp_path), "--csv", str(tmp_path / "out.csv"), "--strict"]) == 0
    out = capsys.readouterr().out
    assert "05_parallelism" in out and "2/2" in out and "0/2" in out
    assert "50% of 2" in out  # the summary's share of right predictions over the two clean rows
    with open(tmp_path / "out.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4 and {r["student"] for r in rows} == {"ann", "bob"}


def test_every_lab_has_a_score_in_the_terminal_table(tmp_path, capsys):
    from labs.core.scenarios.lab06 import fit_answer, zero2_answer, zero_sweep_outcomes

    ledger = DesignLedger("cam", tmp_path)
    sweep = dict(model="llama2-70b", gpu="h100-sxm", optimizer_state="fp32", micro_batch=1, seq_len=4096, recompute="full",
                 flash_attention=True, offload=False, dp=8, zero_stage=3, microbatches=1)
    preds = {"fit": fit_answer(), "zero2": zero2_answer()}
    ledger.save_step("06_zero_sweep", "sweep", sweep, preds, zero_sweep_outcomes(sweep, preds))
    pipe_preds = {"utilisation": "A", "microbatches": "A"}
    ledger.save_step("07_pipeline_visualizer", "pipeline", PIPE_INPUTS, pipe_preds, pipeline_outcomes(PIPE_INPUTS, pipe_preds))
    ledger.save_step("05_parallelism", "act1", ACT1_INPUTS, {"cause": RIGHT1}, act1_outcomes(ACT1_INPUTS, {"cause": RIGHT1}))
    assert main([str(tmp_path)]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert "05_parallelism" in header and "06_zero_sweep" in header and "07_pipeline_visualizer" in header
    pipe_right = sum(pipeline_outcomes(PIPE_INPUTS, pipe_preds)[k] for k in ("utilisation_correct", "microbatches_correct"))
    assert row.split()[2:5] == ["1/1", "2/2", f"{pipe_right}/2"]


def test_tampered_outcome_is_flagged_and_left_out_of_the_averages(tmp_path, capsys):
    write_student(tmp_path, "ann")
    path = write_student(tmp_path, "eve", cause=WRONG1)
    doc = json.loads(path.read_text())
    doc["labs"]["05_parallelism"]["act1"]["outcomes"]["prediction_correct"] = True
    doc["labs"]["05_parallelism"]["act2"]["outcomes"]["mfu"] = 0.99
    path.write_text(json.dumps(doc))
    table, _ = grade([str(tmp_path)])
    eve = table[table.student == "eve"].set_index("step")
    assert "prediction_correct" in eve.status["act1"] and "mfu" in eve.status["act2"] and eve.tampered.all()
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "100% of 1" in out  # act1: only ann's clean row is averaged
    assert main([str(tmp_path), "--strict"]) == 1


# ---- committed predictions -------------------------------------------------------------------
def test_the_committed_answer_is_graded_and_changes_are_counted(tmp_path):
    ledger = DesignLedger("cy", tmp_path)
    ledger.commit_prediction("05_parallelism", "cause", RIGHT1)
    ledger.commit_prediction("05_parallelism", "cause", WRONG1)  # changed after the reveal
    ledger.commit_prediction("05_parallelism", "design", WRONG2)
    ledger.commit_prediction("05_parallelism", "design", RIGHT2)
    ledger.save_step("05_parallelism", "act1", ACT1_INPUTS, {"cause": WRONG1}, act1_outcomes(ACT1_INPUTS, {"cause": WRONG1}))
    ledger.save_step("05_parallelism", "act2", ACT2_INPUTS, {"design": RIGHT2}, act2_outcomes(ACT2_INPUTS, {"design": RIGHT2}))
    table, _ = grade([str(tmp_path)])
    rows = table.set_index("step")
    assert list(rows.status) == ["ok", "ok"] and not rows.tampered.any()  # stored outcomes match what the lab showed
    assert rows.loc["act1", "answer.cause"] == RIGHT1 and rows.loc["act1", "prediction_correct"] == True  # noqa: E712
    assert rows.loc["act2", "answer.design"] == WRONG2 and rows.loc["act2", "prediction_correct"] == False  # noqa: E712
    assert list(rows.changes) == [1, 1] and set(rows.answers_from) == {"commit"}
    # a change is no flag (newcomer review: half the synthetic class was flagged for it): both rows count in the summary
    assert list(summary(table)["flagged (left out)"]) == [0, 0]


def test_a_skipped_prediction_is_skipped_not_wrong(tmp_path, capsys):
    ledger = DesignLedger("dee", tmp_path)
    ledger.commit_prediction("05_parallelism", "cause", None)
    ledger.save_step("05_parallelism", "act1", ACT1_INPUTS, {"cause": None}, act1_outcomes(ACT1_INPUTS, {"cause": None}))
    table, _ = grade([str(tmp_path)])
    row = table.iloc[0]
    assert row["answer.cause"] == "skipped" and row["prediction_correct"] is None and row["skipped"] == 1 and row["status"] == "ok"
    main([str(tmp_path)])
    assert "0/0 (1 skipped)" in capsys.readouterr().out


# ---- identity --------------------------------------------------------------------------------
def test_duplicate_and_mismatched_identities_are_flagged(tmp_path):
    alice = write_student(tmp_path, "alice")
    copy = tmp_path / "handed_in_again.json"
    copy.write_bytes(alice.read_bytes())
    bob = write_student(tmp_path, "bob")
    doc = json.loads(bob.read_text())
    doc["student"] = "mallory"  # bob's file now claims to be mallory's
    bob.write_text(json.dumps(doc))
    write_student(tmp_path, "carol")
    table, _ = grade([str(tmp_path)])
    flags = table.groupby("file")["identity"].first()
    assert "same id in 1 other file(s): handed_in_again.json" in flags[str(alice)]
    assert "same id in 1 other file(s)" in flags[str(copy)]
    assert flags[str(bob)] == "file named for another id"
    assert flags[str(tmp_path / state.ledger_filename("carol"))] == ""
    assert main([str(tmp_path), "--strict"]) == 1


def test_roster_flags_ids_that_are_not_on_it(tmp_path):
    write_student(tmp_path / "in", "ann")
    write_student(tmp_path / "in", "zed")
    roster = tmp_path / "roster.csv"
    roster.write_text("student,code\nann,4821-ax\n")
    table, _ = grade([str(tmp_path / "in")], Roster.load(roster))
    assert dict(table.groupby("student").identity.first()) == {"ann": "", "zed": "not on the roster"}


def test_names_are_escaped_in_the_terminal(tmp_path, capsys):
    evil = "eve\x1b[2J\rroot"
    doc_path = write_student(tmp_path, "plain")
    doc = json.loads(doc_path.read_text())
    doc["student"] = evil
    doc_path.write_text(json.dumps(doc))
    main([str(tmp_path), "--csv", str(tmp_path / "g.csv")])
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err and "\r" not in out.out + out.err
    assert shown(evil) in out.out and "invalid id" in out.out
    assert shown("=HYPERLINK(1)") == "=HYPERLINK(1)" and "'=" in _csv_cell(tmp_path, "=cmd|' /C calc'!A0")


def _csv_cell(tmp_path, student):
    folder = tmp_path / "csvcheck"
    write_student(folder, student)
    main([str(folder), "--csv", str(folder / "g.csv")])
    return (folder / "g.csv").read_text()


# ---- hostile files and inputs ------------------------------------------------------------------
HEAD = '{"schema_version": 1, "student": "x", "engine_version": "0", "created": "", "updated": "", '
MALFORMED = {
    "truncated.json": b'{"schema_version": 1, "student": "x", "labs": {',
    "wrong_types.json": json.dumps({"schema_version": 1, "student": 5, "engine_version": "0", "created": "", "updated": "", "labs": []}).encode(),
    "nan.json": (HEAD + '"labs": {"a": {"b": {"saved": "", "inputs": {"x": NaN}, "predictions": {}, "outcomes": {}}}}}').encode(),
    "infinity.json": (HEAD + '"labs": {"a": {"b": {"saved": "", "inputs": {"x": Infinity}, "predictions": {}, "outcomes": {}}}}}').encode(),
    "huge_number.json": (HEAD + '"labs": {"a": {"b": {"saved": "", "inputs": {"x": 1e999}, "predictions": {}, "outcomes": {}}}}}').encode(),
    "deep.json": b"[" * 100000 + b"]" * 100000,
    "empty.json": b"",
    "latin1.json": '{"student": "Jos\xe9"}'.encode("latin-1"),
    "future.json": json.dumps({"schema_version": 7, "student": "x", "labs": {}}).encode(),
    "duplicate_keys.json": (HEAD + '"labs": {}, "labs": {}}').encode(),
    "many_keys.json": json.dumps({"schema_version": 1, "student": "k", "engine_version": "0", "created": "", "updated": "",
                                  "labs": {"05_parallelism": {"act2": {"saved": "", "inputs": {f"k{i}": i for i in range(40000)}, "predictions": {}, "outcomes": {}}}}}).encode(),
}


def test_hostile_files_are_named_and_the_rest_graded(tmp_path, capsys):
    for name, content in MALFORMED.items():
        (tmp_path / name).write_bytes(content)
    (tmp_path / "big.json").write_bytes(b" " * 100_000_000)
    (tmp_path / "link.json").symlink_to(tmp_path / "truncated.json")
    os.mkfifo(tmp_path / "fifo.json")  # opening it for reading would block forever
    (tmp_path / "loop").symlink_to(tmp_path)  # a symlinked folder is not entered
    good = write_student(tmp_path / "class", "../../x")
    assert good.parent == tmp_path / "class"
    table, problems = grade([str(tmp_path)])
    named = {p.split("/")[-1]: why for p, why in problems}
    assert set(named) == set(MALFORMED) | {"big.json", "link.json", "fifo.json", "loop"}
    assert "symlink" in named["link.json"] and "regular" in named["fifo.json"] and "newer" in named["future.json"]
    assert "linked folder; not followed" in named["loop"]
    assert "duplicate key" in named["duplicate_keys.json"] and "more than 200" in named["many_keys.json"]
    assert set(table.student) == {"../../x"} and set(table.status) == {"ok"}
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path), "--strict"]) == 1
    err = capsys.readouterr().err
    for name in MALFORMED:
        assert name in err


HOSTILE_STEPS = {
    "global_batch_10e400": ("05_parallelism", "act1", {**ACT1_INPUTS, "global_batch": 10**400}, "global_batch must be at most"),
    "gpus_huge": ("05_parallelism", "act1", {**ACT1_INPUTS, "gpus": 2**70}, "must be at most"),
    "gpus_as_text": ("05_parallelism", "act1", {**ACT1_INPUTS, "gpus": "64"}, "dp must be a whole number"),
    "gpus_fraction": ("05_parallelism", "act1", {**ACT1_INPUTS, "gpus": 4.5}, "dp must be a whole number"),
    "bucket_tiny": ("05_parallelism", "act2", {**ACT2_INPUTS, "bucket_bytes": 5e-324}, "bucket_bytes must be 0 or between"),
    "plan_huge": ("05_parallelism", "act2", {**ACT2_INPUTS, "micro_batch": 10**300}, "must be at most"),
    "unknown_field": ("05_parallelism", "act2", {**ACT2_INPUTS, "__import__": "os"}, "1 unknown input(s): '__import__'"),
    "sweep_huge": ("06_zero_sweep", "sweep", dict(model="llama2-70b", gpu="h100-sxm", optimizer_state="fp32", micro_batch=1, seq_len=10**400, recompute="full",
                   flash_attention=True, offload=False, dp=8, zero_stage=3, microbatches=1), "seq_len must be at most"),
    "sweep_missing": ("06_zero_sweep", "sweep", {"model": "llama2-70b"}, "missing input(s)"),
    "pipeline_huge": ("07_pipeline_visualizer", "pipeline", {**PIPE_INPUTS, "p": 1024, "m": 100000}, f"at most {MAX_TIMELINE_OPS:,}"),
    "pipeline_list": ("07_pipeline_visualizer", "pipeline", {**PIPE_INPUTS, "m": [1, 2]}, "must be a number"),
    "prediction_object": ("07_pipeline_visualizer", "pipeline", PIPE_INPUTS, "prediction utilisation must be a string"),
}


def test_hostile_inputs_are_refused_step_by_step(tmp_path):
    for name, (lab, step, inputs, _) in HOSTILE_STEPS.items():
        preds = {"utilisation": {"nested": 1}} if name == "prediction_object" else {}
        hostile(tmp_path, name, lab, step, inputs, preds)
    zb = hostile(tmp_path, "zero_bubble_slider", "07_pipeline_visualizer", "pipeline", dict(p=8, m=1, schedule="zb-h1", v=1, tf=1.0, tb=0.5, tw=2.0))
    write_student(tmp_path, "honest")
    table, problems = grade([str(tmp_path)])
    assert not problems
    status = table.groupby("student").status.first()
    for name, (*_, why) in HOSTILE_STEPS.items():
        assert status[name].startswith("invalid inputs") and why in status[name], (name, status[name])
    assert status["zero_bubble_slider"] == "ok" or status["zero_bubble_slider"].startswith("engine error"), zb
    assert set(table[table.student == "honest"].status) == {"ok"}
    input_columns = {c for c in table.columns if c.startswith("input.")}
    assert not any("k1" in c or "__import__" in c for c in input_columns)


def test_an_engine_failure_in_one_step_is_reported_and_grading_goes_on(tmp_path, monkeypatch):
    from labs.core import scenarios

    def explode(inputs, predictions):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setitem(scenarios.OUTCOMES, ("07_pipeline_visualizer", "pipeline"), explode)
    hostile(tmp_path, "pip", "07_pipeline_visualizer", "pipeline", PIPE_INPUTS)
    write_student(tmp_path, "honest")
    table, problems = grade([str(tmp_path)])
    status = table.groupby("student").status.first()
    assert status["pip"] == "engine error: ZeroDivisionError: division by zero" and status["honest"] == "ok"


def test_zero_sweep_step_is_regraded(tmp_path):
    """Lab 06's step is recomputed from its inputs; a faked fit flag and a typed-in memory are caught."""
    from labs.core.scenarios.lab06 import fit_answer, zero2_answer, zero_sweep_outcomes

    inputs = dict(model="llama2-70b", gpu="h100-sxm", optimizer_state="fp32", micro_batch=1, seq_len=4096, recompute="full",
                  flash_attention=True, offload=False, dp=8, zero_stage=3, microbatches=1)
    predictions = {"fit": "A", "zero2": zero2_answer()}
    ledger = DesignLedger("zoe", tmp_path)
    outcomes = zero_sweep_outcomes(inputs, predictions)
    assert outcomes["fits"] is False and outcomes["fit_correct"] is (fit_answer() == "A")
    ledger.save_step("06_zero_sweep", "sweep", inputs, predictions, outcomes)
    table, problems = grade([str(tmp_path)])
    assert not problems and list(table.status) == ["ok"]

    doc = json.loads(ledger.path.read_text())
    doc["labs"]["06_zero_sweep"]["sweep"]["outcomes"].update(fits=True, memory_gb=60.0)
    ledger.path.write_text(json.dumps(doc))
    table, _ = grade([str(tmp_path)])
    assert "fits" in table.status.iloc[0] and "memory_gb" in table.status.iloc[0]


def test_csv_has_a_fixed_set_of_columns(tmp_path):
    write_student(tmp_path / "a", "ann")
    hostile(tmp_path / "a", "extra", "05_parallelism", "act2", {**ACT2_INPUTS, **{f"x{i}": 1 for i in range(150)}})
    write_student(tmp_path / "b", "ann")
    first, _ = grade([str(tmp_path / "a")])
    second, _ = grade([str(tmp_path / "b")])
    assert list(first.columns) == list(second.columns)


def test_the_table_from_sparse_columns_is_the_table_of_the_rows():
    """grader.Columns keeps a column's filled rows only and builds the frame a block per dtype;
    the frame must be the one pandas builds from the rows' dicts: values, NaN where a row has no
    such key, dtypes (int and bool columns every row fills, float where ints have gaps, object
    for bools with gaps and mixed kinds, pandas' str for text) and the column order."""
    import math

    import pandas as pd

    from labs.grading import grader

    rows = [
        {"file": "a.json", "student": "a", "lab": "05", "right": 1, "ok": True, "mfu": 0.41, "answer.x": "B", "mixed": 1, "flag": True},
        {"file": "b.json", "student": "b", "lab": "06", "right": 0, "ok": False, "note": None, "mixed": "two", "gap": 3},
        {"file": "c.json", "student": "c", "lab": "05", "right": 2, "ok": True, "mfu": math.nan, "answer.x": "-1+1", "gap": 4.5, "mixed": 2.5},
        {"file": "d.json", "student": "d", "lab": "07", "right": 5, "ok": True, "flag": False, "note": "x"},
    ]
    columns = grader.Columns()
    for row in rows:
        columns.add(dict(row))
    table = columns.table(None)
    expected = pd.DataFrame(rows)
    expected["identity"] = grader.identity_flags(expected["student"].tolist(), expected["file"].tolist(), None)
    order = grader.BASE_COLUMNS + [c for c in expected.columns if c not in grader.BASE_COLUMNS]
    expected = expected.reindex(columns=order)  # BASE_COLUMNS no row names: all NaN, as the old frame had them
    for name in expected.columns:
        if expected[name].isna().all() and name not in rows[0] | rows[1] | rows[2] | rows[3]:
            expected[name] = pd.Series([math.nan] * len(rows))
    assert list(table.columns) == list(expected.columns)
    wrong = {c: (str(table[c].dtype), str(expected[c].dtype)) for c in table.columns if table[c].dtype != expected[c].dtype}
    assert not wrong, f"dtypes differ (got, expected): {wrong}"
    assert table.equals(expected), table.compare(expected)
    assert str(table["right"].dtype) == "int64" and str(table["ok"].dtype) == "bool" and str(table["gap"].dtype) == "float64"
    assert table["flag"].dtype == object and table["mixed"].dtype == object


def test_the_summary_of_every_question_warns_nothing():
    """A class's summary reads every question's outcome column (~90): built a column at a time,
    pandas printed 'DataFrame is highly fragmented' on the instructor's terminal at every run."""
    import warnings

    import pandas as pd

    from labs.grading import grader

    outcomes = list(dict.fromkeys(o for spec in grader.SPECS.values() for o in spec.questions.values()))
    assert len(outcomes) > 80
    rows = 40
    table = pd.DataFrame({"lab": ["05_parallelism", "06_zero_sweep"] * (rows // 2), "step": ["act1"] * rows, "student": [f"s{i}" for i in range(rows)],
                          "status": ["ok"] * rows, "tampered": [False] * rows, "identity": [""] * rows,
                          **{o: [bool(i % 2) if k % 3 else math.nan for i in range(rows)] for k, o in enumerate(outcomes)}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = grader.summary(table)
    assert list(out["students"]) == [20, 20]
    first = [c for c in out.columns if c.startswith("right ")][0]
    assert list(out[first]) == ["0% of 20", "100% of 20"], out[first]  # lab 05 has the even rows (False), lab 06 the odd ones


def test_the_grader_keeps_one_ledgers_variants_unless_a_book_follows(tmp_path, monkeypatch):
    """Plain grading asks each variant while it grades its ledger: a class's 18,000 kept variants
    were ~36 MB of a 1,000-ledger run's peak. The grade book and the feedback pages ask them all
    again, so with them the class's are kept; main() gives the process's default back."""
    from labs.core import scenarios
    from labs.grading import grader

    write_student(tmp_path, "ann")
    seen = []
    real = grader.grade_document

    def watched(*args, **kwargs):
        seen.append(scenarios._variant.cache_parameters()["maxsize"])
        return real(*args, **kwargs)

    monkeypatch.setattr(grader, "grade_document", watched)
    assert main([str(tmp_path)]) == 0
    assert seen == [scenarios.VARIANTS_OF_ONE_LEDGER] and scenarios.VARIANTS_OF_ONE_LEDGER < 100
    assert scenarios._variant.cache_parameters()["maxsize"] == scenarios.VARIANTS_KEPT >= 20_000  # 1,000 students x 20 labs
    assert main([str(tmp_path), "--gradebook", str(tmp_path / "book.csv")]) == 0
    assert seen[-1] == scenarios.VARIANTS_KEPT
    assert scenarios._variant.cache_parameters()["maxsize"] == scenarios.VARIANTS_KEPT


def test_the_grader_forgets_the_engines_caches_before_its_table_unless_a_book_follows(tmp_path, monkeypatch):
    """Once every ledger is graded, `python -m labs.grade` drops the engine's and the labs' caches
    (router runs, Lab 12's codes, Lab 14's jitter field...: ~25 MB of a 1,000-ledger run's peak)
    before it builds the class's table; with a grade book, which asks the labs again, it keeps them.
    The variants' questions are kept either way."""
    from labs.core import scenarios
    from labs.core.engine import precision
    from labs.core.scenarios import lab07
    from labs.grading import grader

    write_student(tmp_path, "ann")
    seen = []
    real = grader.Columns.table

    def watched(self, roster):
        seen.append((lab07._bubble_1f1b.cache_info().currsize, len(precision._STREAMS), scenarios._built.cache_info().currsize))
        return real(self, roster)

    monkeypatch.setattr(grader.Columns, "table", watched)
    lab07._bubble_1f1b(4, 8)
    precision._e4m3_codes(1024, 7)  # a kept stream of Lab 12's codes
    scenarios.variant("07_pipeline_visualizer", "ann")  # its questions, built from its settings
    assert lab07._bubble_1f1b.cache_info().currsize and precision._STREAMS and scenarios._built.cache_info().currsize
    assert main([str(tmp_path)]) == 0
    cached, streams, built = seen[-1]
    assert cached == 0 and streams == 0 and built > 0
    lab07._bubble_1f1b(4, 8)
    assert main([str(tmp_path), "--gradebook", str(tmp_path / "book.csv")]) == 0
    assert seen[-1][0] == 1 and seen[-1][2] > 0

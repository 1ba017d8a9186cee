"""The grader: a valid class, a tampered ledger, and every kind of malformed file."""

import json


from labs.core.outcomes import act1_outcomes, act2_outcomes
from labs.core.state import DesignLedger
from labs.grade import grade, main

ACT1_INPUTS = dict(gpus=64, global_batch=512, fixed_per_gpu=False, fabric="ib-ndr", algorithm="ring", overlap=True, params_b=7)
ACT2_INPUTS = dict(tp=8, pp=8, dp=16, micro_batch=1, global_batch=1536, zero_stage=1, recompute="selective", sequence_parallel=True, flash_attention=True)


def write_student(folder, name, cause="B", design="C"):
    ledger = DesignLedger(name, folder)
    ledger.save_step("05_parallelism", "act1", ACT1_INPUTS, {"cause": cause}, act1_outcomes(ACT1_INPUTS, {"cause": cause}))
    ledger.save_step("05_parallelism", "act2", ACT2_INPUTS, {"design": design}, act2_outcomes(ACT2_INPUTS, {"design": design}))
    return ledger.path


def test_valid_class_is_graded_and_summarised(tmp_path, capsys):
    write_student(tmp_path, "ann")
    write_student(tmp_path, "bob", cause="A", design="A")
    table, problems = grade([str(tmp_path)])
    assert not problems and len(table) == 4 and set(table.status) == {"ok"}
    right = table.set_index(["student", "step"])["prediction_correct"]
    assert right[("ann", "act1")] and right[("ann", "act2")] and not right[("bob", "act1")] and not right[("bob", "act2")]
    assert main([str(tmp_path), "--csv", str(tmp_path / "out.csv"), "--strict"]) == 0
    assert (tmp_path / "out.csv").read_text().count("\n") == 5


def test_tampered_outcome_is_flagged(tmp_path):
    path = write_student(tmp_path, "eve", cause="A")
    doc = json.loads(path.read_text())
    doc["labs"]["05_parallelism"]["act1"]["outcomes"]["prediction_correct"] = True
    doc["labs"]["05_parallelism"]["act2"]["outcomes"]["mfu"] = 0.99
    path.write_text(json.dumps(doc))
    table, _ = grade([str(path)])
    status = dict(zip(table.step, table.status))
    assert "prediction_correct" in status["act1"] and "mfu" in status["act2"]
    assert main([str(path), "--strict"]) == 1


MALFORMED = {
    "truncated.json": b'{"schema_version": 1, "student": "x", "labs": {',
    "wrong_types.json": json.dumps({"schema_version": 1, "student": 5, "engine_version": "0", "created": "", "updated": "", "labs": []}).encode(),
    "nan.json": b'{"schema_version": 1, "student": "x", "engine_version": "0", "created": "", "updated": "", "labs": {"a": {"b": {"saved": "", "inputs": {"x": NaN}, "predictions": {}, "outcomes": {}}}}}',
    "huge_number.json": b'{"schema_version": 1, "student": "x", "engine_version": "0", "created": "", "updated": "", "labs": {"a": {"b": {"saved": "", "inputs": {"x": 1e999}, "predictions": {}, "outcomes": {}}}}}',
    "deep.json": b"[" * 100000 + b"]" * 100000,
    "empty.json": b"",
    "latin1.json": '{"student": "Jos\xe9"}'.encode("latin-1"),
}


def test_malformed_files_are_reported_and_skipped(tmp_path, capsys):
    for name, content in MALFORMED.items():
        (tmp_path / name).write_bytes(content)
    (tmp_path / "big.json").write_bytes(b" " * 100_000_000)
    good = write_student(tmp_path / "class", "../../x")
    assert good.parent == tmp_path / "class" and good.name == "x.ledger.json"
    table, problems = grade([str(tmp_path)])
    assert {p.split("/")[-1] for p, _ in problems} == set(MALFORMED) | {"big.json"}
    assert set(table.student) == {"../../x"}
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path), "--strict"]) == 1
    err = capsys.readouterr().err
    for name in MALFORMED:
        assert name in err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(list(MALFORMED) + ["big.json", "class"])


def test_bad_inputs_in_a_step_are_reported_not_raised(tmp_path):
    ledger = DesignLedger("mallory", tmp_path)
    ledger.save_step("05_parallelism", "act2", {"tp": 3, "pp": 1, "dp": 1, "global_batch": 1, "__import__": "os"}, {}, {})
    table, _ = grade([str(tmp_path)])
    assert table.status.iloc[0].startswith("invalid inputs")


def test_zero_sweep_step_is_regraded(tmp_path):
    """Lab 06's step is recomputed from its inputs; a faked fit flag and a typed-in memory are caught."""
    from labs.core.outcomes import fit_answer, zero2_answer, zero_sweep_outcomes

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

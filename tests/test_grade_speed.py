"""What keeps grading a class within its budget (benchmarks/bench_grade.py prints the budget; these
check the mechanisms, not the time)."""

from labs.core.scenarios import lab13


def test_lab13_split_runs_on_one_blas_thread_once_per_setting(monkeypatch):
    """OpenBLAS's threads waiting for each other on a busy machine made each of Lab 13's 24
    settings cost 0.1-0.3 s of CPU on 32 x 128 arrays; on one thread all 24 cost 0.3 s."""
    from threadpoolctl import threadpool_info

    from labs.core.engine import tensor_parallel as tpm

    seen = []
    real = tpm.run_block

    def counting(*args, **kwargs):
        seen.append(max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"), default=1))
        return real(*args, **kwargs)

    monkeypatch.setattr(tpm, "run_block", counting)
    lab13._split_report.cache_clear()
    lab13._unsplit.cache_clear()  # the unsplit block is run once per block and kept (every setting of it compares against it)
    first = lab13.split_report("attention", 4, True)
    again = lab13.split_report("attention", 4, True)
    assert seen == [1, 1]  # the unsplit block and the split one, each on one BLAS thread, and not again
    assert first == again and first["output_diff"] < 1e-9 and first["calls"]
    lab13.split_report("attention", 2, True)
    assert seen == [1, 1, 1]  # another setting of the same block runs its split only
    lab13._split_report.cache_clear()


def test_lab05_act2_plans_are_built_once_per_inputs_and_refused_as_before():
    """The grader asks Act II's plan once a student; equal inputs share one Plan, but 8 and 8.0
    (one key to a dict) do not: a float TP is refused naming the field even after TP 8 was built."""
    import pytest

    from labs.core.scenarios import lab05

    inputs = {"tp": 8, "pp": 8, "dp": 16, "micro_batch": 1, "global_batch": 1536}
    plan = lab05.plan_from_inputs(dict(inputs))
    assert lab05.plan_from_inputs(dict(reversed(list(inputs.items())))) is plan
    assert (plan.tp, plan.pp, plan.dp, plan.micro_batch, plan.global_batch) == (8, 8, 16, 1, 1536)
    for bad in (8.0, True, [8]):
        with pytest.raises(ValueError, match="tp"):
            lab05.plan_from_inputs({**inputs, "tp": bad})


def test_a_variants_key_and_misconceptions_follow_the_students_order():
    """Question.key and the misconception per letter, as the grader reads them for every row: each
    letter names the option the student's order puts there; a record the variant wrote is no mismatch."""
    from labs.core.scenarios import lab14
    from labs.variants import variant

    v = variant(lab14.LAB, "student-007", "a-salt")
    q = v.questions["culprit"]
    by_id = {o.key: o.misconception for o in q.spec.options}
    assert q.key == "ABCD"[q.order.index("culprit")] and q.key == q.key and not q.numeric
    assert [q.misconception(letter) for letter in "ABCD"] == [by_id[oid] for oid in q.order]
    assert q.misconception("E") == "" and q.misconception(None) == "" and q.option_id("AB") is None
    assert v.questions["timeout"].numeric and v.questions["timeout"].key is None
    assert v.mismatches(v.record()) == [] and v.mismatches({**v.record(), "seed": "0"}) == ["seed"]


def test_a_record_is_recognised_field_by_field_exactly_when_it_equals_the_variants_record():
    """Variant.is_recorded_by (the grader's check, without building the record) against ==, on the
    record itself and on each way a ledger's copy can differ: a field changed, added or dropped, a
    question's order or number, an edition named or not."""
    import copy

    from labs.core.scenarios import lab14
    from labs.variants import variant

    variants = [variant(lab14.LAB, "student-003", "s"), variant("05_parallelism", "student-003", "s"), variant("05_parallelism", "student-003", "s", 1)]
    for v in variants:
        record = v.record()
        edits = [lambda r: r, lambda r: r.update(seed="0"), lambda r: r.update(extra=1), lambda r: r.pop("scheme"), lambda r: r.update(version=1),
                 lambda r: r.update(version=v.version + 1), lambda r: r.pop("version", None), lambda r: r["settings"].update(x=1),
                 lambda r: r.update(settings={}), lambda r: r.update(questions=list(r["questions"])), lambda r: r["questions"].popitem()]
        for q, spec in record["questions"].items():
            if "order" in spec:
                edits += [lambda r, q=q: r["questions"][q]["order"].reverse(), lambda r, q=q: r["questions"][q].update(order=tuple(r["questions"][q]["order"]))]
            else:
                edits += [lambda r, q=q: r["questions"][q].update(answer=r["questions"][q]["answer"] + 1), lambda r, q=q: r["questions"][q].pop("tolerance"),
                          lambda r, q=q: r["questions"][q].update(answer=int(r["questions"][q]["answer"]) if float(r["questions"][q]["answer"]).is_integer() else r["questions"][q]["answer"])]
        for edit in edits:
            changed = copy.deepcopy(record)
            edit(changed)
            assert v.is_recorded_by(changed) == (changed == v.record()), (v.lab, changed)
            if changed == v.record():
                assert v.mismatches(changed) == []


def test_a_valid_class_is_read_and_checked_in_one_pass(tmp_path, monkeypatch):
    """The grader reads each valid ledger with msgspec typed by the schema (labs.core.schema_types):
    the schema's check on the parsed document (fastjsonschema, then jsonschema for the message) runs
    only for a file the types refuse, here the one with a string where the schema wants an object."""
    import json

    from labs.core import state
    from labs.core.state import DesignLedger
    from labs.grading import grader

    for name in ("ann", "bob"):
        DesignLedger(name, directory=tmp_path).save_step("06_zero_sweep", "sweep", {"dp": 8})
    bad = json.loads(next(tmp_path.glob("ann*.json")).read_text())
    bad["labs"] = "none"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    checked = []
    real = state.validate_document
    monkeypatch.setattr(state, "validate_document", lambda doc, *rest: (checked.append(doc["student"]), real(doc, *rest))[1])
    state._VALIDATED.clear()
    table, problems = grader.grade([str(tmp_path)], key=None)
    assert sorted(table["student"].unique()) == ["ann", "bob"]
    assert checked == ["ann"] and [p for p, _ in problems] == [str(tmp_path / "bad.json")]
    assert "labs" in problems[0][1]

"""The grade book (labs.gradebook): points, lateness, marks, integrity labels, the three LMS
exports checked against their formats' documented samples (tests/data/lms/, sources in its
README), the Gradescope autograder run end to end, and the feedback pages. Every expected number
is counted by hand from the small class built here."""

import csv
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from labs import grade
from labs.core.state import DesignLedger
from labs.gradebook import book, due, exports, feedback, marks, points, roster as class_roster
from labs.grading import questions
from labs.gradebook.cache import ClassCache

ROOT = Path(__file__).resolve().parents[1]
LMS = ROOT / "tests" / "data" / "lms"
LAB = "05_parallelism"
ACT1 = dict(gpus=64, global_batch=512, fixed_per_gpu=False, fabric="ib-ndr", algorithm="ring", overlap=True, params_b=7)
KEY = "k" * 32


def _commit_only(folder, name, answers, lab=LAB):
    """A student who committed and never pressed Submit."""
    ledger = DesignLedger(name, folder)
    for q, a in answers.items():
        ledger.commit_prediction(lab, q, a)
    return ledger.path


def _retime(path, when):
    """Set every commit and save time of a ledger (as a student's clock would have written them)."""
    doc = json.loads(path.read_text())
    for lab in doc.get("predictions", {}).values():
        for record in lab.values():
            record["committed"] = when
    for lab in doc["labs"].values():
        for step in lab.values():
            step["saved"] = when
    path.write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    assert (questions.engine_answer(LAB, "cause"), questions.engine_answer(LAB, "design")) == ("B", "C")  # what the counts below assume
    folder = tmp_path_factory.mktemp("class")
    ann = DesignLedger("ann", folder)  # submitted: cause B (right), design C (right)
    ann.commit_prediction(LAB, "cause", "B")
    ann.commit_prediction(LAB, "design", "C")
    from labs.core.scenarios.lab05 import act1_outcomes

    ann.save_step(LAB, "act1", ACT1, {"cause": "B"}, act1_outcomes(ACT1, {"cause": "B"}))
    _commit_only(folder, "bob", {"cause": "A", "design": "C"})  # never submitted: wrong, right
    late = _commit_only(folder, "cat", {"cause": "B", "design": None})  # right, skipped; 26 h late by her clock
    _retime(late, "2026-12-03T01:59:00+00:00")
    roster = folder.parent / "roster.csv"
    roster.write_text("student,code,name,sis_login_id,email\nann,code0001,\"Ann, A\",ann01,ann@example.edu\nbob,code0002,Bob B,bob02,bob@example.edu\n"
                      "cat,code0003,Cat C,cat03,cat@example.edu\neve,code0004,Eve E,eve04,eve@example.edu\n")
    return folder, roster


@pytest.fixture(scope="module")
def due_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("due") / "due.toml"
    path.write_text('policy = "percent"\npercent_per_day = 10\n["05_parallelism"]\ndue = 2026-12-01T23:59:00Z\n')
    return path


def _book(klass, due_path=None, **kw):
    folder, roster = klass
    table, _ = grade.grade([str(folder)])
    docs = book.read_documents(sorted(set(table["file"])))
    people = class_roster.load(roster)
    return book.build(table, docs, points.load(settings=kw.get("settings", ())), due.load(due_path), kw.get("marks"), [p.student for p in people], kw.get("key")), table, docs, people


# ---- points ----------------------------------------------------------------------------------
def test_default_points_cover_every_question_and_free_text_field():
    table = points.default_table()
    assert {k for k, v in table.items() if v.counts != "marked"} == set(questions.questions())
    assert table[("09_64gpu_design", "paragraph")] == points.Item(2.0, "marked")
    assert points.possible(table, "09_64gpu_design") == 2 + 4 * 1 + 2  # dp64, pp_free (edition 3, X8), four reasons, the paragraph


def test_points_file_and_command_line_override(tmp_path):
    path = tmp_path / "points.toml"
    path.write_text('["05_parallelism"]\ncause = 3\ndesign = { points = 4, counts = "both" }\n')
    table = points.load(path, ["05_parallelism.cause=5:participation"])
    assert table[(LAB, "cause")] == points.Item(5.0, "participation") and table[(LAB, "design")] == points.Item(4.0, "both")
    both = table[(LAB, "design")]
    assert (both.earned("C", True), both.earned("A", False), both.earned(None, None)) == (4.0, 2.0, 0.0)


@pytest.mark.parametrize("text, where", [
    ('["05_parallelism"]\ncuase = 1\n', "cuase"),
    ('["05_parallelism"]\ncause = -1\n', "points must be a number"),
    ('["05_parallelism"]\ncause = { points = 1, counts = "vibes" }\n', "counts must be one of"),
    ('["09_64gpu_design"]\nparagraph = { counts = "correctness" }\n', "counts must be one of marked"),
    ('["05_parallelism"\n', "not valid TOML"),
])
def test_bad_points_are_refused_by_name(tmp_path, text, where):
    path = tmp_path / "points.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=where):
        points.load(path)


def test_bad_set_points_refused():
    with pytest.raises(ValueError, match="LAB.ITEM=POINTS"):
        points.load(settings=["cause=2"])
    with pytest.raises(ValueError, match="points must be a number"):
        points.load(settings=["05_parallelism.cause=two"])


# ---- lateness --------------------------------------------------------------------------------
def test_late_policies():
    from datetime import datetime, timezone

    t = datetime(2026, 12, 1, 23, 59, tzinfo=timezone.utc)
    rule = due.Rule(t, grace_hours=2, policy="percent", percent_per_day=10)
    assert rule.late_seconds(due.parse_time("2026-12-02T01:59:00Z")) == 0  # inside the grace
    late = rule.late_seconds(due.parse_time("2026-12-02T02:59:00+00:00"))
    assert late == 3600 and rule.factor(late) == pytest.approx(0.9)  # one hour past grace: a day's 10 %
    assert rule.factor(86_400 + 1) == pytest.approx(0.8) and rule.factor(20 * 86_400) == 0.0
    assert due.Rule(t, policy="zero").factor(1) == 0.0 and due.Rule(t, policy="none").factor(10**6) == 1.0


def test_due_file_refuses_naive_times_and_unknown_keys(tmp_path):
    path = tmp_path / "due.toml"
    path.write_text('["05_parallelism"]\ndue = 2026-12-01T23:59:00\n')
    with pytest.raises(ValueError, match="no UTC offset"):
        due.load(path)
    path.write_text('["05_parallelism"]\ndeadline = 2026-12-01T23:59:00Z\n')
    with pytest.raises(ValueError, match=r"\[05_parallelism\]: unknown key"):
        due.load(path)
    path.write_text('policy = "sometimes"\n')
    with pytest.raises(ValueError, match="policy must be one of"):
        due.load(path)


# ---- the grade book ----------------------------------------------------------------------------
def test_every_committed_prediction_is_graded_even_without_submit(klass):
    folder, _ = klass
    table, problems = grade.grade([str(folder)])
    assert problems == []
    bob = table[table["student"].eq("bob")]
    assert set(bob["step"]) == {"act1", "act2"} and bob["answers_from"].eq("commit (not submitted)").all()
    assert bob.set_index("step").loc["act1", "prediction_correct"] == False  # noqa: E712 - A, the engine says B
    assert bob["right"].sum() == 1 and bob["judged"].sum() == 2


def test_points_per_lab_and_course_with_lateness(klass, due_file):
    b, *_ = _book(klass, due_file)
    labs = b.labs.set_index(["student", "lab"])
    assert labs.loc[("ann", LAB), ["raw", "earned", "possible"]].tolist() == [2.0, 2.0, 2.0]
    assert labs.loc[("bob", LAB), ["raw", "earned"]].tolist() == [1.0, 1.0]
    cat = labs.loc[("cat", LAB)]
    # committed 2026-12-03 01:59 against a due date of 12-01 23:59: 26 h late, two days' 10 %
    assert (cat["raw"], cat["late_hours"], cat["factor"], cat["earned"]) == (1.0, 26.0, pytest.approx(0.8), pytest.approx(0.8))
    assert cat["time_source"] == book.STUDENT_CLOCK and "late by 26.0 h" in cat["flags"]
    assert labs.loc[("eve", LAB), "submitted"] == False  # noqa: E712 - on the roster, nothing handed in
    totals = b.totals.set_index("student")
    assert totals.loc["ann", "possible"] == b.course_possible == sum(b.possible.values())
    assert totals.loc["cat", "total"] == pytest.approx(0.8)


def test_marks_go_into_the_totals(klass, tmp_path):
    path = tmp_path / "marks.json"
    marks.save(path, "ann", "09_64gpu_design", "paragraph", 1.5, "names TP and PP", most=2)
    with pytest.raises(ValueError, match="points must be a number from 0 to 2"):
        marks.save(path, "ann", "09_64gpu_design", "paragraph", 3, most=2)
    b, *_ = _book(klass, marks=marks.load(path))
    # ann handed in no Lab 09 worksheet: a mark for it still counts (the instructor gave it)
    assert b.labs.set_index(["student", "lab"]).loc[("ann", "09_64gpu_design"), "raw"] == 1.5
    assert json.loads(path.read_text())["marks"]["ann"]["09_64gpu_design"]["paragraph"] == {"points": 1.5, "comment": "names TP and PP"}


def test_an_edited_signed_prediction_is_flagged_and_earns_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("LABS_SIGNING_KEY", KEY)
    path = _commit_only(tmp_path, "dan", {"cause": "A", "design": "C"})
    doc = json.loads(path.read_text())
    assert doc["predictions"][LAB]["cause"]["signature"].startswith("hmac-sha256")
    doc["predictions"][LAB]["cause"]["answer"] = "B"  # the student edits the file by hand to the right answer
    path.write_text(json.dumps(doc))
    table, _ = grade.grade([str(tmp_path)])
    b = book.build(table, book.read_documents(sorted(set(table["file"]))), points.load(), due.load(None), key=KEY.encode())
    items = b.items.set_index(["lab", "item"])
    assert items.loc[(LAB, "cause"), "label"] == "edited" and items.loc[(LAB, "cause"), "earned"] == 0
    assert "not trusted" in items.loc[(LAB, "cause"), "note"]
    assert items.loc[(LAB, "design"), ["label", "earned"]].tolist() == ["signed", 1.0]
    assert b.labs.set_index("lab").loc[LAB, "time_source"] == book.STUDENT_CLOCK  # one entry is no longer vouched for


def test_signed_times_are_the_servers(tmp_path, monkeypatch):
    monkeypatch.setenv("LABS_SIGNING_KEY", KEY)
    _commit_only(tmp_path, "eli", {"cause": "B", "design": "C"})
    table, _ = grade.grade([str(tmp_path)])
    b = book.build(table, book.read_documents(sorted(set(table["file"]))), points.load(), due.load(None), key=KEY.encode())
    assert b.labs.set_index("lab").loc[LAB, ["time_source", "earned"]].tolist() == [book.SERVER_CLOCK, 2.0]


# ---- the LMS formats -------------------------------------------------------------------------
def _read(path):
    return list(csv.reader(io.StringIO(Path(path).read_text(encoding="utf-8-sig"))))


def test_canvas_csv_has_the_documented_columns_and_rows(klass, due_file, tmp_path):
    sample = _read(LMS / "canvas_gradebook_sample.csv")
    b, _, _, people = _book(klass, due_file)
    out = tmp_path / "canvas.csv"
    unlisted = exports.write_canvas(b, people, out, "blank")
    rows = _read(out)
    assert rows[0][:5] == sample[0][:5] == exports.CANVAS_IDS  # the identity columns, spelled and ordered as Canvas's
    assert rows[1][0].strip() == sample[1][0].strip() == "Points Possible" and rows[1][1:5] == ["", "", "", ""]
    assert len(rows[0]) == 5 + len(b.possible) and all(float(x) >= 0 for x in rows[1][5:])
    assert unlisted == []
    lab_col = rows[0].index("Lab 05: parallelism")
    by_login = {r[3]: r for r in rows[2:]}
    assert set(by_login) == {"ann01", "bob02", "cat03", "eve04"}  # one row per roster student, joined on SIS Login ID
    assert [by_login[k][lab_col] for k in ("ann01", "bob02", "cat03", "eve04")] == ["2", "1", "0.8", ""]
    assert by_login["ann01"][0] == "Ann, A"
    for r in rows[2:]:  # numeric cells or blank
        assert all(c == "" or float(c) >= 0 for c in r[5:])
    exports.write_canvas(b, people, out, "zero")
    assert {r[3]: r[lab_col] for r in _read(out)[2:]}["eve04"] == "0"


def test_canvas_reuses_an_existing_assignment_column(klass, tmp_path):
    template = tmp_path / "export.csv"
    template.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Lab 05: parallelism (778899),Final Score\n")
    b, _, _, people = _book(klass)
    rows, _ = exports.canvas_rows(b, people, template=template)
    assert "Lab 05: parallelism (778899)" in rows[0] and "Lab 06: zero sweep" in rows[0]


def test_moodle_worksheet_is_merged_into_the_template(klass, tmp_path):
    folder, _ = klass
    template = tmp_path / "worksheet.csv"
    sample = _read(LMS / "moodle_worksheet_sample.csv")
    header = sample[0]
    template.write_text(
        ",".join(f'"{h}"' for h in header) + "\n"
        + '"Participant 11","Ann A","ann@example.edu","Submitted for grading","","100.00","Yes","-","-",""\n'
        + '"Participant 12","Cat C","CAT@example.edu","Submitted for grading","","50.00","Yes","-","-",""\n'
        + '"Participant 13","Zed Z","zed@example.edu","No submission","","100.00","Yes","-","-",""\n')
    b, _, _, people = _book(klass)
    out = tmp_path / "moodle.csv"
    unmatched = exports.write_moodle(b, people, template, out)
    rows = _read(out)
    assert rows[0] == header and all(c in header for c in exports.MOODLE_REQUIRED)
    by_id = {r[0]: r for r in rows[1:]}
    grade_i = header.index("Grade")
    possible = b.course_possible
    assert float(by_id["Participant 11"][grade_i]) == pytest.approx(round(2 / possible * 100, 2))  # ann: 2 points, scaled to 100
    assert float(by_id["Participant 12"][grade_i]) == pytest.approx(round(1 / possible * 50, 2))  # cat (no due file: on time), e-mail matched case-blind
    assert by_id["Participant 13"][grade_i] == "" and unmatched == ["Participant 13"]
    assert by_id["Participant 11"][header.index("Last modified (grade)")] == "-"  # Moodle's own cells as Moodle wrote them
    bad = tmp_path / "bad.csv"
    bad.write_text("Name,Grade\nx,1\n")
    with pytest.raises(ValueError, match="no column Identifier, Last modified"):
        exports.moodle_rows(b, people, bad)


def test_gradescope_zip_runs_and_writes_the_documented_results(klass, tmp_path):
    sample = json.loads((LMS / "gradescope_results_sample.json").read_text())
    zpath = tmp_path / "autograder.zip"
    names = exports.write_gradescope_zip(zpath)
    assert {"setup.sh", "run_autograder", "pyproject.toml", "labs/grade.py", "labs/gradebook/exports.py"} <= set(names)
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zpath) as z:
        z.extractall(root / "source")
        assert (z.getinfo("run_autograder").external_attr >> 16) & 0o111  # executable, as Gradescope requires
    folder, _ = klass
    (root / "submission").mkdir()
    ann = next(folder.glob("ann-*.ledger.json"))
    (root / "submission" / ann.name).write_bytes(ann.read_bytes())
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "ann@example.edu", "id": 1, "name": "Ann A"}]}))  # as Gradescope writes it
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, check=True, capture_output=True, timeout=120)
    result = json.loads((root / "results" / "results.json").read_text())
    assert set(result) <= set(sample) and set(result["tests"][0]) <= set(sample["tests"][0])  # only documented keys
    for key in ("score", "output", "tests"):
        assert type(result[key]) is type(sample[key])
    for key in ("score", "max_score", "name", "output", "status"):
        assert all(type(t[key]) is type(sample["tests"][0][key]) for t in result["tests"])
    assert len(result["tests"]) == len([q for q in questions.questions() if q[0] == LAB])  # one test per prediction question of the lab handed in
    cause = next(t for t in result["tests"] if t["name"] == "Lab 05: parallelism · cause")
    assert (cause["score"], cause["max_score"], cause["status"]) == (1.0, 1.0, "passed") and "engine's answer: B" in cause["output"]
    assert result["score"] == 2.0


def test_gradescope_results_without_a_ledger_say_why(tmp_path):
    out = tmp_path / "results.json"
    (tmp_path / "submission").mkdir()
    assert grade.main([str(tmp_path / "submission"), "--gradescope-results", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["score"] == 0.0 and "no ledger" in result["output"]


# ---- the command line and feedback -------------------------------------------------------------
def test_command_line_writes_every_export(klass, due_file, tmp_path):
    folder, roster = klass
    args = [str(folder), "--roster", str(roster), "--due", str(due_file), "--canvas", str(tmp_path / "c.csv"), "--gradebook", str(tmp_path / "b.csv"),
            "--moodle", str(tmp_path / "m.csv"), "--moodle-template", str(LMS / "moodle_worksheet_sample.csv"), "--feedback", str(tmp_path / "fb")]
    assert grade.main(args) == 0
    booked = {r["student"]: r for r in csv.DictReader((tmp_path / "b.csv").open())}
    assert booked["Points Possible"]["total"] == str(float(sum(points.possible(points.load(), lab) for lab in {k[0] for k in points.load()})))
    assert float(booked["cat"]["total"]) == pytest.approx(0.8)
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "fb").iterdir()) == ["ann", "bob", "cat", "eve"]
    assert grade.main([str(folder), "--canvas", str(tmp_path / "c.csv")]) == 2  # no roster: refused by name


def test_feedback_page_escapes_and_loads_nothing(tmp_path):
    hostile = '<script>alert(1)</script>"\'&'
    ledger = DesignLedger(hostile, tmp_path / "class")
    ledger.commit_prediction(LAB, "cause", "<img src=x onerror=alert(1)>")
    table, _ = grade.grade([str(tmp_path / "class")])
    docs = book.read_documents(sorted(set(table["file"])))
    b = book.build(table, docs, points.load(), due.load(None))
    [page] = feedback.write_all(b, table, docs, tmp_path / "fb")
    text = page.read_text()
    assert "<script" not in text and "<img" not in text and "&lt;script&gt;" in text and "&lt;img src=x" in text
    assert "src=" not in text.replace("&lt;img src=x", "") and "href" not in text  # nothing fetched: opens offline
    import html

    assert html.escape(questions.why(LAB, "cause"), quote=True) in text  # the engine's answer with its one-line why


def test_cache_regrades_only_what_changed(klass, tmp_path):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(klass[0], folder)
    cache = ClassCache()
    table, problems, docs = cache.refresh(folder)
    expected, _ = grade.grade([str(folder)])
    assert cache.regraded == 3 and len(table) == len(expected) and sorted(table["student"]) == sorted(expected["student"])
    cache.refresh(folder)
    assert cache.regraded == 0
    _commit_only(folder, "fay", {"cause": "B"})
    table, *_ = cache.refresh(folder)
    assert cache.regraded == 1 and "fay" in set(table["student"])


def test_a_synthetic_class_grades_into_every_format(synthetic_class, tmp_path, monkeypatch):
    """scripts/make_class.py's class (conftest's synthetic_class: signed, unsigned, edited, late, never submitted and hostile
    ledgers) into the grade book and all three LMS formats: an edited signed prediction earns
    nothing and is flagged, a late lab is scored by the due file's policy."""
    import math

    folder, roster = synthetic_class.folder, synthetic_class.roster
    for name, value in synthetic_class.env.items():  # the signing key and the class salt
        monkeypatch.setenv(name, value)
    out = tmp_path / "out"
    assert grade.main([str(folder), "--roster", str(roster), "--due", str(folder / "due.toml"), "--canvas", str(tmp_path / "canvas.csv"),
                       "--moodle", str(tmp_path / "moodle.csv"), "--moodle-template", str(LMS / "moodle_worksheet_sample.csv"),
                       "--gradescope-zip", str(tmp_path / "ag.zip"), "--feedback", str(out), "--gradebook", str(tmp_path / "book.csv")]) == 0
    table, _ = grade.grade([str(folder)])
    docs = book.read_documents(sorted(set(table["file"])))
    people = class_roster.load(roster)
    b = book.build(table, docs, points.load(), due.load(folder / "due.toml"), roster_students=[p.student for p in people], key=os.environ["LABS_SIGNING_KEY"].encode())
    on_roster = b.labs[b.labs["student"].str.startswith("Student ")]
    late = on_roster[on_roster["late_hours"] > 0]
    assert len(late) > 0 and (late["time_source"] == book.STUDENT_CLOCK).all()
    for r in late.itertuples():  # 10 % a day or part of one, after the hour of grace
        assert r.factor == pytest.approx(max(0.0, 1 - 0.1 * math.ceil(r.late_hours * 3600 / 86_400 - 1e-9)), abs=1e-9)
        assert r.earned == pytest.approx(round(r.raw * r.factor, 4))
    edited = b.items[b.items["label"].eq("edited") & b.items["student"].str.startswith("Student ")]
    assert len(edited) > 0 and edited["earned"].eq(0).all() and edited["note"].str.contains("not trusted").all()
    signed = b.items[b.items["label"].eq("signed")]
    assert len(signed) > len(edited)
    canvas = _read(tmp_path / "canvas.csv")
    assert canvas[0][:5] == exports.CANVAS_IDS and len(canvas) == 2 + len(people)
    assert {r[3] for r in canvas[2:]} == {p.sis_login_id for p in people}
    assert _read(tmp_path / "moodle.csv")[0] == _read(LMS / "moodle_worksheet_sample.csv")[0]
    assert len(list(out.glob("*.html"))) == len(b.totals)


def test_an_id_no_lab_accepts_still_gets_an_escaped_page(tmp_path):
    """bench_grade's hostile class: a student id with a terminal escape stopped the pages at the second."""
    head = {"schema_version": 1, "engine_version": "0", "created": "t", "updated": "t", "labs": {}}
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "esc.json").write_text(json.dumps({**head, "student": "\x1b[31mFORGED<b>", "predictions": {LAB: {"cause": {"answer": "B", "committed": "t", "changes": []}}}}))
    _commit_only(tmp_path / "class", "ann", {"cause": "B"})
    assert grade.main([str(tmp_path / "class"), "--feedback", str(tmp_path / "fb")]) == 0
    pages = sorted(p.name for p in (tmp_path / "fb").iterdir())
    assert len(pages) == 2 and pages[0].startswith("ann-") and pages[1].startswith("invalid-id-")
    text = (tmp_path / "fb" / pages[1]).read_text()
    assert "\x1b" not in text and "\\x1b[31mFORGED&lt;b&gt;" in text  # the escape shown, the markup as text


def test_feedback_compares_lab05_design_with_the_best_of_the_students_own_model(tmp_path):
    """Lab 05's third edition draws Act II's model per student: the feedback page's "engine's best"
    is that model's best layout (not GPT-3's at batch 1,536)."""
    import json

    from labs.core import estimate
    from labs.core.scenarios.lab05 import act2_outcomes, design_best_plan, design_inputs
    from labs.core.state import DesignLedger
    from labs.grade import grade
    from labs.variants import variant

    student = next(s for s in (f"student-{i}" for i in range(200)) if variant("05", s, salt="s").settings["design_model"] == "llama2-70b")
    v = variant("05", student, salt="s")
    best = design_best_plan(v.settings["design_model"], v.settings["design_batch"])
    inputs = dict(tp=1, pp=1, dp=1024, micro_batch=1, global_batch=best.global_batch, zero_stage=1, recompute="selective",
                  sequence_parallel=False, tp_comm_overlap=False, schedule="1f1b", virtual_stages=1, flash_attention=True)
    ledger = DesignLedger(student, directory=tmp_path)
    key = v.questions["design"].key
    ledger.commit_prediction(v.lab, "design", key, variant=v.record())
    ledger.save_step(v.lab, "act2", inputs, {"design": key}, act2_outcomes(inputs, {"design": key}, variant=v), variant=v.record())
    row = grade([str(tmp_path)], salt="s")[0].iloc[0].to_dict()
    assert row["status"] == "ok", row["status"]
    html = feedback._designs([row], json.loads(ledger.path.read_text()))
    model, cluster = design_inputs("llama2-70b")
    mfu = estimate(model, cluster, best).mfu
    assert f"TP {best.tp} × PP {best.pp} × DP {best.dp}, micro-batch {best.micro_batch}: MFU {mfu:.1%}" in html

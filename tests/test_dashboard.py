"""The class dashboard headless (`app.run`): a hand-built class of four students, a copy of one
ledger, a tampered ledger, a broken file and a roster with a fifth student who handed nothing in.
Every expected number below is counted by hand from the class as written here."""

import csv
import functools
import importlib.util
import json
import os
import re
import shutil
from pathlib import Path

import marimo as mo
import pytest

from labs.core.scenarios import QUESTION_OPTIONS
from labs.core.scenarios.lab05 import act1_correct_option, act1_outcomes, act2_best_option, act2_outcomes
from labs.core.state import DesignLedger

ROOT = Path(__file__).resolve().parents[1]
LAB = "05_parallelism"
ACT1 = dict(gpus=64, global_batch=512, fixed_per_gpu=False, fabric="ib-ndr", algorithm="ring", overlap=True, params_b=7)
GOOD = dict(tp=8, pp=8, dp=16, micro_batch=1, global_batch=1536, zero_stage=1, recompute="selective", sequence_parallel=True, flash_attention=True)
PIPE = dict(tp=1, pp=32, dp=32, micro_batch=1, global_batch=1536, zero_stage=1, recompute="selective", sequence_parallel=False, flash_attention=True)


def _label(question, letter):
    """Lab 05's option `letter` (no variant: the lab's own table), as the dashboard names it."""
    return next(o.label for o in QUESTION_OPTIONS[(LAB, question)] if o.key == letter)


def _student(folder, name, cause, design, plan, change_to=None):
    ledger = DesignLedger(name, folder)
    ledger.commit_prediction(LAB, "cause", cause)
    if change_to:
        ledger.commit_prediction(LAB, "cause", change_to)  # after the reveal: a change, the first answer stays graded
    ledger.commit_prediction(LAB, "design", design)
    ledger.save_step(LAB, "act1", ACT1, {"cause": cause}, act1_outcomes(ACT1, {"cause": cause}))
    ledger.save_step(LAB, "act2", plan, {"design": design}, act2_outcomes(plan, {"design": design}))
    return ledger.path


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    assert (act1_correct_option(), act2_best_option()) == ("B", "C")  # the answers the numbers below assume
    folder = tmp_path_factory.mktemp("class")
    ann = _student(folder, "ann", "B", "C", GOOD)  # right, right
    _student(folder, "bob", "A", "B", PIPE, change_to="B")  # wrong (changed to B later), wrong
    _student(folder, "cat", "A", None, GOOD)  # wrong, skipped
    dan = _student(folder, "dan", "D", "C", GOOD)  # wrong, right; then tampers with a stored outcome
    doc = json.loads(dan.read_text())
    doc["labs"][LAB]["act2"]["outcomes"]["mfu"] = 0.99
    dan.write_text(json.dumps(doc))
    shutil.copyfile(ann, folder / "ann-copy.json")  # the same id handed in twice
    (folder / "broken.json").write_text('{"schema_version": 1, "student": "x", "labs": {')
    for lock in folder.glob(".*.lock"):
        lock.unlink()
    roster = folder / "roster.csv"
    roster.write_text("student\nann\nbob\ncat\ndan\neve\n")  # a names-only roster; eve never handed anything in
    return folder, roster


def _fresh_module():
    path = ROOT / "instructor" / "class_dashboard.py"
    spec = importlib.util.spec_from_file_location("class_dashboard", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _module():
    """The dashboard notebook loaded once for the tests (a load has marimo read the source of each
    @app.function: 1-2 s of CPU); each test's app.run() is a run of its own, as the module-scoped
    `dashboard` fixture's runs always were."""
    return _fresh_module()


def _app():
    return _module().app


def _run_order():
    """The dashboard's cells (marimo's compiled cells: .defs, .refs) in the order a served
    session runs them: marimo's own topological sort, which breaks ties by the file's order. A
    function cell (@app.function) is a cell too, so a cell runs only after the functions it
    calls: the first chart once ran after every lab's answers (6 s of CPU at 1,000 ledgers)
    because answers_of_labs, which only they call, stood above answer_distribution in the file."""
    from marimo._ast.app import InternalApp
    from marimo._runtime import dataflow

    graph = InternalApp(_app()).graph
    return [graph.cells[cid] for cid in dataflow.topological_sort(graph, list(graph.cells))]


class Picked:
    """Stands in for a mo.ui.plotly with these point indices selected (a clicked bar or marker)."""

    def __init__(self, indices, points=()):
        self.indices, self.value = list(indices), list(points)

    def _mime_(self):
        return "text/plain", "picked"


@pytest.fixture(scope="module")
def dashboard(klass):
    folder, roster = klass
    app = _app()
    return app, {"folder_input": mo.ui.text(value=str(folder)), "roster_input": mo.ui.text(value=str(roster))}


@pytest.fixture(scope="module")
def run(dashboard):
    app, defs = dashboard
    return app.run(defs=defs)


def test_without_a_folder_it_asks_for_one():
    outputs, defs = _app().run()
    assert "table" not in defs
    assert "Type the folder" in " ".join(str(getattr(o, "text", o)) for o in outputs if o is not None)


def test_each_question_counts_answers_shares_and_changes(run):
    questions = run[1]["questions_table"].set_index("question")
    cause, design = questions.loc["cause"], questions.loc["design"]
    # cause: ann B, bob A (changed to B after), cat A, dan D; ann's second file is not counted twice
    assert (cause["committed"], cause["skipped"], cause["right"], cause["share right"], cause["changed after commit"]) == (4, 0, 1, "25%", 1)
    assert cause["right answer"] == _label("cause", "B")
    assert cause["answers"].split(" · ")[0].endswith(": 2") and cause["answers"].split(" · ")[0].startswith(_label("cause", "A")[:39])
    # design: ann C, bob B, cat skipped, dan C
    assert (design["committed"], design["skipped"], design["right"], design["share right"], design["changed after commit"]) == (3, 1, 2, "67%", 0)
    assert design["answers"].endswith("skipped: 1") and "A" not in design["answers"].split(" · ")


def test_the_bar_chart_and_a_click_on_a_bar(dashboard, run):
    bars = run[1]["answer_bars"]  # the first question of the dropdown: 05 cause; bars by what the option says, most chosen first
    assert list(bars["answer"]) == [_label("cause", "A"), _label("cause", "B"), _label("cause", "D")] and list(bars["students"]) == [2, 1, 1]
    assert list(bars["right"]) == [0, 1, 0] and list(bars["wrong"]) == [2, 0, 1] and list(bars["changed"]) == [1, 0, 0]
    app, defs = dashboard
    _, picked = app.run(defs={**defs, "answer_plot": Picked([0])})
    assert picked["bar_students"]["names"].tolist() == [["bob", "cat"]]
    wrapped = _module().wrapped(_label("cause", "D"))  # the bar's x as drawn: its text on short lines
    _, by_x = app.run(defs={**defs, "answer_plot": Picked([], [{"x": wrapped, "y": 1}])})
    assert by_x["bar_students"]["names"].tolist() == [["dan"]]


def test_misconception_heat_map(dashboard, run):
    grid = run[1]["misconceptions"]
    assert grid.loc["ring bytes grow with N"].to_dict() == {"bob": 1, "cat": 1, "dan": 0}
    assert grid.loc["pipeline parallelism alone is enough"].to_dict() == {"bob": 1, "cat": 0, "dan": 0}
    assert grid.loc["the NIC, not the shrinking compute, is the wall"].sum() == 1 and grid.values.sum() == 4
    app, defs = dashboard
    _, picked = app.run(defs={**defs, "heat_plot": Picked([], [{"x": "bob", "y": "ring bytes grow with N"}])})
    assert picked["heat_students"][["student", "answer"]].values.tolist() == [["bob", "A"]]


def test_design_scatter_is_the_engines_and_a_click_lists_students(dashboard, run):
    designs = run[1]["designs"]
    good, pipe = act2_outcomes(GOOD, {}), act2_outcomes(PIPE, {})
    rows = {(r.tp, r.pp): r for r in designs.itertuples()}
    assert set(rows) == {(8, 8), (1, 32)}
    assert rows[(8, 8)].students == ["ann", "cat", "dan"] and rows[(8, 8)].mfu == pytest.approx(good["mfu"])  # dan's stored 0.99 is not used
    assert rows[(1, 32)].students == ["bob"] and rows[(1, 32)].fits == pipe["fits"]
    app, defs = dashboard
    index = list(designs.itertuples()).index(rows[(1, 32)])
    _, picked = app.run(defs={**defs, "design_plot": Picked([index])})
    assert picked["design_students"]["students"].tolist() == [["bob"]]


def test_missing_students_flags_and_unreadable_files(run):
    defs = run[1]
    assert defs["missing"][["student", "no ledger"]].values.tolist() == [["eve", True]]
    flags = defs["flags"].set_index("file")
    assert flags.loc["dan-" + Path(next(f for f in defs["table"]["file"] if "/dan-" in f)).name.split("dan-")[1], "tampered"] == "yes"
    assert {f for f in flags.index if flags.loc[f, "identity"].startswith("same id")} == {"ann-copy.json", Path(next(f for f in defs["table"]["file"] if "/ann-" in f)).name}
    assert not any(f.startswith("bob-") for f in flags.index)  # bob only changed an answer after the reveal: no flag
    assert [Path(f).name for f, _ in defs["problems"]] == ["broken.json"]
    assert defs["unread"]["file"].map(lambda f: Path(f).name).tolist() == ["broken.json"]


def test_gradebook_in_points(run):
    """The numeric grade book: 1 point per question by default; eve (roster, no ledger) at 0."""
    book = run[1]["gradebook_view"].set_index("student")
    assert book.loc["ann", LAB] == 2.0  # B and C, both the engine's
    assert book.loc["bob", LAB] == 0.0  # A (changed to B later: the first answer counts) and B
    assert book.loc["cat", LAB] == 0.0  # A, skipped
    assert book.loc["dan", LAB] == 1.0  # D, C: tampering a stored outcome does not change the points, it is flagged
    assert book.loc["eve", LAB] == 0.0 and book.loc["eve", "file"] == ""
    assert "tampered" in book.loc["dan", "flags"]
    assert (book["possible"] == run[1]["book"].course_possible).all()


def test_engines_answer_is_computed_even_when_nobody_got_it(tmp_path):
    """Review finding: the answer column was read off the students who got it right."""
    ledger = DesignLedger("zed", tmp_path)
    ledger.commit_prediction("11_long_context_moe", "fit", "A")
    _, defs = _app().run(defs={"folder_input": mo.ui.text(value=str(tmp_path)), "roster_input": mo.ui.text(value="")})
    row = defs["questions_table"].set_index(["lab", "question"]).loc[("11_long_context_moe", "fit")]
    from labs.core.scenarios import lab11

    assert lab11.fit_answer() == "C"
    assert row["right"] == 0 and row["right answer"] == next(o.label for o in QUESTION_OPTIONS[("11_long_context_moe", "fit")] if o.key == "C")


def test_committed_but_not_submitted_counts(tmp_path):
    """Review finding M2: a folder of commits without a Submit showed 0 students."""
    for name, answer in (("amy", "B"), ("ben", "A")):
        DesignLedger(name, tmp_path).commit_prediction(LAB, "cause", answer)
    _, defs = _app().run(defs={"folder_input": mo.ui.text(value=str(tmp_path)), "roster_input": mo.ui.text(value="")})
    cause = defs["questions_table"].set_index("question").loc["cause"]
    assert (cause["committed"], cause["right"]) == (2, 1)
    assert defs["table"]["student"].nunique() == 2


def test_marking_view_saves_marks_the_grader_reads(tmp_path):
    from labs.core.scenarios import lab09
    from labs.gradebook import marks

    inputs = dict(scenario="13b-a100", tp=1, pp=1, zero_stage=3, micro_batch=1, rank_order=lab09.RANK_ORDERS[0], reason_tp="none needed: ZeRO-3 fits",
                  paragraph="<b>DP=64</b> with ZeRO-3; the all-gathers on the NICs bound the step")
    ledger = DesignLedger("mia", tmp_path / "class")
    ledger.commit_prediction(lab09.LAB, "dp64", "C")
    ledger.save_step(lab09.LAB, "worksheet", inputs, {"dp64": "C"}, lab09.worksheet_outcomes(inputs, {"dp64": "C"}))
    marks_path = tmp_path / "marks.json"
    defs = {"folder_input": mo.ui.text(value=str(tmp_path / "class")), "roster_input": mo.ui.text(value=""), "marks_input": mo.ui.text(value=str(marks_path))}
    _, out = _app().run(defs=defs)
    assert out["to_mark"] == [("mia", str(ledger.path), lab09.LAB, "worksheet")]
    assert set(out["marking_fields"]) == {*lab09.REASONS, "paragraph"}

    class Pressed:
        value = True

    class Field:
        def __init__(self, level, comment):
            self.value = {"level": level, "comment": comment}

    fields = {"paragraph": Field("1.5", "no bottleneck time"), "reason_tp": Field("1.0", ""), **{f: Field(None, "") for f in lab09.REASONS[1:]}}
    _app().run(defs={**defs, "save_marks_button": Pressed(), "marking_fields": fields, "marking_student": "mia", "marking_lab": lab09.LAB,
                     "marking_points": out["marking_points"]})
    saved = marks.load(marks_path)["mia"][lab09.LAB]
    assert saved == {"paragraph": {"points": 1.5, "comment": "no bottleneck time"}, "reason_tp": {"points": 1.0, "comment": ""}}
    from labs import grade

    assert grade.main([str(tmp_path / "class"), "--marks", str(marks_path), "--gradebook", str(tmp_path / "book.csv")]) == 0
    row = next(r for r in csv.DictReader((tmp_path / "book.csv").open()) if r["student"] == "mia")
    assert float(row[lab09.LAB]) == 1 + 1.5 + 1.0  # dp64 right, the paragraph's 1.5, reason_tp's 1


def test_live_lecture_hold_release_and_histogram(tmp_path, monkeypatch):
    """The panel holds and releases through labs.core.lecture and counts the answers dropped in
    the lecture folder, each only when its file belongs to the student it names (the hub's rule)."""
    import pwd

    from labs.core import lecture

    folder = tmp_path / "lecture"
    monkeypatch.setenv("LABS_LECTURE_DIR", str(folder))
    lecture.prepare(folder)
    me = pwd.getpwuid(os.getuid()).pw_name
    lecture.record_answer(LAB, "cause", me, {"answer": "B"})
    lecture.record_answer(LAB, "cause", "amy", {"answer": "A"})  # a file this user wrote in amy's name: not amy's

    class Button:
        def __init__(self, pressed):
            self.value = pressed

    base = {"folder_input": mo.ui.text(value=str(tmp_path)), "roster_input": mo.ui.text(value=""),
            "lecture_question": mo.ui.dropdown(options={"cause": f"{LAB}|cause"}, value="cause"), "lecture_timer": None}
    app = _app()
    _, out = app.run(defs={**base, "hold_button": Button(True), "release_button": Button(False)})
    assert out["live_key"] == (LAB, "cause") and out["held_now"] is True and lecture.is_held(LAB, "cause")
    from labs.variants import variant

    mine = variant(LAB, me, None).questions["cause"]  # the drop's letter read in my variant of the lab as it is now
    option = next(o for o in mine.options if o.key == "B")
    assert out["live_counts"] == {option.label: 1}
    assert out["live_bars"]["right"].tolist() == [int(mine.key == "B")]
    _, out = app.run(defs={**base, "hold_button": Button(False), "release_button": Button(True)})
    assert out["held_now"] is False and not lecture.is_held(LAB, "cause")


def test_a_hostile_folder_does_not_stop_the_dashboard(tmp_path):
    (tmp_path / "a.json").write_bytes(b"\xff\xfe not json")
    (tmp_path / "b.json").write_text(json.dumps({"schema_version": 1, "student": "x", "engine_version": "0", "created": "t", "updated": "t",
                                                 "labs": {LAB: {"act1": {"saved": "t", "inputs": {**ACT1, "gpus": "64"}, "predictions": {}, "outcomes": {}}}}}))
    (tmp_path / "c.json").symlink_to(tmp_path / "a.json")
    _, defs = _app().run(defs={"folder_input": mo.ui.text(value=str(tmp_path)), "roster_input": mo.ui.text(value="")})
    assert sorted(Path(f).name for f, _ in defs["problems"]) == ["a.json", "c.json"]
    assert defs["questions_table"].empty and defs["table"]["status"].str.startswith("invalid inputs").all()


def test_marimo_check_strict():
    from marimo_cli import strict_check_failure  # one check run for every notebook

    failure = strict_check_failure(ROOT / "instructor" / "class_dashboard.py")
    assert not failure, failure


def test_a_synthetic_class_from_make_class(synthetic_class):
    """scripts/make_class.py's class (conftest's synthetic_class, 16 students): every hostile file is listed or
    flagged, and the dashboard's counts agree with the grader's table row by row."""
    make, folder, roster = synthetic_class.make, synthetic_class.folder, synthetic_class.roster
    assert "LABS_CLASS_SALT=demo-salt" in (folder / "class.env").read_text()
    module = _module()
    module.ARGS["salt"] = "demo-salt"
    try:
        _, defs = module.app.run(defs={"folder_input": mo.ui.text(value=str(folder)), "roster_input": mo.ui.text(value=str(roster))})
    finally:
        module.ARGS.pop("salt")
    table, answers = defs["table"], defs["answers"]
    # every ledger carries its variants, drawn with the class's salt; the grader regenerates them: no honest ledger is flagged
    documents = defs["documents"]
    honest = [f for f in documents if Path(f).name.startswith("student-")]
    assert honest and all(documents[f].get("variants") for f in honest)
    from labs.variants import salt_fingerprint

    assert {v["salt"] for f in honest for v in documents[f]["variants"].values()} == {salt_fingerprint("demo-salt")}
    ok = table[table["file"].isin(honest)]
    assert not ok["status"].str.startswith("recorded variant").any()
    # the students' letters name different options: the bars are by option content, no letter or internal id on them
    for (lab, question) in {(r.lab, r.question) for r in answers.itertuples()}:
        bars = module.answer_distribution(answers, (lab, question))
        assert not any(a in set("ABCD") or "edition" in a or "@" in a for a in bars["answer"]), (lab, question, list(bars["answer"]))
        assert bars["students"].sum() == len(answers[answers["lab"].eq(lab) & answers["question"].eq(question)])
    assert (answers["right"] == True).any() and answers["variant"].eq("yes").all()  # noqa: E712
    # Labs 14 and 15 are in the class (make_class's _diagnosis and _routing): every question has its
    # bars, and a multiple-choice one's bars are its options' text in the students' own variants
    from labs.variants import variant as drawn_variant

    for lab, asked in (("14_debugging_at_scale", {"culprit": False, "kind": True, "timeout": False}), ("15_moe_routing", {"balance": False, "drops": True, "cost": False})):
        mine = answers[answers["lab"].eq(lab)]
        assert set(mine["question"]) == set(asked), (lab, set(mine["question"]))
        for question, by_text in asked.items():
            bars = module.answer_distribution(answers, (lab, question))
            assert len(bars) >= 1 and bars["students"].sum() == mine["question"].eq(question).sum() > 0, (lab, question)
            if by_text:
                texts = {o.label for s in mine["student"] for o in drawn_variant(lab, s, salt="demo-salt").questions[question].spec.options}
                texts |= {re.sub(r"\d[\d,.]*", "…", t) + " (numbers per variant)" for t in texts}  # an option whose numbers differ between the students' variants (content_label)
                assert set(bars["answer"]) - {"skipped"} <= texts and len(set(bars["answer"]) & texts) >= 2, (lab, question, list(bars["answer"]))
    assert sorted(Path(f).name for f, _ in defs["problems"]) == ["zz-future-schema.json", "zz-truncated.json"]
    flags = defs["flags"].set_index("file")
    assert flags.loc["zz-tampered.json", "tampered"] == "yes"
    assert flags.loc["zz-duplicate-id.json", "identity"].startswith("same id in 1 other file")
    assert "file named for another id" in flags.loc[next(f for f in flags.index if f.startswith("zz-named-for-another")), "identity"]
    assert table.loc[table["file"].str.endswith("zz-text-number.json") & table["step"].eq("act1"), "status"].str.startswith("invalid inputs").all()
    assert defs["missing"]["student"].str.startswith("Absent Student").sum() == make.NEVER_SUBMITTED
    questions = defs["questions_table"].set_index(["lab", "question"])
    # the counts are the committed answers in the ledgers (the first file of each student), judged as the grader judges them
    firsts = {}
    for f in sorted(documents):
        firsts.setdefault(documents[f]["student"], documents[f])
    graded = table[table["file"].eq(table.groupby("student")["file"].transform("min")) & table["status"].eq("ok")]
    from labs.grade import SPECS as grade_specs

    for (lab, question), row in questions.iterrows():
        commits = [d["predictions"][lab][question] for d in firsts.values() if question in d.get("predictions", {}).get(lab, {})]
        assert row["committed"] + row["skipped"] == len(commits) == len(answers[answers["lab"].eq(lab) & answers["question"].eq(question)])
        assert row["skipped"] == sum(c["answer"] is None for c in commits)
        assert row["changed after commit"] == sum(bool(c["changes"]) for c in commits)
        mine = answers[answers["lab"].eq(lab) & answers["question"].eq(question)].set_index("student")["right"]
        step, outcome = next((st, spec.questions[question]) for (l, st), spec in grade_specs.items() if l == lab and question in spec.questions)
        for student, right in graded[graded["lab"].eq(lab) & graded["step"].eq(step)].set_index("student")[outcome].dropna().items():
            assert bool(mine[student]) == bool(right), (lab, question, student)  # the grader's judgement, at the student's own key
    assert len(questions) == len(make.answer_key())


def test_the_gallery_of_labs_does_not_list_the_dashboard():
    """Review finding M6a: `marimo run labs/` listed the class dashboard to students. Every marimo
    app under labs/ (what the gallery lists, subfolders included) is a numbered lab, or a numbered
    problem set in labs/problems/ (`marimo run labs/problems/`, issue 40)."""
    import re

    apps = [p for p in (ROOT / "labs").rglob("*.py") if "marimo.App(" in p.read_text(encoding="utf-8")]
    labs = [p for p in apps if re.fullmatch(r"\d\d_[a-z0-9_]+\.py", p.name) and p.parent == ROOT / "labs"]
    problem_sets = [p for p in apps if re.fullmatch(r"ps\d\d_[a-z0-9_]+\.py", p.name) and p.parent == ROOT / "labs" / "problems"]
    assert labs and sorted(labs + problem_sets) == sorted(apps), sorted(set(apps) - set(labs) - set(problem_sets))
    assert "marimo.App(" in (ROOT / "instructor" / "class_dashboard.py").read_text()


def test_a_wrong_answer_names_the_misconception_of_its_own_edition(tmp_path):
    """Lab 06's second edition gives the ZeRO-2 question other options than the first: a wrong
    answer committed in it is named by its own option's misconception, and the two editions'
    options are never counted as one."""
    from labs.variants import variant

    new, old = variant("06", "ivy", salt="", version=2), variant("06", "ivy", salt="", version=1)  # two editions with options of the same ids
    assert new.version == 2
    for name, v in (("ivy", new), ("old", old)):
        q = v.questions["zero2"]
        wrong = next(letter for letter in "ABCD" if letter != q.key)
        DesignLedger(name if v is new else "ivy-old", tmp_path).commit_prediction(v.lab, "zero2", wrong, variant=v.record())
    _, defs = _app().run(defs={"folder_input": mo.ui.text(value=str(tmp_path)), "roster_input": mo.ui.text(value="")})
    answers = defs["answers"]
    rows = answers[answers["question"].eq("zero2")].set_index("student")
    q = new.questions["zero2"]
    wrong = next(letter for letter in "ABCD" if letter != q.key)
    expected = next(o.misconception for o in q.options if o.key == wrong)
    assert expected and rows.loc["ivy", "misconception"] == expected
    assert rows.loc["ivy", "option_id"] == f"{q.option_id(wrong)}@2" and "@" not in rows.loc["ivy-old", "option_id"]
    assert rows.loc["ivy", "option"] == next(o.label for o in q.options if o.key == wrong)  # what ivy read, never an id


def test_a_wrong_option_naming_no_misconception_reads_as_itself(tmp_path, monkeypatch):
    """Every option names a misconception today; one that names none (here all, patched) is still
    an option the student's variant offered: its wrong answer reads as the question and that option
    as the student read it (its text in their own edition, never an internal id), never as an
    answer the lab does not offer. An answer no option has still does."""
    from labs.variants import Question, variant

    new, old = variant("06", "ivy", salt=""), variant("06", "ivy-old", salt="", version=1)
    wrong = {}
    for v in (new, old):
        q = v.questions["zero2"]
        wrong[v.student] = next(letter for letter in "ABCD" if letter != q.key)
        DesignLedger(v.student, tmp_path).commit_prediction(v.lab, "zero2", wrong[v.student], variant=v.record())
    from labs.core.scenarios.common import Option

    real = Question.options  # every option naming no misconception
    monkeypatch.setattr(Question, "options", property(lambda self: tuple(Option(o.key, o.label, "") for o in real.fget(self))))
    documents = {str(p): json.loads(p.read_text()) for p in tmp_path.glob("*.json")}
    dashboard = _fresh_module()  # loaded with Question.options patched
    rows = dashboard.commit_answers(documents, "").query("question == 'zero2'").set_index("student")["misconception"]
    for v in (new, old):  # each as that student read it: the option's text in their edition
        label = next(o.label for o in v.questions["zero2"].options if o.key == wrong[v.student])
        assert rows[v.student] == f"06 zero sweep · zero2: {label}"

    # a ledger without a variant whose answer is no option of the lab's
    bare = {"x.json": {"student": "zed", "predictions": {"06_zero_sweep": {"zero2": {"answer": "F", "committed": "t", "changes": []}}}, "labs": {}}}
    assert dashboard.commit_answers(bare, "").query("question == 'zero2'")["misconception"].tolist() == ["an answer the lab does not offer"]


def _variant_student(folder, name, lab, question, pick, salt=""):
    """A student committing, in their own variant, the answer `pick(question_as_they_saw_it)`."""
    from labs.variants import variant

    v = variant(lab, name, salt=salt)
    q = v.questions[question]
    DesignLedger(name, folder).commit_prediction(v.lab, question, pick(q), variant=v.record())
    return q


def test_bars_count_options_by_content_across_variants(tmp_path):
    """Issue 34 item 6: one student's "A" is another's "C". Students whose variants order the
    options differently and who press different letters for the same option make one bar, named by
    its text; it is green for those whose own key it is. Before, the bars were letters (or ids)."""
    from labs.variants import variant

    names = [f"s{i}" for i in range(40)]
    orders = {n: variant("06", n, salt="").questions["zero2"] for n in names}
    target = orders[names[0]].spec.options[0].key  # one option, by its id in the scenario module
    letters = {n: "ABCD"[q.order.index(target)] for n, q in orders.items()}
    assert len(set(letters.values())) > 1  # the same option has several letters in this class
    for n in names:
        _variant_student(tmp_path, n, "06", "zero2", lambda q, n=n: letters[n])
    _, defs = _app().run(defs={"folder_input": mo.ui.text(value=str(tmp_path)), "roster_input": mo.ui.text(value="")})
    module = _module()
    bars = module.answer_distribution(defs["answers"], ("06_zero_sweep", "zero2"))
    label = next(o.label for o in orders[names[0]].spec.options if o.key == target)
    assert bars["answer"].tolist() == [label] and bars["students"].tolist() == [40]
    right_for = sum(q.spec.correct == target for q in orders.values())
    assert bars["right"].tolist() == [right_for] and bars["wrong"].tolist() == [40 - right_for]
    figure = module.answer_figure(bars, ("06_zero_sweep", "zero2"))
    assert [t.y[0] for t in figure.data[:2]] == [right_for, 40 - right_for]  # stacked: green right-for-them, red wrong-for-them
    assert not any("edition" in str(x) or str(x) in "ABCD" for t in figure.data for x in t.x)


def test_a_number_is_charted_as_its_error_against_the_students_own_key(tmp_path):
    """A typed number's bar is its error against the student's own key (keys differ by variant):
    the engine's number exactly, twice it, a quarter of it, and text."""
    plan = {"ann": lambda q: f"{q.spec.answer:g}", "bob": lambda q: f"{2 * q.spec.answer:g}", "cat": lambda q: f"{q.spec.answer / 4:g}", "dan": lambda q: "lots"}
    keys = {n: _variant_student(tmp_path, n, "06", "fit", pick).spec.answer for n, pick in plan.items()}
    assert len(set(keys.values())) > 1  # different keys in this class
    _, defs = _app().run(defs={"folder_input": mo.ui.text(value=str(tmp_path)), "roster_input": mo.ui.text(value="")})
    bars = _module().answer_distribution(defs["answers"], ("06_zero_sweep", "fit")).set_index("answer")
    assert bars.loc["within 5%", "names"] == ["ann"] and bars.loc["within 5%", "right"] == 1
    assert bars.loc["about ×2", "names"] == ["bob"] and bars.loc["about ×2", "wrong"] == 1
    assert bars.loc["about ÷4 to ÷3", "names"] == ["cat"] and bars.loc["not a number", "names"] == ["dan"]
    row = defs["questions_table"].set_index("question").loc["fit"]
    assert row["right"] == 1 and row["right answer"].startswith("each student's own number")
    errors = defs["answers"].set_index("student")["error"]
    assert errors["bob"] == pytest.approx(1.0, abs=1e-4) and errors["cat"] == pytest.approx(-0.75, abs=1e-4)


def test_the_first_chart_is_drawn_before_any_grading(tmp_path, monkeypatch):
    """Issue 34 item 10: the answer chart needs the commits alone; the grading of every step runs
    after it (it took 17 s at 200 ledgers and 26 s at 1,000 before the first chart)."""
    from labs.gradebook import cache

    for name, answer in (("amy", "B"), ("ben", "A")):
        DesignLedger(name, tmp_path).commit_prediction(LAB, "cause", answer)
    module = _module()
    events = []
    real_refresh, real_figure = cache.ClassCache.refresh, module.answer_figure

    def refresh(self, *args, **kwargs):
        events.append("graded")
        return real_refresh(self, *args, **kwargs)

    def figure(*args, **kwargs):
        events.append("chart")
        return real_figure(*args, **kwargs)

    monkeypatch.setattr(cache.ClassCache, "refresh", refresh)
    _, defs = module.app.run(defs={"folder_input": mo.ui.text(value=str(tmp_path)), "roster_input": mo.ui.text(value=""), "answer_figure": figure})
    assert events == ["chart", "chart", "graded"], events  # the answer chart and the live lecture's, then the grading
    assert defs["answer_bars"]["students"].tolist() == [1, 1] and defs["table"]["student"].nunique() == 2


def test_marking_view_shows_ids_and_free_text_as_typed(tmp_path):
    """N9: a student id and free text holding markdown images were rendered as <img> (the
    instructor's browser fetched them, with the hub's cookies). Now they are text."""
    from labs.core.scenarios import lab09

    name = "![x](http://127.0.0.1:9/beacon-name)"
    inputs = dict(scenario="13b-a100", tp=1, pp=1, zero_stage=3, micro_batch=1, rank_order=lab09.RANK_ORDERS[0],
                  reason_tp="![r](http://127.0.0.1:9/beacon-reason)", paragraph="see ![p](http://127.0.0.1:9/beacon-paragraph) <img src=x>")
    ledger = DesignLedger(name, tmp_path / "class")
    ledger.commit_prediction(lab09.LAB, "dp64", "C")
    ledger.save_step(lab09.LAB, "worksheet", inputs, {"dp64": "C"}, lab09.worksheet_outcomes(inputs, {"dp64": "C"}))
    outputs, defs = _app().run(defs={"folder_input": mo.ui.text(value=str(tmp_path / "class")), "roster_input": mo.ui.text(value=""),
                                     "marks_input": mo.ui.text(value=str(tmp_path / "marks.json"))})
    assert defs["marking_student"] == name
    page = "".join(getattr(o, "text", "") for o in outputs if o is not None)
    assert "beacon-paragraph" in page and "beacon-reason" in page and "beacon-name" in page  # shown...
    assert "<img" not in page  # ...as text: no image the browser would fetch
    assert "&lt;img src=x&gt;" in page


def test_the_lecture_panel_does_not_refresh_by_itself_by_default(run):
    """The panel refreshed every 2 s by default: the page never idled and a projected chart kept
    redrawing. It is off until the instructor picks an interval, the shortest offered 5 s."""
    timer = run[1]["lecture_timer"]
    assert timer._args.args["default-interval"] is None
    assert min(int(o.rstrip("s")) for o in timer._args.args["options"]) >= 5


def test_the_live_lecture_panel_shows_what_the_drop_box_reader_could_not_count(tmp_path, monkeypatch):
    """Reliability N10: a drop box filled with junk (or past its cap) no longer empties the
    histogram silently: the panel shows lecture.read_answers' notes, word for word, beside it."""
    import html
    import pwd

    from labs.core import lecture

    folder = tmp_path / "lecture"
    monkeypatch.setenv("LABS_LECTURE_DIR", str(folder))
    monkeypatch.setattr(lecture, "MAX_ANSWER_FILES", 3)  # the same module the dashboard reads through
    lecture.prepare(folder)
    me = pwd.getpwuid(os.getuid()).pw_name
    lecture.record_answer(LAB, "cause", me, {"answer": "B"})
    base = {"folder_input": mo.ui.text(value=str(tmp_path)), "roster_input": mo.ui.text(value=""),
            "lecture_question": mo.ui.dropdown(options={"cause": f"{LAB}|cause"}, value="cause"), "lecture_timer": None,
            "hold_button": mo.ui.run_button(), "release_button": mo.ui.run_button()}

    def panel():
        outputs, out = _app().run(defs=base)
        text = html.unescape(" ".join(o.text for o in outputs if hasattr(o, "text")))
        return text, out

    text, out = panel()
    assert "drop box" not in text and out["live_answers"].shape[0] == 1  # nothing to say: no note
    for i in range(5):  # five entries that are not answer files: past the cap of 3
        (folder / lecture.ANSWERS / f"junk-{i}.tmp").write_text("x")
    notes = lecture.read_answers(LAB, "cause", path=folder).notes
    assert len(notes) == 1 and "holds 5 entries that are not answer files" in notes[0]
    text, out = panel()
    assert notes[0] in text and out["live_answers"].shape[0] == 1  # said, and my answer still counted


def test_the_first_chart_waits_for_its_own_labs_answers_only(synthetic_class):
    """The question picker and the first chart read one lab's committed answers (its students'
    variants of that lab); the whole class's (every lab's variants, ~6 s of CPU for 1,000
    ledgers) are judged after the chart is drawn, and are the same rows in the same order."""
    import ast

    module = _module()
    tree = ast.parse((ROOT / "instructor" / "class_dashboard.py").read_text())
    cells = {node: {a.arg for a in node.args.args} for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "_"}
    defined = {node: {n.id for ret in ast.walk(node) if isinstance(ret, ast.Return) and ret.value is not None for n in ast.walk(ret.value) if isinstance(n, ast.Name)}
               for node in cells}
    picker = next(node for node in cells if "question_dropdown" in defined[node])
    bars = next(node for node in cells if "answer_bars" in defined[node])
    plot = next(node for node in cells if "answer_plot" in defined[node])
    for cell in (picker, bars, plot):
        assert not cells[cell] & {"answers", "questions_table"}, f"the cell defining {sorted(defined[cell])} reads {sorted(cells[cell])}"
    order = _run_order()
    chart = next(i for i, cell in enumerate(order) if "answer_plot" in cell.defs)
    later = {"answers", "table", "scores", "documents", "problems", "read_documents", "read_problems"}  # every lab's answers, validation, grading
    after = [i for i, cell in enumerate(order) if (cell.defs | cell.refs) & later]
    assert after and min(after) > chart, [sorted(order[i].defs) for i in after if i < chart]

    from labs.gradebook import cache

    documents, _ = cache.ClassCache("demo-salt").read(synthetic_class.folder)
    whole = module.commit_answers(documents, "demo-salt")
    asked = module.answered_questions(documents)
    assert asked == sorted({(r.lab, r.question) for r in whole.itertuples()}) and len(asked) > 40
    by_lab = {lab: module.commit_answers(documents, "demo-salt", labs=(lab,)) for lab, _ in asked}
    joined = module.answers_of_labs(by_lab)
    assert joined.equals(whole) and list(joined.dtypes) == list(whole.dtypes), (joined.dtypes, whole.dtypes)


def test_the_first_charts_skimmed_answers_are_the_validated_ledgers(synthetic_class, tmp_path):
    """Issue 34 item 10: a served dashboard charts answers skimmed from each ledger (ledger_fast)
    before validating every ledger. The skim's parts of the valid ledgers are the validated
    ledgers' parts, so the answers are the same frame; a file the validation refuses (the class's
    hostile ones, a duplicate key) makes same_part false, and the page then draws from the
    validated ledgers (check_read)."""
    from labs.core import ledger_fast
    from labs.gradebook import cache
    from labs.grading import grader

    module = _module()
    documents, problems = cache.ClassCache("demo-salt").read(synthetic_class.folder)
    skimmed = ledger_fast.skim(grader.collect([str(synthetic_class.folder)]), grader.MAX_BYTES)
    refused = set(skimmed) - set(documents)
    assert refused and refused <= {file for file, _ in problems}  # hostile files skimmed, refused by the full read
    assert not ledger_fast.same_part(skimmed, documents)
    kept = {file: part for file, part in skimmed.items() if file in documents}
    assert ledger_fast.same_part(kept, documents)
    assert module.commit_answers(kept, "demo-salt").equals(module.commit_answers(documents, "demo-salt"))

    class State:
        value = None

        def __call__(self, value):
            self.value = value

    handed = State()
    assert module.check_read(cache.ClassCache("demo-salt"), str(synthetic_class.folder), kept, handed)[0] == documents and handed.value is None
    module.check_read(cache.ClassCache("demo-salt"), str(synthetic_class.folder), skimmed, handed)
    assert handed.value == documents  # the page draws again from the validated ledgers

    # a duplicate key: skimmed (the last value wins), refused by the full read
    one = next(file for file in sorted(documents))
    text = Path(one).read_text()
    (tmp_path / "dup.json").write_text(text.replace('"engine_version"', '"engine_version": "x", "engine_version"', 1))
    (tmp_path / "ok.json").write_text(text)
    skimmed = ledger_fast.skim(grader.collect([str(tmp_path)]), grader.MAX_BYTES)
    documents, problems = cache.ClassCache("demo-salt").read(tmp_path)
    assert len(skimmed) == 2 and list(documents) == [str(tmp_path / "ok.json")] and "duplicate key" in problems[0][1]
    assert not ledger_fast.same_part(skimmed, documents)


def test_a_skimmed_part_of_another_shape_is_left_out_until_the_full_read(synthetic_class, tmp_path):
    """The first chart's code (committed, commit_answers) reads the skimmed parts before any
    validation: a part whose fields have another shape than ledger.schema.json gives them (a
    commit record that is text, one with a field the schema lacks or without its time, the
    predictions or variants not an object, a student that is not text, a step's predictions a
    list) is left out of the skim, and the chart is drawn from the rest; the full read refuses
    each file and names it."""
    from labs.core import ledger_fast
    from labs.gradebook import cache
    from labs.grading import grader

    module = _module()
    documents, _ = cache.ClassCache("demo-salt").read(synthetic_class.folder)
    good_file = next(file for file in sorted(documents) if documents[file].get("predictions"))
    good = json.loads(Path(good_file).read_text())
    lab, question = next((lab, q) for lab, qs in good["predictions"].items() for q in qs)
    record = good["predictions"][lab][question]
    shapes = {
        "record_text": {**good, "predictions": {lab: {question: "B"}}},
        "record_extra": {**good, "predictions": {lab: {question: {**record, "extra": 1}}}},
        "record_no_time": {**good, "predictions": {lab: {question: {k: v for k, v in record.items() if k != "committed"}}}},
        "predictions_text": {**good, "predictions": "B"},
        "variants_list": {**good, "variants": [1]},
        "student_object": {**good, "student": {"name": "x"}},
        "step_predictions_list": {**good, "labs": {lab: {"step": {"predictions": [1]}}}},
    }
    for name, doc in shapes.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    (tmp_path / "ok.json").write_text(json.dumps(good))
    skimmed = ledger_fast.skim(grader.collect([str(tmp_path)]), grader.MAX_BYTES)
    assert list(skimmed) == [str(tmp_path / "ok.json")]
    validated, problems = cache.ClassCache("demo-salt").read(tmp_path)
    assert list(validated) == [str(tmp_path / "ok.json")] and {Path(file).stem for file, _ in problems} == set(shapes)
    assert ledger_fast.same_part(skimmed, validated)
    assert module.commit_answers(skimmed, "demo-salt").equals(module.commit_answers(validated, "demo-salt"))

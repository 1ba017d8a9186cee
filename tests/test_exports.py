"""The exports and feedback pages of issue 34 (item 5 and the reviews of 38bda0b: reliability N5,
N7, N13; newcomer M3, the Gradescope, Canvas and feedback findings). Each test failed on 38bda0b.

Gradescope is run as Gradescope runs it: the zip extracted into <root>/source, the ledger in
<root>/submission, Gradescope's submission_metadata.json beside them, `bash run_autograder`, and
results.json read back; the environment the autograder runs in carries no LABS_* variable, so
the salt and the key can only have come from the zip."""

import csv
import io
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from labs import grade
from labs.core.state import DesignLedger
from labs.gradebook import book, due, exports, feedback, points
from labs.gradebook import roster as class_roster
from labs.variants import variant

ROOT = Path(__file__).resolve().parents[1]
LMS = ROOT / "tests" / "data" / "lms"
LAB = "05_parallelism"
KEY = "k" * 32
SALT = "fall-2026"
SALTED_ID, SALTED_KEY = "student-2", "B"  # an id whose Lab 05 cause key moves with the salt (edition 6)


def _metadata(email, name="", sid=None):
    return {"id": 1, "created_at": "2026-12-01T10:00:00-08:00", "assignment": {"due_date": "2026-12-01T23:59:00-08:00", "title": "Labs"},
            "submission_method": "upload", "users": [{"email": email, "id": 7, "name": name, **({"sid": sid} if sid else {})}]}


def _autograde(zpath, ledger: Path, metadata, tmp_path) -> dict:
    """Run the zip's run_autograder as Gradescope does; results.json."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zpath) as z:
        z.extractall(root / "source")
    (root / "submission").mkdir()
    (root / "submission" / ledger.name).write_bytes(ledger.read_bytes())
    if metadata is not None:
        (root / "submission_metadata.json").write_text(json.dumps(metadata))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABS_")}
    env.update(AUTOGRADER_ROOT=str(root), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, check=True, capture_output=True, timeout=180)
    return json.loads((root / "results" / "results.json").read_text())


@pytest.fixture(scope="module")
def salted(tmp_path_factory):
    """SALTED_ID on a class server that signs (KEY) and salts (SALT): Lab 05's cause committed at
    the salted variant's key (B; unsalted, the key is A and B says something else), design
    committed wrong (the first letter that is not the variant's key)."""
    v = variant("05", SALTED_ID, salt=SALT)
    assert (v.questions["cause"].key, variant("05", SALTED_ID, salt="").questions["cause"].key) == (SALTED_KEY, "A")
    folder = tmp_path_factory.mktemp("salted")
    old = os.environ.get("LABS_SIGNING_KEY")
    os.environ["LABS_SIGNING_KEY"] = KEY
    try:
        ledger = DesignLedger(SALTED_ID, folder)
        ledger.commit_prediction(LAB, "cause", SALTED_KEY, variant=v.record())
        ledger.commit_prediction(LAB, "design", next(k for k in "ABCD" if k != v.questions["design"].key), variant=v.record())
    finally:
        os.environ.pop("LABS_SIGNING_KEY") if old is None else os.environ.__setitem__("LABS_SIGNING_KEY", old)
    return folder, ledger.path, v


def _zip(folder, tmp_path, monkeypatch, *extra, salt=SALT, key=KEY):
    for name, value in (("LABS_CLASS_SALT", salt), ("LABS_SIGNING_KEY", key)):
        monkeypatch.setenv(name, value) if value else monkeypatch.delenv(name, raising=False)
    zpath = tmp_path / "autograder.zip"
    assert grade.main([str(folder), "--gradescope-zip", str(zpath), *extra]) == 0
    return zpath


# ---- Gradescope -----------------------------------------------------------------------------
def test_gradescope_carries_the_salt_and_the_key_as_configured(salted, tmp_path, monkeypatch):
    """M3: the autograder dropped the salt (wrong variant, wrong engine's answer) and had no key
    (an entry edited after signing earned full points). Now both travel in a 0600 config."""
    folder, ledger, v = salted
    zpath = _zip(folder, tmp_path, monkeypatch)
    with zipfile.ZipFile(zpath) as z:
        info = z.getinfo(exports.CONFIG)
        assert stat.S_IMODE(info.external_attr >> 16) == 0o600 and stat.S_ISREG(info.external_attr >> 16)
        assert json.loads(z.read(exports.CONFIG))["env"] == {"LABS_CLASS_SALT": SALT, "LABS_SIGNING_KEY": KEY}
    result = _autograde(zpath, ledger, _metadata(f"{SALTED_ID}@uni.edu", "Student Two"), tmp_path / "honest")
    tests = {t["name"]: t for t in result["tests"]}
    cause = tests["Lab 05: parallelism · cause"]
    label = {o.key: o.label for o in v.questions["cause"].options}[SALTED_KEY]
    assert (cause["score"], cause["status"]) == (1.0, "passed") and f"The engine's answer: {SALTED_KEY}: {label}" in cause["output"]
    assert f"Your committed answer: {SALTED_KEY}: {label}." in cause["output"]  # the letter and its option's words
    assert "Integrity: signed." in cause["output"]  # the key checked the server's signature
    assert result["score"] == 1.0
    edited = tmp_path / "edited" / ledger.name
    edited.parent.mkdir()
    doc = json.loads(ledger.read_text())
    doc["predictions"][LAB]["design"]["answer"] = v.questions["design"].key  # the right answer, written in by hand after signing
    edited.write_text(json.dumps(doc))
    result = _autograde(zpath, edited, _metadata(f"{SALTED_ID}@uni.edu"), tmp_path / "after")
    design = next(t for t in result["tests"] if t["name"].endswith("design"))
    assert design["score"] == 0.0 and "not trusted" in design["output"]  # the grade book's rule, as it stands


def test_gradescope_zip_without_salt_or_key_says_so(salted, tmp_path, monkeypatch, capsys):
    zpath = _zip(salted[0], tmp_path, monkeypatch, salt=None, key=None)
    assert "class salt NONE" in capsys.readouterr().err
    with zipfile.ZipFile(zpath) as z:
        assert json.loads(z.read(exports.CONFIG))["env"] == {"LABS_CLASS_SALT": None, "LABS_SIGNING_KEY": None}
    with pytest.raises(ValueError, match="LABS_SIGNING_KEY must be at least"):
        exports.write_gradescope_zip(tmp_path / "short.zip", signing_key="short")
    with pytest.raises(ValueError, match="gradescope-visibility must be one of"):
        exports.write_gradescope_zip(tmp_path / "v.zip", visibility="visible")


@pytest.mark.parametrize("config, field", [
    ({"env": {"PATH": "/tmp"}}, "env may name only"),
    ({"env": {"LABS_CLASS_SALT": "a\nb"}}, "env.LABS_CLASS_SALT"),
    ({"args": "--due due.toml"}, "args must be a list"),
    ({"visibility": "visible"}, "visibility must be one of"),
    ({"args": ["--csv", "/tmp/out.csv"]}, "args: '--csv' is not one of"),
    ({"args": ["--due", "/etc/passwd"]}, "args: '--due' is not one of"),
])
def test_a_bad_autograder_config_is_refused_by_field(tmp_path, config, field):
    path = tmp_path / exports.CONFIG
    path.write_text(json.dumps(config))
    with pytest.raises(ValueError, match=field):
        exports.read_config(path)


@pytest.fixture(scope="module")
def ann(tmp_path_factory):
    """ann: Lab 05 only; cause right (B at the default), design skipped."""
    folder = tmp_path_factory.mktemp("ann")
    ledger = DesignLedger("ann", folder)
    ledger.commit_prediction(LAB, "cause", "B")
    ledger.commit_prediction(LAB, "design", None)
    return folder, ledger.path


def test_gradescope_grades_only_the_labs_in_the_ledger_and_shows_answers_after_the_due_date(ann, tmp_path, monkeypatch):
    """M3: results.json listed every question of all nine labs, each with its answer, at once."""
    folder, ledger = ann
    result = _autograde(_zip(folder, tmp_path, monkeypatch, salt=None, key=None), ledger, _metadata("ann@uni.edu", "Ann"), tmp_path)
    questions = [t for t in result["tests"] if t["visibility"] != "hidden"]
    assert sorted(t["name"] for t in questions) == ["Lab 05: parallelism · cause", "Lab 05: parallelism · design"]
    assert all(t["visibility"] == "after_due_date" for t in questions)  # Gradescope's field: shown after the due date
    assert result["visibility"] == "after_due_date" and result["stdout_visibility"] == "hidden"  # the grader's table is the instructor's
    assert "The engine's answer" not in result["output"] and "Lab 05: parallelism" in result["output"]  # the receipt, shown at once


def test_gradescope_visibility_after_published(ann, tmp_path, monkeypatch):
    folder, ledger = ann
    zpath = _zip(folder, tmp_path, monkeypatch, "--gradescope-visibility", "after_published", salt=None, key=None)
    result = _autograde(zpath, ledger, _metadata("ann@uni.edu"), tmp_path)
    assert {t["visibility"] for t in result["tests"]} == {"after_published"} and "when your instructor publishes" in result["output"]


def test_gradescope_never_says_nan(ann, tmp_path, monkeypatch):
    """M3: "Your committed answer: nan" for unanswered questions."""
    folder, ledger = ann
    result = _autograde(_zip(folder, tmp_path, monkeypatch, salt=None, key=None), ledger, _metadata("ann@uni.edu"), tmp_path)
    text = json.dumps(result)
    assert "nan" not in text.lower().replace("nanos", "")
    design = next(t for t in result["tests"] if t["name"].endswith("design"))
    assert design["output"].startswith("Your committed answer: skipped.") and design["score"] == 0.0
    table, _ = grade.grade([str(folder)])
    docs = book.read_documents(sorted(set(table["file"])))
    b = book.build(table, docs, points.load(settings=["05_parallelism.design=1:participation"]), due.load(None))
    doc = docs[next(iter(docs))]
    del doc["predictions"][LAB]["design"]  # never committed at all
    out = exports.results_json(b, "ann", doc)
    assert "Your committed answer: no answer committed." in next(t["output"] for t in out["tests"] if t["name"].endswith("design"))


def test_gradescope_refuses_a_classmates_ledger_n5(ann, tmp_path, monkeypatch):
    """N5: bob uploads ann's ledger: it scored full marks. Now 0, with the reason."""
    folder, ledger = ann
    zpath = _zip(folder, tmp_path, monkeypatch, salt=None, key=None)
    result = _autograde(zpath, ledger, _metadata("bob@uni.edu", "Bob B"), tmp_path)
    assert result["score"] == 0.0 and result["tests"] == []
    assert "written by 'ann'" in result["output"] and "Bob B <bob@uni.edu>" in result["output"] and "scores 0" in result["output"]


def test_gradescope_checks_the_submitter_through_the_roster(ann, tmp_path, monkeypatch):
    """Ids that are not e-mails (a hub login, "Student 000"): the roster in the zip maps
    Gradescope's e-mail or student id to the ledger's id; no shared-server code travels."""
    folder, ledger = ann
    roster = tmp_path / "roster.csv"
    roster.write_text("student,code,name,email,sis_user_id\nann,code0001,Ann A,a.ng@uni.edu,900001\nbob,code0002,Bob B,bob@uni.edu,900002\n")
    zpath = _zip(folder, tmp_path, monkeypatch, "--roster", str(roster), salt=None, key=None)
    with zipfile.ZipFile(zpath) as z:
        carried = z.read("roster.csv").decode()
        assert "code0001" not in carried and stat.S_IMODE(z.getinfo("roster.csv").external_attr >> 16) == 0o600
    assert _autograde(zpath, ledger, _metadata("A.Ng@uni.edu", "Ann Ng"), tmp_path / "1")["score"] == 1.0  # e-mail on the roster: ann
    assert _autograde(zpath, ledger, _metadata("other@uni.edu", "", sid="900001"), tmp_path / "2")["score"] == 1.0  # sid on the roster
    refused = _autograde(zpath, ledger, _metadata("bob@uni.edu", "ann"), tmp_path / "3")  # bob on the roster, whatever his display name
    assert refused["score"] == 0.0 and "written by 'ann'" in refused["output"]
    people = class_roster.load(roster)
    assert exports.identity_problem("ann", {"users": []}, people).startswith("Gradescope's submission metadata names no submitter")


def test_gradescope_applies_require_signatures_as_the_zip_was_built(ann, tmp_path, monkeypatch):
    """The grader's --require-signatures (issue 34 item 4) travels in the zip: ann's ledger was
    written on a laptop (no signature), so under it her right answer earns nothing, flagged."""
    folder, ledger = ann
    zpath = _zip(folder, tmp_path, monkeypatch, "--require-signatures", salt=None)
    with zipfile.ZipFile(zpath) as z:
        assert json.loads(z.read(exports.CONFIG))["args"] == ["--require-signatures"]
    result = _autograde(zpath, ledger, _metadata("ann@uni.edu"), tmp_path)
    cause = next(t for t in result["tests"] if t["name"].endswith("cause"))
    assert result["score"] == 0.0 and cause["score"] == 0.0 and "Integrity: self-reported." in cause["output"]
    with pytest.raises(ValueError, match="needs the class's signing key"):
        exports.write_gradescope_zip(tmp_path / "x.zip", require_signatures=True)


def test_gradescope_without_metadata_scores_0(ann, tmp_path, monkeypatch):
    folder, ledger = ann
    result = _autograde(_zip(folder, tmp_path, monkeypatch, salt=None, key=None), ledger, None, tmp_path)
    assert result["score"] == 0.0 and "submission metadata could not be read" in result["output"]


def test_gradescope_zip_packs_no_caches_or_ledgers(tmp_path, monkeypatch):
    """The zip packed labs/__marimo__ session caches (ignored by git)."""
    tree = tmp_path / "repo"
    for name in ("labs/__init__.py", "labs/grade.py", "labs/__marimo__/session/05_parallelism.py.json", "labs/__pycache__/grade.cpython-312.pyc",
                 "labs/core/__pycache__/x.json", "labs/.scratch/a.py", "labs/ann-1234567890.ledger.json", "labs/core/ledger.schema.json",
                 "pyproject.toml", "tests/data/published_numbers.json", "tests/data/zero_bubble.json", "tests/data/nccl_busbw.json", "tests/data/other.json"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("{}")
    monkeypatch.setattr(exports, "ROOT", tree)
    names = set(exports.write_gradescope_zip(tmp_path / "a.zip"))
    assert names == {"run_autograder", "setup.sh", exports.CONFIG, "pyproject.toml", "labs/__init__.py", "labs/grade.py", "labs/core/ledger.schema.json",
                     "tests/data/published_numbers.json", "tests/data/zero_bubble.json", "tests/data/nccl_busbw.json"}


# ---- Moodle and Canvas ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    for student, (cause, design) in {"ann": ("B", "C"), "bob": ("A", "C")}.items():
        ledger = DesignLedger(student, folder)
        ledger.commit_prediction(LAB, "cause", cause)
        ledger.commit_prediction(LAB, "design", design)
    roster = folder.parent / "roster.csv"
    roster.write_text("student,name,sis_login_id,email,canvas_id,sis_user_id\nann,Ann A,ann01,ann@example.edu,1001,S-1\n"
                      "bob,Bob B,bob02,bob@example.edu,,\neve,Eve E,eve04,eve@example.edu,,\n")
    table, _ = grade.grade([str(folder)])
    docs = book.read_documents(sorted(set(table["file"])))
    people = class_roster.load(roster)
    return book.build(table, docs, points.load(), due.load(None), roster_students=[p.student for p in people]), table, docs, people


def _formula(cell: str) -> bool:
    """A cell a spreadsheet runs: it starts (past spaces) with = + - or @, and is not a lone "-"."""
    start = cell.lstrip(" \u00a0\u3000")
    return cell != "-" and start[:1] in ("=", "+", "-", "@", "＝", "＠")


def test_moodle_worksheet_writes_no_live_formula_n7(klass, tmp_path):
    """N7: the worksheet's own cells went back raw: LibreOffice imported 40 live formulas."""
    b, _, _, people = klass
    header = next(csv.reader(io.StringIO((LMS / "moodle_worksheet_sample.csv").read_text(encoding="utf-8-sig"))))
    template = tmp_path / "worksheet.csv"
    with template.open("w", newline="", encoding="utf-8") as out:
        w = csv.writer(out)
        w.writerow(header)
        w.writerow(["Participant 11", "Ann A", "ann@example.edu", "=1+1", "", "100.00", "Yes", "-", "-", ""])
        w.writerow(["Participant 12", "=cmd|' /c calc'!a0", "@SUM(1+1)", "+1", "", "100.00", "-2", "-", "-", "\t=1"])
    out = tmp_path / "moodle.csv"
    unmatched = exports.write_moodle(b, people, template, out)
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert unmatched == ["Participant 12"] and rows[0] == header
    assert not [c for r in rows for c in r if _formula(c)]
    assert rows[2][1] == "'=cmd|' /c calc'!a0" and rows[2][2] == "'@SUM(1+1)"  # as text, readable
    assert rows[1][header.index("Last modified (grade)")] == "-"  # Moodle's "no date" as Moodle wrote it
    assert float(rows[1][header.index("Grade")]) == pytest.approx(round(2 / b.course_possible * 100, 2))


def test_canvas_fills_id_and_sis_user_id_from_roster_and_gradebook_export(klass, tmp_path):
    """ID and SIS User ID were empty in every row."""
    b, _, _, people = klass
    template = tmp_path / "export.csv"
    template.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Lab 05: parallelism (778899)\n"
                        "    Points Possible,,,,,2\n\"B, Bob\",2002,S-2,BOB02,Sec 1,\n")
    rows, _ = exports.canvas_rows(b, people, template=template)
    by_login = {r[3]: r[:5] for r in rows[2:]}
    assert by_login["ann01"] == ["Ann A", "1001", "S-1", "ann01", ""]  # the roster's canvas_id and sis_user_id
    assert by_login["bob02"] == ["Bob B", "2002", "S-2", "bob02", ""]  # from the gradebook export, by SIS Login ID (case-blind)
    assert by_login["eve04"] == ["Eve E", "", "", "eve04", ""]  # neither has them: Canvas matches on SIS Login ID
    assert "Lab 05: parallelism (778899)" in rows[0]


# ---- feedback pages -------------------------------------------------------------------------
def test_feedback_shows_the_answer_with_its_option_text_and_skipped(salted, ann, tmp_path, monkeypatch):
    """The page showed only the letter ("✗ A") and a blank cell for a skip."""
    import html

    folder, _ = ann
    table, _ = grade.grade([str(folder)])
    docs = book.read_documents(sorted(set(table["file"])))
    b = book.build(table, docs, points.load(), due.load(None))
    [page] = feedback.write_all(b, table, docs, tmp_path / "fb")
    text = page.read_text()
    from labs.core.scenarios import QUESTION_OPTIONS

    label = {o.key: o.label for o in QUESTION_OPTIONS[(LAB, "cause")]}["B"]
    assert f"B: {html.escape(label, quote=True)}" in text and "<i>skipped</i>" in text and "skipped or not committed" not in text
    # a varianted ledger: the option's words are the student's variant's, at the class salt
    folder, _, v = salted
    monkeypatch.setenv("LABS_SIGNING_KEY", KEY)
    table, _ = grade.grade([str(folder)], salt=SALT)
    docs = book.read_documents(sorted(set(table["file"])))
    b = book.build(table, docs, points.load(), due.load(None), key=KEY.encode(), salt=SALT)
    [page] = feedback.write_all(b, table, docs, tmp_path / "fb2", salt=SALT)
    label = {o.key: o.label for o in v.questions["cause"].options}[SALTED_KEY]
    assert f"{SALTED_KEY}: {html.escape(label, quote=True)}" in page.read_text()


def test_feedback_leaves_the_graders_identity_flags_to_the_instructor(tmp_path):
    """The page showed "same id in 1 other file(s): zz-duplicate-id.json" to the student."""
    folder = tmp_path / "class"
    path = DesignLedger("ann", folder).path
    DesignLedger("ann", folder).commit_prediction(LAB, "cause", "A")
    (folder / "zz-duplicate-id.json").write_text(path.read_text())
    book_csv, fb = tmp_path / "book.csv", tmp_path / "fb"
    assert grade.main([str(folder), "--gradebook", str(book_csv), "--feedback", str(fb)]) == 0
    assert "same id in 1 other file(s)" in book_csv.read_text()  # the instructor's grade book has it
    [page] = list(fb.iterdir())
    assert "same id in" not in page.read_text() and "other file" not in page.read_text()


def test_feedback_pages_one_per_id_even_when_ids_differ_only_by_spaces_n13(tmp_path):
    """N13: 16 pages written, 13 files: ids differing by spaces, NBSP or an ideographic space
    landed on one page."""
    folder = tmp_path / "class"
    ids = ["ann b", "ann  b", "ann\u00a0b", "ann\u3000b", " ann b"]
    for i, student in enumerate(ids):
        ledger = DesignLedger(f"placeholder {i}", folder)
        ledger.commit_prediction(LAB, "cause", "B")
        doc = json.loads(ledger.path.read_text())
        doc["student"] = student
        ledger.path.write_text(json.dumps(doc))
    table, _ = grade.grade([str(folder)])
    assert sorted(set(table["student"])) == sorted(ids)
    docs = book.read_documents(sorted(set(table["file"])))
    b = book.build(table, docs, points.load(), due.load(None))
    pages = feedback.write_all(b, table, docs, tmp_path / "fb")
    assert len(pages) == len(set(pages)) == len(list((tmp_path / "fb").iterdir())) == len(ids)
    shown = {p.read_text().split("<title>Feedback: ")[1].split("</title>")[0] for p in pages}
    assert len(shown) == len(ids)  # each page is its own student's
    assert feedback.page_stem("ann b") == __import__("labs.core.state", fromlist=["ledger_stem"]).ledger_stem("ann b")  # a normal id keeps its ledger's stem

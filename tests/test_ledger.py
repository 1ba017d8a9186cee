"""DesignLedger: schema, replacement, committed predictions, recovery, hostile files, the lock,
concurrency and crash safety (the kill lands inside a save, told so by the writer)."""

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from labs.core import state
from labs.core.state import (
    DesignLedger, LedgerRecovered, LedgerTooNew, LedgerUnavailable, load_schema, parse_document, validate_document,
)

ROOT = Path(__file__).resolve().parents[1]


def test_seed_notebook_call_still_works(tmp_path):
    ledger = DesignLedger("s1", tmp_path)
    ledger.save(chapter="v2_05", design={"context": "3d", "tp": 8, "pp": 4})
    ledger.save(chapter="v2_05", design={"tp": 8}, track="mobile")
    doc = ledger.load()
    assert doc["labs"]["v2_05"]["design"]["inputs"]["pp"] == 4
    assert doc["labs"]["v2_05"]["mobile"]["inputs"] == {"tp": 8}


def test_every_written_document_validates_and_same_step_replaces(tmp_path):
    ledger = DesignLedger("s2", tmp_path)
    for mfu in (0.1, 0.2, 0.3):
        ledger.save_step("05_parallelism", "act1", {"gpus": 64}, {"cause": "B"}, {"mfu": mfu})
        jsonschema.validate(json.loads(ledger.export()), load_schema())
    steps = ledger.load()["labs"]["05_parallelism"]
    assert list(steps) == ["act1"] and steps["act1"]["outcomes"]["mfu"] == 0.3


def test_student_and_directory_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LABS_LEDGER_DIR", str(tmp_path / "ledgers"))
    monkeypatch.setenv("LABS_STUDENT", "../../x")
    ledger = DesignLedger()
    ledger.save_step("lab", "step", {"a": 1})
    assert ledger.path.parent == tmp_path / "ledgers"
    assert ledger.path.name == f"x-{state.student_hash('../../x')}.ledger.json"
    assert ledger.load()["student"] == "../../x"


def test_nan_is_refused_before_writing(tmp_path):
    ledger = DesignLedger("s3", tmp_path)
    ledger.save_step("lab", "one", {"a": 1})
    with pytest.raises(ValueError, match="finite"):
        ledger.save_step("lab", "two", {"a": float("nan")})
    assert list(ledger.load()["labs"]["lab"]) == ["one"]


# ---- identity ---------------------------------------------------------------------------
def test_distinct_ids_never_share_a_file(tmp_path):
    names = ["José", "Jos", "a/b", "a\\b", "张伟", "李娜", "student", "Ada", "ada"]
    paths = {DesignLedger(n, tmp_path).path for n in names}
    assert len(paths) == len(names)
    assert all(p.parent == tmp_path and p.name.endswith(".ledger.json") for p in paths)
    assert DesignLedger("jose\u0301", tmp_path).path != DesignLedger("José", tmp_path).path  # e + accent is not "jose"
    composed, decomposed = "Jos\u00e9", "Jose\u0301"
    assert DesignLedger(composed, tmp_path).path == DesignLedger(decomposed, tmp_path).path  # NFC: one id
    assert DesignLedger("  Ada   Lovelace ", tmp_path).student == "Ada Lovelace"
    assert DesignLedger("张伟", tmp_path).path.name.startswith("student-")


@pytest.mark.parametrize("bad, why", [(" ", "type your name"), ("a\x07b", "control"), ("a\u202eb", "invisible"), ("x" * 101, "at most 100"), ("a\u200bb", "invisible")])
def test_bad_ids_are_refused_where_they_enter(tmp_path, bad, why):
    with pytest.raises(ValueError, match=why):
        state.normalise_student(bad)
    if bad.strip():
        with pytest.raises(ValueError, match=why):
            DesignLedger(bad, tmp_path)


def test_ledger_under_the_first_layouts_name_is_adopted(tmp_path):
    old = tmp_path / "ada.ledger.json"
    doc = {"schema_version": 1, "student": "ada", "engine_version": "1", "created": "t", "updated": "t",
           "labs": {"lab": {"one": {"saved": "t", "inputs": {"a": 1}, "predictions": {}, "outcomes": {}}}}}
    old.write_text(json.dumps(doc))
    ledger = DesignLedger("ada", tmp_path)
    ledger.save_step("lab", "two", {"a": 2})
    assert sorted(ledger.load()["labs"]["lab"]) == ["one", "two"] and not old.exists()
    other = tmp_path / "bob.ledger.json"
    other.write_text(json.dumps({**doc, "student": "somebody else"}))
    DesignLedger("bob", tmp_path).save_step("lab", "one", {})
    assert other.exists()  # not this id's: left alone


# ---- committed predictions ----------------------------------------------------------------
def test_commit_keeps_the_first_answer_and_records_changes(tmp_path):
    ledger = DesignLedger("p1", tmp_path)
    assert ledger.committed("05_parallelism", "cause") is None
    first = ledger.commit_prediction("05_parallelism", "cause", "B")
    assert first["answer"] == "B" and first["changes"] == [] and first["committed"].endswith("+00:00")
    assert ledger.commit_prediction("05_parallelism", "cause", "B")["changes"] == []  # same answer: no change
    ledger.commit_prediction("05_parallelism", "cause", "C")
    ledger.commit_prediction("05_parallelism", "cause", None)
    ledger.save_step("05_parallelism", "act1", {"gpus": 64}, {"cause": "C"}, {})
    record = ledger.committed("05_parallelism", "cause")
    assert record["answer"] == "B" and record["committed"] == first["committed"]
    assert [c["answer"] for c in record["changes"]] == ["C", None]
    skipped = ledger.commit_prediction("05_parallelism", "design", None)
    assert skipped["answer"] is None and ledger.committed("05_parallelism", "design")["answer"] is None
    doc = json.loads(ledger.export())
    validate_document(doc)
    assert set(doc["predictions"]["05_parallelism"]) == {"cause", "design"}
    with pytest.raises(ValueError, match="answer"):
        ledger.commit_prediction("05_parallelism", "cause", 3)


def test_ledgers_without_predictions_stay_valid():
    doc = {"schema_version": 1, "student": "x", "engine_version": "1", "created": "t", "updated": "t", "labs": {}}
    validate_document(doc)
    with pytest.raises(ValueError, match="changes"):
        validate_document({**doc, "predictions": {"lab": {"q": {"answer": "A", "committed": "t"}}}})


# ---- unreadable, hostile and newer files ------------------------------------------------
def test_corrupt_file_is_moved_aside_and_reported(tmp_path):
    ledger = DesignLedger("s4", tmp_path)
    ledger.save_step("lab", "one", {"a": 1})
    ledger.path.write_text('{"schema_version": 1, "labs": ')
    with pytest.raises(LedgerRecovered) as info:
        ledger.load()
    assert info.value.moved_to.exists() and "labs" in info.value.moved_to.read_text()
    ledger.save_step("lab", "two", {"a": 2})
    assert list(ledger.load()["labs"]["lab"]) == ["two"]


@pytest.mark.parametrize("call", ["save_step", "save", "commit_prediction"])
def test_saving_calls_tell_the_caller_of_a_recovery(tmp_path, call):
    ledger = DesignLedger("s5", tmp_path)
    ledger.path.write_text("not json")
    args = {"save_step": ("lab", "one", {"a": 1}), "save": ("v2_05", {"tp": 8}), "commit_prediction": ("lab", "q", "A")}[call]
    with pytest.warns(LedgerRecovered, match="moved to") as caught:
        getattr(ledger, call)(*args)
    assert len(ledger.recoveries) == 1 and ledger.recoveries[0].moved_to.read_text() == "not json"
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert ledger.load()["student"] == "s5"


def test_moved_aside_copies_never_overwrite_each_other(tmp_path):
    ledger = DesignLedger("s6", tmp_path)
    for text in ("first broken", "second broken", "third broken"):
        ledger.path.write_text(text)
        with pytest.raises(LedgerRecovered):
            ledger.load()  # all three within the same second
    copies = sorted(p.read_text() for p in tmp_path.glob("*.corrupt-*.json"))
    assert copies == ["first broken", "second broken", "third broken"]


def test_newer_schema_is_refused_by_name_and_left_in_place(tmp_path):
    ledger = DesignLedger("s7", tmp_path)
    future = json.dumps({"schema_version": 2, "student": "s7", "labs": {}, "something": "new"})
    ledger.path.write_text(future)
    with pytest.raises(LedgerTooNew, match="schema_version 2.*newer"):
        ledger.load()
    with pytest.raises(LedgerTooNew):
        ledger.save_step("lab", "one", {"a": 1})
    assert ledger.path.read_text() == future and not list(tmp_path.glob("*.corrupt-*"))


def test_json_edge_cases():
    doc = {"schema_version": 1, "student": "x", "engine_version": "1", "created": "t", "updated": "t", "labs": {}}
    raw = json.dumps(doc).encode()
    assert parse_document(b"\xef\xbb\xbf" + raw)["student"] == "x"  # a UTF-8 BOM is fine
    with pytest.raises(ValueError, match="duplicate key 'student'"):
        parse_document(raw[:-1] + b', "student": "y"}')
    for bad, why in [(b'{"a": NaN}', "finite"), (b"[" * 100000 + b"]" * 100000, "nested"), (b"\xff\xfe{}", "UTF-8"),
                     (b" " * (state.MAX_LEDGER_BYTES + 1), "larger than any ledger"), (b"", "empty")]:
        with pytest.raises(ValueError, match=why):
            parse_document(bad)
    deep = {**doc, "labs": {"a": {"b": {"saved": "t", "inputs": {"x": json.loads("[" * 200 + "]" * 200)}, "predictions": {}, "outcomes": {}}}}}
    with pytest.raises(ValueError, match="nested"):
        validate_document(deep)


def test_oversized_ledger_is_moved_aside_unread(tmp_path):
    ledger = DesignLedger("s8", tmp_path)
    ledger.path.write_bytes(b"{" + b" " * (2 * state.MAX_LEDGER_BYTES))
    with pytest.raises(LedgerRecovered, match="larger than any ledger"):
        ledger.load()


def test_folder_where_a_file_should_be_and_the_reverse(tmp_path):
    ledger = DesignLedger("s9", tmp_path)
    ledger.path.mkdir()
    with pytest.raises(LedgerUnavailable, match="is a folder"):
        ledger.save_step("lab", "one", {"a": 1})
    assert ledger.path.is_dir()
    (tmp_path / "afile").write_text("x")
    with pytest.raises(LedgerUnavailable, match="is a file, not a folder"):
        DesignLedger("s9", tmp_path / "afile").load()
    with pytest.raises(LedgerUnavailable, match="a part of the path is a file|is a file"):
        DesignLedger("s9", tmp_path / "afile" / "below").load()


def test_symlinks_are_not_followed(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    folder = tmp_path / "ledgers"
    folder.mkdir()
    ledger = DesignLedger("s10", folder)
    ledger.lock_path.symlink_to(outside)
    with pytest.raises(LedgerUnavailable, match="symlink"):
        ledger.save_step("lab", "one", {"a": 1})
    ledger.lock_path.unlink()
    ledger.path.symlink_to(outside)
    with pytest.raises(LedgerUnavailable, match="symlink"):
        ledger.save_step("lab", "one", {"a": 1})
    assert outside.read_text() == "precious"


@pytest.mark.parametrize("code, words", [(errno.ENOSPC, "disk is full"), (errno.EROFS, "read-only"), (errno.EACCES, "read-only")])
def test_full_disk_and_read_only_folder_are_reported_and_lose_nothing(tmp_path, monkeypatch, code, words):
    ledger = DesignLedger("s11", tmp_path)
    ledger.save_step("lab", "one", {"a": 1})
    before = ledger.path.read_bytes()

    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(state.os, "fsync", fail)
    with pytest.raises(LedgerUnavailable, match=words):
        ledger.save_step("lab", "two", {"a": 2})
    monkeypatch.undo()
    assert ledger.path.read_bytes() == before and not list(tmp_path.glob(".*.tmp"))


def test_orphaned_temp_files_are_removed_at_the_next_open(tmp_path):
    ledger = DesignLedger("s12", tmp_path)
    ledger.save_step("lab", "one", {"a": 1})
    orphan = tmp_path / f".{state.ledger_stem('s12')}.abc123.tmp"
    orphan.write_text("half a ledger")
    other = tmp_path / f".{state.ledger_stem('someone else')}.abc123.tmp"
    other.write_text("another student's save in progress")
    ledger.load()
    assert not orphan.exists() and other.exists()


def test_schema_validator_is_compiled_once(monkeypatch):
    state._validator()
    monkeypatch.setattr(state, "load_schema", lambda: pytest.fail("the schema was read again"))
    for _ in range(3):
        validate_document({"schema_version": 1, "student": "x", "engine_version": "1", "created": "t", "updated": "t", "labs": {}})
    assert state._validator() is state._validator()


def test_imports_and_saves_without_fcntl(tmp_path):
    """As on Windows: nothing imports fcntl at module level."""
    code = ("import sys; sys.modules['fcntl'] = None\n"
            "from labs.core.state import DesignLedger\n"
            f"l = DesignLedger('w', {str(tmp_path)!r}); l.save_step('lab', 'one', {{'a': 1}}); print(sorted(l.load()['labs']['lab']))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "['one']", out.stderr


# ---- concurrency and crash safety ----------------------------------------------------------
WRITER = """
import os, sys
from labs.core.state import DesignLedger
folder, name, n, hook = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ledger = DesignLedger("shared", folder)
real = {"fsync": os.fsync, "replace": os.replace}
calls = []
LABELS = {("fsync", 1): "fsync-temp", ("replace", 1): "replace", ("fsync", 2): "fsync-folder"}

def hooked(name):
    def call(*args, **kwargs):
        calls.append(name)
        if armed and LABELS.get((name, calls.count(name))) == hook:
            print("inside", hook, flush=True)
            sys.stdin.read()  # wait here until killed
        return real[name](*args, **kwargs)
    return call

os.fsync, os.replace = hooked("fsync"), hooked("replace")
for i in range(n):
    armed, calls[:] = hook != "none" and i == n - 1, []
    if name == "commit":
        ledger.commit_prediction("lab", f"q{i % 5}", f"answer-{os.getpid()}-{i}")
    else:
        ledger.save_step("lab", f"{name}-{i}", {"i": i})
    print("saved", i, flush=True)
"""


def _writer(tmp_path, name, n, hook="none", **kw):
    return subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), name, str(n), hook], cwd=ROOT, **kw)


def test_two_processes_save_at_once_and_lose_nothing(tmp_path):
    procs = [_writer(tmp_path, name, 60, stdout=subprocess.DEVNULL) for name in ("a", "b")]
    procs.append(_writer(tmp_path, "commit", 40, stdout=subprocess.DEVNULL))
    assert all(p.wait(timeout=120) == 0 for p in procs)
    doc = DesignLedger("shared", tmp_path).load()
    assert len(doc["labs"]["lab"]) == 120
    questions = doc["predictions"]["lab"]
    assert sorted(questions) == [f"q{i}" for i in range(5)]
    assert sum(1 + len(r["changes"]) for r in questions.values()) == 40  # every commit: first answers plus changes


@pytest.mark.parametrize("hook", ["fsync-temp", "replace", "fsync-folder"])
def test_sigkill_inside_a_save_leaves_a_valid_file_with_every_returned_step(tmp_path, hook):
    """The writer says when it is inside its last save (writing the temp file, about to rename it,
    or syncing the folder) and waits there; only then is it killed: no sleep, no race."""
    DesignLedger("shared", tmp_path).save_step("lab", "before", {"i": -1})
    proc = _writer(tmp_path, "k", 4, hook, stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    lines = []
    while not lines or not lines[-1].startswith("inside"):
        line = proc.stdout.readline()
        assert line, f"the writer ended without reaching {hook}: {lines}"
        lines.append(line.strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert lines == ["saved 0", "saved 1", "saved 2", f"inside {hook}"]
    leftovers = list(tmp_path.glob(".*.tmp"))
    assert len(leftovers) == (0 if hook == "fsync-folder" else 1)  # the temp file of the killed save
    steps = DesignLedger("shared", tmp_path).load()["labs"]["lab"]  # raises if the file is broken
    assert {"before", "k-0", "k-1", "k-2"} <= set(steps)
    assert ("k-3" in steps) == (hook == "fsync-folder")  # renamed into place only after the replace
    assert not list(tmp_path.glob(".*.tmp"))  # cleaned at that open


def test_the_same_bytes_are_schema_checked_once_and_other_bytes_always(tmp_path, monkeypatch):
    """A lab rereads its ledger on every slider move; bytes that passed the schema once are not
    checked again, while any other bytes are, and a refused file is refused every time."""
    ledger = DesignLedger("memo-student", directory=tmp_path)
    ledger.save_step("06_zero_sweep", "sweep", {"dp": 8})
    raw = ledger.path.read_bytes()
    checked = []
    real = state.validate_document
    monkeypatch.setattr(state, "_typed_decoder", lambda: None)  # the untyped read, where validate_document is the schema's check
    monkeypatch.setattr(state, "validate_document", lambda doc, *checked_values: (checked.append(doc["student"]), real(doc, *checked_values))[1])
    state._VALIDATED.clear()
    for _ in range(3):
        assert parse_document(raw)["labs"]["06_zero_sweep"]["sweep"]["inputs"] == {"dp": 8}
    assert checked == ["memo-student"]
    edited = raw.replace(b'"dp": 8', b'"dp": 16') if b'"dp": 8' in raw else raw.replace(b'"dp":8', b'"dp":16')
    assert edited != raw
    parse_document(edited)
    assert checked == ["memo-student", "memo-student"]
    bad = raw.replace(b'"schema_version": 1', b'"schema_version": "one"') if b'"schema_version": 1' in raw else raw.replace(b'"schema_version":1', b'"schema_version":"one"')
    assert bad != raw
    for _ in range(2):
        with pytest.raises(ValueError, match="schema_version"):
            parse_document(bad)


def test_a_ledger_on_a_read_only_file_system_can_still_be_read_r1(tmp_path, monkeypatch):
    """Audit R1: on a file system remounted read-only the lock file cannot be created (EROFS).
    At e349cc8 load() then failed with 'this was not saved' and the student could not see their
    ledger; a read needs no lock there (nothing can write), a save is still refused by name."""
    ledger = DesignLedger("s12", tmp_path)
    ledger.save_step("lab", "one", {"a": 1})
    ledger.commit_prediction("lab", "q", "B")
    before = ledger.path.read_bytes()

    class ReadOnlyLock:
        def __init__(self, *args, **kwargs):
            pass

        def acquire(self):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))

        def release(self):
            raise AssertionError("a lock never acquired is never released")

    monkeypatch.setattr(state, "FileLock", ReadOnlyLock)
    doc = DesignLedger("s12", tmp_path).load()
    assert doc["labs"]["lab"]["one"]["inputs"] == {"a": 1}
    with pytest.raises(LedgerUnavailable, match="read-only"):
        DesignLedger("s12", tmp_path).save_step("lab", "two", {"a": 2})
    assert ledger.path.read_bytes() == before

"""One trust rule for every output (issue 34 item 4; reliability review 38bda0b N3, N4, N11, N15,
N16; newcomer review M4). Ledgers are written by DesignLedger with a class key, then edited as a
student would edit a downloaded file; the grader's table, --csv, --strict and the grade book must
give the same credit and flags."""

import csv
import json

import pytest

from labs import grade
from labs.core import signing
from labs.core.scenarios.lab05 import act1_correct_option, act1_outcomes
from labs.core.state import DesignLedger
from labs.gradebook import book, due, points
from labs.grading import integrity

KEY = "trust-test-key-" + "k" * 20
LAB = "05_parallelism"
ACT1 = {"gpus": 64, "global_batch": 512, "fixed_per_gpu": False, "fabric": "ib-ndr", "algorithm": "ring", "overlap": True, "params_b": 7}
RIGHT = act1_correct_option()
WRONG = next(k for k in "ABCD" if k != RIGHT)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("LABS_SIGNING_KEY", KEY)
    return KEY.encode()


def _student(folder, name, cause=WRONG, submit=True):
    """A student on the class server: commits `cause`, then (submit) saves Act I with it."""
    ledger = DesignLedger(name, folder)
    ledger.commit_prediction(LAB, "cause", cause)
    if submit:
        ledger.save_step(LAB, "act1", ACT1, {"cause": cause}, act1_outcomes(ACT1, {"cause": cause}))
    return ledger.path


def _edit(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _to_right(doc):
    doc["predictions"][LAB]["cause"]["answer"] = RIGHT


def _strip(doc):
    doc["predictions"][LAB]["cause"].pop("signature")


def _graded(folder, key, require=False, due_path=None):
    """(grader rows of the cause question by student, the grade book's cause items by student);
    the grader takes the key from LABS_SIGNING_KEY, as `python -m labs.grade` does."""
    table, problems = grade.grade([str(folder)], **({"require_signatures": True} if require else {}))
    assert not problems
    b = book.build(table, book.read_documents(sorted(set(table["file"]))), points.load(), due.load(due_path), key=key)
    rows = table[table["step"].eq("act1")].set_index("student")
    items = b.items[b.items["item"].eq("cause")].set_index("student")
    return rows, items, b


# ---- N3 / M4: the grader's own table, --csv and --strict read the trust rule ------------------
def test_an_edited_signed_answer_earns_nothing_in_the_table_the_csv_and_strict(tmp_path, key, capsys):
    """M4: an answer edited after signing was 'ok', right 1 and --strict exit 0 at 38bda0b."""
    _edit(_student(tmp_path / "class", "ann"), _to_right)
    _student(tmp_path / "class", "bob", cause=RIGHT)
    out = tmp_path / "grades.csv"
    assert grade.main([str(tmp_path / "class"), "--csv", str(out), "--strict"]) == 1
    rows = {r["student"]: r for r in csv.DictReader(out.open())}
    assert (rows["ann"]["trust"], rows["ann"]["right"], rows["ann"]["prediction_correct"]) == ("edited", "0", "True")
    assert "edited after the server signed it" in rows["ann"]["trust_flag"]
    assert (rows["bob"]["trust"], rows["bob"]["right"], rows["bob"]["trust_flag"]) == ("signed", "1", "")
    terminal = capsys.readouterr().out
    assert "0/1" in terminal and "edited" in terminal
    _, items, _ = _graded(tmp_path / "class", key)
    assert items.loc["ann", ["label", "earned"]].tolist() == ["edited", 0.0] and items.loc["bob", "earned"] == 1.0


def test_an_honest_signed_class_is_trusted_everywhere(tmp_path, key):
    """No false alarm: commits, a change, a re-saved step and a second lab all stay in sequence."""
    ledger = DesignLedger("ann", tmp_path)
    ledger.commit_prediction(LAB, "cause", WRONG)
    ledger.commit_prediction(LAB, "cause", RIGHT)  # a change, recorded
    ledger.save_step(LAB, "act1", ACT1, {"cause": RIGHT}, act1_outcomes(ACT1, {"cause": RIGHT}))
    ledger.save_step(LAB, "act1", ACT1, {"cause": RIGHT}, act1_outcomes(ACT1, {"cause": RIGHT}))  # submitted twice
    ledger.commit_prediction(LAB, "design", "C")
    doc = json.loads(ledger.path.read_text())
    assert [e["signature"].split(":")[2] for _k, _l, _n, e in signing.entries(doc)] == ["4", "2", "5"]  # act1, cause, design
    assert signing.check_document(doc, key).sequence == signing.IN_SEQUENCE
    rows, items, _ = _graded(tmp_path, key, require=True)
    assert (rows.loc["ann", "trust"], rows.loc["ann", "trust_flag"], rows.loc["ann", "right"], rows.loc["ann", "changes"]) == ("signed", "", 0, 1)
    assert items.loc["ann", ["label", "earned"]].tolist() == ["signed", 0.0]  # graded by the first commit: wrong
    assert grade.main([str(tmp_path), "--strict", "--require-signatures"]) == 0


def test_stripping_a_signature_never_beats_keeping_it(tmp_path, key):
    """N3 (A2): an edited answer whose signature was removed was self-reported, 1.0 points, no flag."""
    folder = tmp_path / "class"
    kept, stripped = _student(folder, "kim"), _student(folder, "sam")
    _edit(kept, _to_right)
    _edit(stripped, lambda d: (_to_right(d), _strip(d)))
    both = _student(folder, "both", submit=False)  # two commits, the later one edited and stripped
    DesignLedger("both", folder).commit_prediction(LAB, "design", "C")
    _edit(both, lambda d: (_to_right(d), _strip(d)))
    rows, items, _ = _graded(folder, key)
    assert items.loc["kim", ["label", "earned"]].tolist() == ["edited", 0.0]
    assert items.loc["sam", ["label", "earned"]].tolist() == ["rolled back", 0.0]
    assert items.loc["both", ["label", "earned"]].tolist() == ["rolled back", 0.0]
    assert "not trusted" in items.loc["sam", "note"] and "rolled back" in items.loc["sam", "note"]
    assert rows.loc["sam", "right"] == 0 and rows.loc["sam", "trust"] == "rolled back"


def test_a_signature_stripped_from_a_ledger_signed_before_sequence_numbers(tmp_path, key):
    """Old ledgers (format v1, no sequence): still graded as signed; a stripped entry among signed
    ones earns nothing (N3 for ledgers written before this change)."""
    path = _student(tmp_path, "old")
    doc = json.loads(path.read_text())
    for kind, lab, name, entry in signing.entries(doc):
        entry["signature"] = signing.sign_entry(doc, lab, kind, name, entry, KEY)  # as the server signed then
    path.write_text(json.dumps(doc))
    assert signing.check_document(doc, key).sequence == signing.NO_SEQUENCE
    rows, items, _ = _graded(tmp_path, key, require=True)
    assert (rows.loc["old", "trust"], rows.loc["old", "trust_flag"], items.loc["old", "label"]) == ("signed", "", "signed")
    _edit(path, lambda d: (_to_right(d), _strip(d)))
    rows, items, _ = _graded(tmp_path, key)
    assert items.loc["old", ["label", "earned"]].tolist() == ["stripped", 0.0] and rows.loc["old", "right"] == 0


# ---- --require-signatures, and late penalties by the signed time ------------------------------
def test_an_unsigned_ledger_is_flagged_and_earns_nothing_where_signatures_are_required(tmp_path, monkeypatch, key, capsys):
    monkeypatch.delenv("LABS_SIGNING_KEY")
    _student(tmp_path, "lap", cause=RIGHT)  # a laptop: no key, nothing signed
    monkeypatch.setenv("LABS_SIGNING_KEY", KEY)
    rows, items, _ = _graded(tmp_path, key)
    assert items.loc["lap", ["label", "earned"]].tolist() == ["self-reported", 1.0]
    assert rows.loc["lap", "right"] == 1 and "not signed" in rows.loc["lap", "trust_flag"]
    rows, items, _ = _graded(tmp_path, key, require=True)
    assert items.loc["lap", ["label", "earned"]].tolist() == ["self-reported", 0.0] and "--require-signatures" in items.loc["lap", "note"]
    assert rows.loc["lap", "right"] == 0
    assert grade.main([str(tmp_path)]) == 0 and grade.main([str(tmp_path), "--strict"]) == 1  # flagged either way
    monkeypatch.delenv("LABS_SIGNING_KEY")
    capsys.readouterr()
    assert grade.main([str(tmp_path), "--require-signatures"]) == 2
    assert "needs the class's signing key" in capsys.readouterr().err


def test_late_penalties_read_the_signed_time(tmp_path, key):
    """N3 (A8): a backdated commit with its signature removed was on time, 1.0 points, no flag."""
    due_path = tmp_path / "due.toml"
    due_path.write_text('policy = "zero"\n["05_parallelism"]\ndue = 2020-01-01T00:00:00Z\n')  # every server time is late
    folder = tmp_path / "class"
    _student(folder, "honest", cause=RIGHT, submit=False)
    cheat = _student(folder, "cheat", cause=RIGHT, submit=False)
    _edit(cheat, lambda d: (d["predictions"][LAB]["cause"].__setitem__("committed", "2019-12-31T00:00:00+00:00"), _strip(d)))
    _, _, strict = _graded(folder, key, require=True, due_path=due_path)
    labs = strict.labs.set_index(["student", "lab"])
    assert labs.loc[("honest", LAB), ["raw", "earned", "factor", "time_source"]].tolist() == [1.0, 0.0, 0.0, book.SERVER_CLOCK]
    assert labs.loc[("cheat", LAB), "earned"] == 0.0 and "not signed by the server, not counted" in labs.loc[("cheat", LAB), "flags"]
    _, _, lenient = _graded(folder, key, due_path=due_path)  # without --require-signatures: the student's clock, flagged
    cheat_lab = lenient.labs.set_index(["student", "lab"]).loc[("cheat", LAB)]
    assert cheat_lab["time_source"] == book.STUDENT_CLOCK and "not signed" in cheat_lab["flags"]


def test_an_entry_written_before_the_server_had_a_key_is_self_reported_not_stripped(tmp_path, monkeypatch, key):
    """The server's head lists an entry it found unsigned: no rollback; its time is not the server's."""
    monkeypatch.delenv("LABS_SIGNING_KEY")
    DesignLedger("mid", tmp_path).commit_prediction(LAB, "cause", RIGHT)
    monkeypatch.setenv("LABS_SIGNING_KEY", KEY)
    DesignLedger("mid", tmp_path).commit_prediction(LAB, "design", "C")
    _, _, b = _graded(tmp_path, key, require=True)
    items = b.items.set_index("item")
    assert items.loc["cause", ["label", "earned"]].tolist() == ["self-reported", 0.0] and items.loc["design", "label"] == "signed"
    lab = b.labs.set_index("lab").loc[LAB]
    assert lab["time_source"] == book.SERVER_CLOCK and "1 time(s) not signed" in lab["flags"]


# ---- N4: a step's label counts for an item graded from the step --------------------------------
def test_an_edited_signed_step_earns_nothing_when_its_commit_was_deleted(tmp_path, key):
    """N4 (S1): the step's prediction and outcomes edited to the engine's answer, its signature
    kept, the commit deleted: 'edited' by integrity, yet 1.0 points and no flag at 38bda0b."""
    path = _student(tmp_path, "sid")

    def edit(doc):
        step = doc["labs"][LAB]["act1"]
        step["predictions"], step["outcomes"] = {"cause": RIGHT}, act1_outcomes(ACT1, {"cause": RIGHT})
        del doc["predictions"][LAB]["cause"]

    _edit(path, edit)
    rows, items, _ = _graded(tmp_path, key)
    assert items.loc["sid", ["label", "earned"]].tolist() == ["edited", 0.0] and "not trusted" in items.loc["sid", "note"]
    assert rows.loc["sid", "answers_from"] == "step" and rows.loc["sid", "prediction_correct"] == True
    assert (rows.loc["sid", "trust"], rows.loc["sid", "right"]) == ("edited", 0)


def test_an_intact_commit_judged_at_an_edited_step_earns_nothing(tmp_path, key):
    """The engine judges a committed answer at the step's inputs: an edited step is read too."""
    path = _student(tmp_path, "ivy", cause=RIGHT)
    _edit(path, lambda d: d["labs"][LAB]["act1"]["inputs"].__setitem__("gpus", 128))
    rows, items, _ = _graded(tmp_path, key)
    assert items.loc["ivy", "earned"] == 0.0 and rows.loc["ivy", "trust.cause"] == "edited"


# ---- N11: a replayed older signed commit --------------------------------------------------------
def test_a_replayed_older_signed_commit_is_flagged(tmp_path, key):
    """N11 (A4): the commit as signed before its change pasted back: 'signed', changes 0 at 38bda0b."""
    ledger = DesignLedger("rex", tmp_path)
    ledger.commit_prediction(LAB, "cause", RIGHT)
    before = json.loads(ledger.path.read_text())["predictions"][LAB]["cause"]
    ledger.commit_prediction(LAB, "cause", WRONG)  # the change the student wants to hide
    ledger.save_step(LAB, "act1", ACT1, {"cause": WRONG}, act1_outcomes(ACT1, {"cause": WRONG}))
    _edit(ledger.path, lambda d: d["predictions"][LAB].__setitem__("cause", before))
    rows, items, _ = _graded(tmp_path, key)
    assert items.loc["rex", ["label", "earned"]].tolist() == ["rolled back", 0.0]
    assert (rows.loc["rex", "trust"], rows.loc["rex", "changes"], rows.loc["rex", "right"]) == ("rolled back", 0, 0)
    doc = json.loads(ledger.path.read_text())
    assert {label for _, _, label in signing.verify_document(doc, KEY)} == {"signed"}  # each entry alone is genuine
    assert signing.check_document(doc, key).sequence == signing.ROLLED_BACK
    assert grade.main([str(tmp_path), "--strict"]) == 1


def test_a_removed_or_added_signed_entry_breaks_the_sequence(tmp_path, key):
    path = _student(tmp_path, "una")
    removed = json.loads(path.read_text())
    del removed["predictions"][LAB]["cause"]  # the commit, signed before the step
    assert signing.check_document(removed, key).sequence == signing.ROLLED_BACK
    other = json.loads(_student(tmp_path / "b", "una", cause=RIGHT, submit=False).read_text())
    added = json.loads(path.read_text())
    added["predictions"][LAB]["design"] = other["predictions"][LAB]["cause"]  # a signed record from elsewhere
    assert signing.check_document(added, key).sequence == signing.ROLLED_BACK


# ---- one rule, one place ------------------------------------------------------------------------
def test_the_rule_table():
    rule = integrity.trust
    assert rule([], integrity.REQUIRED) == integrity.Trust("", True, "")
    assert rule(["signed", "self-reported"], "") == integrity.Trust("", True, "")  # no key: nothing checked
    assert rule(["signed"], integrity.REQUIRED) == integrity.Trust("signed", True, "")
    assert rule(["signed", "self-reported"], integrity.CHECKED).credit is True
    assert rule(["signed", "self-reported"], integrity.REQUIRED).credit is False
    for broken in ("edited", "stripped", "rolled back"):
        assert rule(["signed", broken], integrity.CHECKED).credit is False and rule(["self-reported", broken], integrity.CHECKED).label == broken
    with pytest.raises(ValueError, match="LABS_SIGNING_KEY"):
        integrity.policy(None, require=True)


def test_every_output_gives_the_same_credit(tmp_path, monkeypatch, key):
    """The grader's credited answers and the grade book's points agree, ledger by ledger (and the
    policy holds for every student of the book, not only its first)."""
    folder = tmp_path / "class"
    monkeypatch.delenv("LABS_SIGNING_KEY")
    _student(folder, "lap", cause=RIGHT)  # a laptop's ledger
    monkeypatch.setenv("LABS_SIGNING_KEY", KEY)
    _student(folder, "good", cause=RIGHT)
    _edit(_student(folder, "edit"), _to_right)
    _edit(_student(folder, "strip"), lambda d: (_to_right(d), _strip(d)))
    _edit(_student(folder, "gone"), lambda d: d["labs"][LAB].pop("act1"))
    for require in (False, True):
        rows, items, _ = _graded(folder, key, require)
        credited = items["earned"].gt(0)
        assert (rows["right"].astype(bool) == credited.reindex(rows.index)).all(), require
        assert rows["trust"].to_dict() == items["label"].reindex(rows.index).to_dict()
        assert credited.to_dict() == {"edit": False, "gone": False, "good": True, "lap": not require, "strip": False}


# ---- N15, N16 ---------------------------------------------------------------------------------------
def test_an_op_time_the_engine_refuses_is_an_input_refusal(tmp_path):
    """N15: Lab 07 tb = 1e15 passed the grader's range and failed as an engine error."""
    from labs.core.engine.pipeline import MAX_OP_TIME

    doc = {"schema_version": 1, "student": "tom", "engine_version": "0", "created": "t", "updated": "t",
           "labs": {"07_pipeline_visualizer": {"pipeline": {"saved": "t", "inputs": {"p": 4, "m": 8, "schedule": "1f1b", "v": 1, "tf": 1.0, "tb": 1e15, "tw": 1.0},
                                                             "predictions": {}, "outcomes": {}}}}}
    (tmp_path / "tom.json").write_text(json.dumps(doc))
    table, _ = grade.grade([str(tmp_path)])
    assert table["status"].iloc[0].startswith(f"invalid inputs: tb must be at most {MAX_OP_TIME:g}, got 1")


@pytest.mark.parametrize("line, why", [("ann,code0002", "'ann' is listed twice"), ("an\u2060n,code0002", "U+2060")])
def test_a_bad_roster_is_one_line_and_exit_2(tmp_path, capsys, line, why):
    """N16: an id listed twice, or with an invisible character, ended in a traceback."""
    _student(tmp_path / "class", "ann", submit=False)
    roster = tmp_path / "roster.csv"
    roster.write_text(f"student,code\nann,code0001\n{line}\n", encoding="utf-8")
    assert grade.main([str(tmp_path / "class"), "--roster", str(roster)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and why in err and "line 3" in err and "Traceback" not in err


@pytest.mark.parametrize("sequence", [None, 7])
def test_the_signed_bytes_are_the_canonical_json_of_the_entry_and_its_place(sequence):
    """A signature's HMAC reads canonical JSON (sorted keys, no spaces, UTF-8) of the entry without
    its signature, its place, the student and their variant (and a v2 signature's sequence): the
    bytes servers have signed since v1, here written out by hand against the parts signing builds."""
    doc = {"student": "Zoë \"z\"", "variant": None, "variants": {LAB: {"seed": "s", "questions": {"cause": {"order": ["B", "A"]}}}}}
    entry = {"saved": "2026-11-28T10:00:00", "inputs": {"gpus": 64, "name": "ü\n"}, "predictions": {"cause": "B"}, "signature": "x"}
    place = {"entry": {k: v for k, v in entry.items() if k != "signature"}, "kind": "step", "lab": LAB, "name": "act1", "student": doc["student"],
             "variant": {"document": None, "lab": doc["variants"][LAB]}}
    if sequence is not None:
        place["seq"] = sequence
    expected = json.dumps(place, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert signing._signed_bytes(doc, LAB, "step", "act1", entry, sequence) == expected
    with pytest.raises(ValueError, match="kind"):
        signing._signed_bytes(doc, LAB, "note", "act1", entry, sequence)


def test_the_one_pass_check_labels_every_entry_as_label_does(tmp_path, key):
    """check_document labels each entry in one pass (each signature parsed once, the HMAC keyed
    once a ledger): its labels are label()'s, entry by entry, for a signed entry, an edited one, an
    unreadable signature, a stripped one and a v1 one; and the head it checks is the one _places
    gives (an untouched ledger is in sequence; a stripped newest signature rolls it back)."""
    path = _student(tmp_path, "ann")
    DesignLedger("ann", tmp_path).commit_prediction("06_zero_sweep", "fit", "A")
    doc = json.loads(path.read_text())
    assert signing.check_document(doc, key).sequence == signing.IN_SEQUENCE
    late = {"answer": "B", "committed": "t", "changes": []}
    doc["predictions"]["06_zero_sweep"]["late"] = {**late, "signature": signing.sign_entry(doc, "06_zero_sweep", "prediction", "late", late, key)}
    doc["predictions"]["06_zero_sweep"]["fit"].pop("signature")  # the newest v2 write, stripped
    checked = signing.check_document(doc, key)
    assert checked.sequence == signing.ROLLED_BACK and checked.signed_any
    assert [label for *_, label in checked.rows] == ["signed", "signed", "self-reported", "signed"]
    doc["predictions"][LAB]["cause"]["answer"] = RIGHT  # edited
    doc["labs"][LAB]["act1"]["signature"] = "hmac-sha256:v2:1:" + "0" * 64  # unreadable (no head)
    checked = signing.check_document(doc, key)
    assert checked.rows == [(lab, name, signing.label(doc, lab, kind, name, entry, key)) for kind, lab, name, entry in signing.entries(doc)]
    assert [label for *_, label in checked.rows] == ["edited", "edited", "self-reported", "signed"]
    assert checked.kinds == ["step", "prediction", "prediction", "prediction"]
    assert checked.sequence == signing.NO_SEQUENCE  # no v2 signature verifies


@pytest.mark.parametrize("number", [9.765625e-06, 1e-05, 3e-08, 1e16, 1.2345678901234568e17, 7e-09])
def test_an_entry_with_a_float_msgspec_writes_otherwise_still_verifies(number):
    """check_document reads the signed bytes with msgspec first (sorted, compact: canonical()'s bytes
    for nearly every value, in a seventh of the time). For a float under 1e-4 or from 1e16 up it
    writes other digits than json (9.765625e-6 and 0.00001 for 9.765625e-06 and 1e-05), so those
    entries verify on canonical()'s bytes; an edit of the float is still an edit, and a ledger
    checked with canonical() alone (as before) gets the same labels."""
    doc = {"student": "ann", "variants": {LAB: {"seed": "s", "questions": {"q": {"answer": number, "tolerance": number / 20}}}}}
    entry = {"saved": "t", "inputs": {"lr": number}, "predictions": {}, "outcomes": {"x": number}}
    doc["labs"] = {LAB: {"act1": {**entry, "signature": signing.sign_entry(doc, LAB, "step", "act1", entry, KEY)}}}
    fast = signing._SORTED_COMPACT({k: v for k, v in entry.items()})
    assert fast != signing.canonical(entry)  # the case the second encoding is for
    assert signing.check_document(doc, KEY).rows == [(LAB, "act1", signing.SIGNED)]
    doc["labs"][LAB]["act1"]["inputs"]["lr"] = number * 2
    assert signing.check_document(doc, KEY).rows == [(LAB, "act1", signing.EDITED)]


def test_the_fast_bytes_equal_canonical_for_the_values_a_class_holds():
    """Where msgspec's sorted compact bytes are used, they are canonical()'s: text of every kind
    (escapes, non-ASCII, the line separators json leaves raw), integers past 64 bits, and floats
    between 1e-4 and 1e16 at every exponent."""
    values = [{"z": 1, "a": [True, None, "é\n\t\"\\\u2028\x7f\x00😀"], "m": {"b": 2**70, "a": -0.0}},
              [0.0001, 0.00012345, 1e15, 9999999999999998.0, -123.456, 1 / 3]]
    values += [[(i + 0.123456789) * 10.0 ** e] for e in range(-4, 16) for i in range(1, 10)]
    for value in values:
        assert signing._SORTED_COMPACT(value) == signing.canonical(value), value

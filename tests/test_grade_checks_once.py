"""The grade book after the grader reads each ledger again: its signatures' check is the grader's
for the same bytes and key (integrity._checked, by the bytes' digest), and checked again for other
bytes or another key. Ledgers written by DesignLedger with a class key, as on a class server."""

import json

import pytest

from labs import grade
from labs.core import signing
from labs.core.scenarios.lab05 import act1_correct_option, act1_outcomes
from labs.core.state import DesignLedger
from labs.gradebook import book, due, points
from labs.grading import integrity
from labs.grading.grader import read_ledger_digest

KEY = "checks-once-key-" + "k" * 20
LAB = "05_parallelism"
ACT1 = {"gpus": 64, "global_batch": 512, "fixed_per_gpu": False, "fabric": "ib-ndr", "algorithm": "ring", "overlap": True, "params_b": 7}
RIGHT = act1_correct_option()
WRONG = next(k for k in "ABCD" if k != RIGHT)


@pytest.fixture
def signed_class(tmp_path, monkeypatch):
    monkeypatch.setenv("LABS_SIGNING_KEY", KEY)
    for name in ("ada", "bo"):
        ledger = DesignLedger(name, tmp_path)
        ledger.commit_prediction(LAB, "cause", WRONG)
        ledger.save_step(LAB, "act1", ACT1, {"cause": WRONG}, act1_outcomes(ACT1, {"cause": WRONG}))
    integrity._CHECKED.clear()
    return tmp_path


def _counting(monkeypatch) -> list:
    calls = []
    check = signing.check_document

    def counted(doc, key):
        calls.append(doc["student"])
        return check(doc, key)

    monkeypatch.setattr(signing, "check_document", counted)
    return calls


def _book(table):
    return book.build(table, book.read_documents(sorted(set(table["file"]))), points.load(), due.load(None), key=KEY.encode())


def test_the_book_reads_the_graders_check_of_the_same_bytes(signed_class, monkeypatch):
    calls = _counting(monkeypatch)
    table, problems = grade.grade([str(signed_class)])
    assert not problems and sorted(calls) == ["ada", "bo"]
    items = _book(table).items
    print("checks:", calls)
    assert sorted(calls) == ["ada", "bo"]  # the book checked nothing again
    cause = items[items["item"].eq("cause")].set_index("student")
    assert cause.loc["ada", "label"] == cause.loc["bo", "label"] == integrity.SIGNED
    # the same labels, sequence and rows as a check of its own
    for path in sorted(signed_class.glob("*.json")):
        doc, digest = read_ledger_digest(path)
        kept = integrity.Ledger(doc, KEY.encode(), integrity.CHECKED, digest)
        fresh = integrity.Ledger(doc, KEY.encode(), integrity.CHECKED)
        assert kept.labels == fresh.labels and kept.sequence == fresh.sequence == signing.IN_SEQUENCE


def test_an_edit_after_grading_is_checked_again(signed_class, monkeypatch):
    calls = _counting(monkeypatch)
    table, _ = grade.grade([str(signed_class)])
    ada = next(p for p in signed_class.glob("*.json") if json.loads(p.read_text())["student"] == "ada")
    doc = json.loads(ada.read_text())
    doc["predictions"][LAB]["cause"]["answer"] = RIGHT  # the signed answer edited between the grader and the book
    ada.write_text(json.dumps(doc))
    items = _book(table).items
    print("checks:", calls)
    assert sorted(calls) == ["ada", "ada", "bo"]
    cause = items[items["item"].eq("cause")].set_index("student")
    assert cause.loc["ada", "label"] == integrity.EDITED and cause.loc["bo", "label"] == integrity.SIGNED


def test_another_key_is_checked_again(signed_class, monkeypatch):
    calls = _counting(monkeypatch)
    table, _ = grade.grade([str(signed_class)])
    other = ("another-class-key-" + "x" * 20).encode()
    items = book.build(table, book.read_documents(sorted(set(table["file"]))), points.load(), due.load(None), key=other).items
    print("checks:", calls)
    assert sorted(calls) == ["ada", "ada", "bo", "bo"]
    assert set(items[items["item"].eq("cause")]["label"]) == {integrity.EDITED}  # not the grader's "signed"

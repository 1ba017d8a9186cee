"""The grader's terminal tables on a small hand-made table: scores' per-file flags (distinct
values sorted and joined, NaN as none) and the summary's shares of right answers over clean rows,
each counted here by hand."""

import math

import pandas as pd

from labs.grading import grader

NAN = math.nan
LAB = "05_parallelism"


def _table() -> pd.DataFrame:
    rows = [  # student, file, step, right, judged, tampered, changes, identity, trust, trust_flag, version, prediction_correct, status
        ("ann", "a.json", "act1", 1, 1, False, 2, "", "signed", "", "", True, "ok"),
        ("ann", "a.json", "act2", 0, 1, False, 1, "", "self-reported", "not signed", "written by engine 0.4.3", False, "ok"),
        ("ann", "a2.json", "act1", 1, 1, False, 0, "same id in 1 other file(s): a.json", "signed", "", "", True, "ok"),
        ("bob", "b.json", "act1", 0, 1, True, 0, "", NAN, "", "", True, "stored outcome disagrees with the engine: mfu"),
        ("bob", "b.json", "act2", 1, 1, False, 3, "", "signed", "", "", True, "ok"),
        ("cy", "c.json", "act1", NAN, NAN, False, 0, "", "signed", "", "", None, "ok"),
    ]
    names = ["student", "file", "step", "right", "judged", "tampered", "changes", "identity", "trust", "trust_flag", "version", "prediction_correct", "status"]
    table = pd.DataFrame(rows, columns=names)
    return table.assign(lab=LAB, skipped=[0, 0, 0, 0, 0, 1])


def test_scores_flags_per_file_by_hand():
    out = grader.scores(_table())
    print(out.to_string())
    assert out["file"].tolist() == ["a.json", "a2.json", "b.json", "c.json"]
    assert out[LAB].tolist() == ["1/2", "1/1", "1/2", "0/0 (1 skipped)"]
    assert out["tampered"].tolist() == ["", "", "yes", ""]
    assert out["changed"].tolist() == [3, 0, 3, 0]
    assert out["identity"].tolist() == ["", "same id in 1 other file(s): a.json", "", ""]
    assert out["trust"].tolist() == ["self-reported; signed", "signed", "signed", "signed"]
    assert out["version"].tolist() == ["written by engine 0.4.3", "", "", ""]


def test_summary_shares_over_clean_rows_by_hand():
    out = grader.summary(_table())
    print(out.to_string())
    # act1: ann (a.json) right, ann (a2.json) flagged (identity), bob flagged (tampered), cy skipped -> 1 of 1
    # act2: ann flagged (trust: not signed), bob right -> 1 of 1
    assert out["step"].tolist() == ["act1", "act2"]
    assert out["students"].tolist() == [3, 2]
    assert out["flagged (left out)"].tolist() == [2, 1]
    assert out["right prediction"].tolist() == ["100% of 1", "100% of 1"]

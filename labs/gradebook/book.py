"""The grade book: from the grader's table and the ledgers, the points each student earned per
item and lab (points.py), lateness by each lab's due date and policy (due.py), marks for free
text (marks.py) and integrity labels (integrity.py), and the course total.

A student id handed in several files is booked by its first file (as the dashboard counts it),
and the identity flag says so. Credit, labels and hand-in times follow integrity's trust rule,
under the policy the grader's table was graded with (its `signatures` column: --require-signatures)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from labs.grading import integrity
from labs.gradebook.due import Deadlines
from labs.gradebook.points import Item
from labs.grading.questions import FREE_TEXT, answer_or_none, student_variant, why

SERVER_CLOCK, STUDENT_CLOCK = integrity.SERVER_CLOCK, integrity.STUDENT_CLOCK
ITEM_COLUMNS = ["student", "file", "lab", "item", "kind", "answer", "engine", "why", "right", "points", "earned", "label", "note"]
LAB_COLUMNS = ["student", "file", "lab", "submitted", "raw", "possible", "handed_in", "time_source", "late_hours", "factor", "earned", "flags"]


@dataclass
class Book:
    items: pd.DataFrame  # one row per student, lab and item
    labs: pd.DataFrame  # one row per student and lab
    totals: pd.DataFrame  # one row per student: earned per lab, total, possible, flags
    possible: dict[str, float]  # lab -> points possible

    @property
    def course_possible(self) -> float:
        return sum(self.possible.values())


def _policy(table: pd.DataFrame, key: bytes | None) -> str:
    """The trust policy the grader's table was graded under (--require-signatures travels in its
    `signatures` column); CHECKED when only the book was given the key."""
    if "signatures" in table and table["signatures"].eq(integrity.REQUIRED).any():
        return integrity.REQUIRED
    return integrity.policy(key)


def _first_files(table: pd.DataFrame) -> pd.DataFrame:
    if table.empty:
        return table
    return table[table["file"].eq(table.groupby("student")["file"].transform("min"))]


def build(table: pd.DataFrame, documents: dict[str, dict], points: dict[tuple[str, str], Item], deadlines: Deadlines,
          marks: dict | None = None, roster_students=(), key: bytes | None = None, salt: str | None = None) -> Book:
    """The grade book. `documents`: file -> ledger (the ones the table was graded from);
    `roster_students`: ids to list even with nothing handed in; `salt`: the class salt the
    variants were drawn with (the engine's answer shown is the student's variant's)."""
    marks = marks or {}
    labs = sorted({lab for lab, _ in points})
    possible = {lab: sum(i.points for (l, _), i in points.items() if l == lab) for lab in labs}
    policy = _policy(table, key)
    records = _records(table)
    seen = sorted(records)
    item_columns, lab_rows = {c: [] for c in ITEM_COLUMNS}, []
    for student in seen + sorted(set(roster_students) - set(seen)):
        mine = records.get(student, {})
        first = next((r for lab_rows_of in mine.values() for r in lab_rows_of), None)
        file = first["file"] if first else ""
        doc, digest = _document(documents, file)
        ledger = integrity.Ledger(doc, key if file else None, policy, digest)
        identity = "; ".join(sorted({r.get("identity") or "" for rs in mine.values() for r in rs if isinstance(r.get("identity"), str)} - {""}))
        for lab in labs:
            lab_rows_of = mine.get(lab, [])
            submitted = bool(lab_rows_of)
            flags, raw = [], 0.0
            if identity:
                flags.append(identity)
            if any(r.get("tampered") is True for r in lab_rows_of):
                flags.append("tampered: a stored outcome disagrees with the engine")
            variant = _variant(lab, student, salt, (doc.get("variants") or {}).get(lab)) if any(r.get("variant") for r in lab_rows_of) else None
            for (l, item), spec in points.items():
                if l != lab:
                    continue
                row, unflagged = _item_row(student, file, lab, item, spec, lab_rows_of, doc, ledger, marks, variant)
                for column, value in row.items():  # a column at a time: 100,000 rows' dicts held at once were ~70 MB
                    item_columns[column].append(value)
                raw += row["earned"]
                if row["note"]:
                    flags.append(f"{item}: {row['note']}")
                elif unflagged and unflagged not in flags:
                    flags.append(unflagged)
            handed_in, source, note = ledger.hand_in(lab) if submitted else (None, "", "")
            if note:
                flags.append(note)
            rule = deadlines.rule(lab)
            late_s = rule.late_seconds(handed_in)
            factor = rule.factor(late_s)
            if late_s > 0:
                flags.append(f"late by {late_s / 3600:.1f} h ({rule.policy}{f', x{factor:.2f}' if rule.policy != 'none' else ''}; {source})")
            lab_rows.append({
                "student": student, "file": Path(file).name if file else "", "lab": lab, "submitted": submitted, "raw": round(raw, 4),
                "possible": possible[lab], "handed_in": handed_in.isoformat() if handed_in else "", "time_source": source,
                "late_hours": round(late_s / 3600, 2), "factor": factor, "earned": round(raw * factor, 4), "flags": "; ".join(flags),
            })
    items = pd.DataFrame(item_columns, columns=ITEM_COLUMNS)
    by_lab = pd.DataFrame(lab_rows, columns=LAB_COLUMNS)
    return Book(items, by_lab, _totals(by_lab, labs), possible)


def _document(documents, file: str) -> tuple[dict, bytes | None]:
    """A file's ledger (an empty one when it cannot be read) and its bytes' digest when known."""
    if isinstance(documents, LedgerFiles):
        try:
            return documents.read(file)
        except KeyError:
            pass
    else:
        try:
            return documents[file], None
        except KeyError:
            pass
    return {"predictions": {}, "labs": {}}, None


def _records(table: pd.DataFrame) -> dict[str, dict[str, list[dict]]]:
    """student -> lab -> the grader's rows of the student's first file, each with the columns read
    here: the row's identity and variant columns, and its lab's answers and outcomes (a class's
    table has ~530 columns, a lab's rows fill a few: rows of every column were ~170 MB of a
    --feedback run). A column no row of the lab fills is left out, which reads as a missing value."""
    records = defaultdict(lambda: defaultdict(list))
    if table.empty:
        return records
    from labs.grading.specs import SPECS

    outcomes = {o for spec in SPECS.values() for o in spec.questions.values()}
    base = [c for c in ("student", "file", "lab", "step", "identity", "tampered", "variant") if c in table]
    read = [c for c in table.columns if c.startswith("answer.") or c in outcomes]
    rows = _first_files(table[base + read])
    for _, of_lab in rows.groupby("lab", sort=False, dropna=False):
        filled = [c for c in read if of_lab[c].notna().any()]
        for r in of_lab[base + filled].to_dict("records"):
            records[r["student"]][r["lab"]].append(r)
    return records


def _variant(lab: str, student: str, salt: str | None, recorded=None):
    try:
        return student_variant(lab, student, salt, recorded)
    except Exception:  # noqa: BLE001 - the grader already judged at it; only the shown answer is lost
        return None


def _item_row(student, file, lab, item, spec: Item, lab_rows, doc, ledger: integrity.Ledger, marks, variant=None) -> tuple[dict, str]:
    """The item's row, and a trust flag of an answer that keeps its credit (for the lab's flags)."""
    row = {"student": student, "file": Path(file).name if file else "", "lab": lab, "item": item, "kind": spec.counts,
           "answer": None, "engine": None, "why": "", "right": None, "points": spec.points, "earned": 0.0, "label": "", "note": ""}
    if spec.counts == "marked":
        step = next((s for (l, s), fields in FREE_TEXT.items() if l == lab and item in fields), None)
        text = doc.get("labs", {}).get(lab, {}).get(step, {}).get("inputs", {}).get(item)
        trusted = ledger.item(lab, step=step)
        row["answer"], row["label"] = text, trusted.label
        mark = marks.get(student, {}).get(lab, {}).get(item)
        if not trusted.credit and (mark is not None or text):
            row["note"] = trusted.flag
        elif mark is not None:
            row["earned"] = min(float(mark["points"]), spec.points)
        elif text:
            row["note"] = "not marked yet"
        return row, trusted.flag if text else ""
    row["engine"], row["why"] = answer_or_none(lab, item, variant), why(lab, item, variant)
    column, outcome = f"answer.{item}", _outcome(lab, item)
    first = next((r for r in lab_rows if isinstance(r.get(column), str)), None)
    saved = first.get("step") if first is not None and first.get("step") in doc.get("labs", {}).get(lab, {}) else None
    trusted = ledger.item(lab, question=item, step=saved)
    row["label"] = trusted.label
    if first is None:
        return row, ""
    answer = None if first[column] == "skipped" else first[column]
    right = first.get(outcome)
    row["answer"], row["right"] = answer, (None if answer is None or right is None or pd.isna(right) else bool(right))
    if not trusted.credit:
        row["note"] = trusted.flag
        return row, ""
    row["earned"] = spec.earned(answer, row["right"])
    return row, trusted.flag


@lru_cache(maxsize=None)
def _outcome(lab: str, question: str) -> str:
    from labs.grading.specs import SPECS

    return next(spec.questions[question] for (l, _s), spec in SPECS.items() if l == lab and question in spec.questions)


def _totals(by_lab: pd.DataFrame, labs: list[str]) -> pd.DataFrame:
    if by_lab.empty:
        return pd.DataFrame(columns=["student", "file", *labs, "total", "possible", "flags"])
    grid = by_lab.pivot(index="student", columns="lab", values="earned").reindex(columns=labs)
    out = grid.assign(
        total=grid.sum(axis=1).round(4),
        possible=by_lab.groupby("student")["possible"].sum(),
        flags=by_lab.groupby("student")["flags"].agg(lambda s: "; ".join(dict.fromkeys(f for text in s for f in text.split("; ") if f))),
    )
    files = by_lab.groupby("student")["file"].first()
    return out.assign(file=files).reset_index()[["student", "file", *labs, "total", "possible", "flags"]]


def read_documents(files) -> LedgerFiles:
    """file -> ledger, read again through the grader when asked (the schema check is remembered by
    digest); a file that cannot be read is missing, as the grader reported it."""
    return LedgerFiles(files)


class LedgerFiles(Mapping):
    """The class's ledgers by file, each read when it is asked for and not kept: the grade book and
    the feedback pages take one student at a time, and a class's 1,000 ledgers held parsed at once
    were ~300 MB of a --feedback run (59 MB of JSON); each is read once per use instead (~3 ms)."""

    def __init__(self, files):
        self.files = list(dict.fromkeys(files))
        self._named = set(self.files)

    def __getitem__(self, file: str) -> dict:
        return self.read(file)[0]

    def read(self, file: str) -> tuple[dict, bytes]:
        """The ledger and its bytes' digest (grader.read_ledger_digest); KeyError as __getitem__."""
        from labs.grading.grader import read_ledger_digest

        if file not in self._named:
            raise KeyError(file)
        try:
            return read_ledger_digest(Path(file))
        except Exception:  # noqa: BLE001 - the grader already reported it
            raise KeyError(file) from None

    def __iter__(self):
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)

"""Files an LMS imports, from a grade book (book.py). Each follows its format's documentation;
tests/data/lms/ holds a sample of each from that documentation (sources in its README).

Canvas: the Gradebook import CSV. Columns Student, ID, SIS User ID, SIS Login ID, Section, then
one per lab; the second row is "Points Possible"; one row per roster student, joined on SIS
Login ID; cells are numbers, and a lab not handed in is blank (left as it is in Canvas) or 0.
A lab column is named "Lab 05: parallelism"; Canvas makes a new assignment of a column it does
not know, and matches an existing one by "Name (assignment id)", taken from an export of the
course's gradebook given as `canvas_template`.

Moodle: the assignment's offline grading worksheet, downloaded from Moodle and given as
`template`: its Grade column is filled (the course total scaled to the worksheet's Maximum
grade, or one lab's), joined on Email address, else Full name, against the roster; every other
column and row is kept as downloaded, as Moodle's importer needs them (Identifier, Grade, Last
modified (grade)).

Gradescope: an autograder zip (setup.sh, run_autograder and this package's source): Gradescope
runs `python -m labs.grade` on the submitted ledger, which writes results.json with one test per
prediction question (results_json)."""

from __future__ import annotations

import csv
import re
import zipfile
from pathlib import Path

import pandas as pd

from labs import csvsafe
from labs.gradebook.book import Book
from labs.gradebook.roster import Person

CANVAS_IDS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "    Points Possible"  # as Canvas writes it in its own export
MOODLE_REQUIRED = ("Identifier", "Grade", "Last modified (grade)")
MISSING = ("blank", "zero")
ROOT = Path(__file__).resolve().parents[2]


def lab_title(lab: str) -> str:
    """`05_parallelism` -> `Lab 05: parallelism`."""
    number, _, topic = lab.partition("_")
    return f"Lab {number}: {topic.replace('_', ' ')}"


def _number(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def write_csv(rows: list[list], path: str | Path) -> None:
    """Rows (the first one the header) through the project's CSV-safe writer."""
    csvsafe.write(pd.DataFrame(rows[1:], columns=rows[0], dtype=object), path)


def _canvas_names(book: Book, template: str | Path | None) -> dict[str, str]:
    names = {lab: lab_title(lab) for lab in book.possible}
    if template is not None:
        with open(template, newline="", encoding="utf-8-sig") as handle:
            header = next(csv.reader(handle), [])
        for column in header:
            match = re.fullmatch(r"(.*) \((\d+)\)", column.strip())
            for lab, title in names.items():
                if match and match.group(1).strip() == lab_title(lab):
                    names[lab] = column.strip()
    return names


def canvas_rows(book: Book, people: list[Person], missing: str = "blank", template=None) -> tuple[list[list], list[str]]:
    """The Canvas import's rows, and the ids in the grade book that are not on the roster."""
    if missing not in MISSING:
        raise ValueError(f"missing must be one of {', '.join(MISSING)}, got {missing!r}")
    labs = list(book.possible)
    names = _canvas_names(book, template)
    by_student = {(r.student, r.lab): r for r in book.labs.itertuples()}
    rows = [CANVAS_IDS + [names[lab] for lab in labs], [POINTS_POSSIBLE, "", "", "", ""] + [_number(book.possible[lab]) for lab in labs]]
    for p in people:
        cells = []
        for lab in labs:
            r = by_student.get((p.student, lab))
            cells.append(_number(r.earned) if r is not None and r.submitted else ("" if missing == "blank" else "0"))
        rows.append([p.name, p.canvas_id, p.sis_user_id, p.sis_login_id, p.section] + cells)
    unlisted = sorted(set(book.labs["student"]) - {p.student for p in people})
    return rows, unlisted


def write_canvas(book: Book, people: list[Person], path, missing: str = "blank", template=None) -> list[str]:
    rows, unlisted = canvas_rows(book, people, missing, template)
    write_csv(rows, path)
    return unlisted


def moodle_rows(book: Book, people: list[Person], template: str | Path, lab: str | None = None) -> tuple[list[list], list[str]]:
    """The worksheet with its Grade column filled, and the worksheet rows matched to nobody."""
    with open(template, newline="", encoding="utf-8-sig") as handle:
        table = list(csv.reader(handle))
    if not table:
        raise ValueError(f"{template}: an empty worksheet")
    header = [h.strip() for h in table[0]]
    lower = {h.lower(): i for i, h in enumerate(header)}
    absent = [c for c in MOODLE_REQUIRED if c.lower() not in lower]
    if absent:
        raise ValueError(f"{template}: not a Moodle grading worksheet: no column {', '.join(absent)} (found {', '.join(header)})")
    if lab is not None and lab not in book.possible:
        raise ValueError(f"lab {lab!r} is not in the points table")
    totals = book.totals.set_index("student")
    by_email = {p.email.lower(): p.student for p in people if p.email}
    by_name = {p.name.lower(): p.student for p in people} | {p.student.lower(): p.student for p in people}
    grade_i, max_i = lower["grade"], lower.get("maximum grade")
    email_i, name_i, feedback_i = lower.get("email address"), lower.get("full name"), lower.get("feedback comments")
    unmatched = []
    for row in table[1:]:
        row += [""] * (len(header) - len(row))
        student = (by_email.get(row[email_i].strip().lower()) if email_i is not None else None) or (by_name.get(row[name_i].strip().lower()) if name_i is not None else None)
        if student is None or student not in totals.index:
            unmatched.append(row[lower["identifier"]])
            continue
        earned = float(totals.loc[student, lab]) if lab else float(totals.loc[student, "total"])
        possible = book.possible[lab] if lab else book.course_possible
        try:
            most = float(row[max_i]) if max_i is not None and row[max_i].strip() else None
        except ValueError:
            most = None
        row[grade_i] = _number(earned / possible * most if most and possible else earned)
        if feedback_i is not None:
            row[feedback_i] = csvsafe.cell(f"{_number(earned)} of {_number(possible)} points (Parallelism Labs grader)")
    return [header] + [r[: len(header)] for r in table[1:]], unmatched


def write_moodle(book: Book, people: list[Person], template, path, lab: str | None = None) -> list[str]:
    """The worksheet's own cells go back to Moodle as Moodle wrote them ("-" for no date stays
    "-"); the cells filled here are a number and text through the CSV-safe writer."""
    rows, unmatched = moodle_rows(book, people, template, lab)
    with open(path, "w", newline="", encoding="utf-8") as out:
        csv.writer(out, quoting=csv.QUOTE_ALL).writerows(rows)
    return unmatched


# ---- Gradescope -----------------------------------------------------------------------------
RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission (https://gradescope-autograders.readthedocs.io/en/latest/specs/)
set -u
ROOT="${AUTOGRADER_ROOT:-/autograder}"
cd "$ROOT/source"
mkdir -p "$ROOT/results"
python3 -m labs.grade "$ROOT/submission" --gradescope-results "$ROOT/results/results.json" %s
"""
SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image
set -eu
apt-get install -y python3 python3-pip
cd /autograder/source
python3 -m pip install --break-system-packages . || python3 -m pip install .
"""
SOURCE_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "assets/ledger.schema.json")


def write_gradescope_zip(path, points_file=None, due_file=None) -> list[str]:
    """The autograder zip: setup.sh and run_autograder at its root, this package's source beside
    them, and the instructor's points and due files when given. Returns the names it holds."""
    extra = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, given in (("points.toml", points_file), ("due.toml", due_file)):
            if given is not None:
                z.write(given, name)
                extra += [f"--{name.split('.')[0]}", name]
        for name, text in (("run_autograder", RUN_AUTOGRADER % " ".join(extra)), ("setup.sh", SETUP_SH)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            z.writestr(info, text)
        for name in SOURCE_FILES:
            if (ROOT / name).exists():
                z.write(ROOT / name, name)
        for file in sorted((ROOT / "labs").rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts and file.suffix in (".py", ".json", ".csv", ".toml"):
                z.write(file, file.relative_to(ROOT).as_posix())
        return z.namelist()


def results_json(book: Book, student: str) -> dict:
    """Gradescope's results.json for one student: a test per prediction question (its points
    and, in its output, the committed answer and the engine's with the why), and the total
    (late penalties and marks included, which is why it is given beside the tests)."""
    items = book.items[book.items["student"].eq(student)]
    tests = []
    for r in items.itertuples():
        if r.kind == "marked":
            continue
        answer = "skipped / not committed" if r.answer is None else str(r.answer)
        tests.append({
            "name": f"{lab_title(r.lab)} · {r.item}", "score": float(r.earned), "max_score": float(r.points),
            "status": "passed" if r.earned >= r.points and r.points > 0 else "failed",
            "output": f"Your committed answer: {answer}. The engine's answer: {r.why}." + (f" {r.note}" if r.note else ""),
        })
    labs = book.labs[book.labs["student"].eq(student)]
    late = [f for f in labs["flags"] if "late" in f]
    return {
        "score": float(round(labs["earned"].sum(), 4)),
        "output": "Graded by the Parallelism Labs engine from your ledger: every outcome recomputed, every question judged by your first committed answer."
        + (" Free-text answers are marked by hand." if (book.items["kind"] == "marked").any() else "") + (" " + "; ".join(late) if late else ""),
        "tests": tests,
    }


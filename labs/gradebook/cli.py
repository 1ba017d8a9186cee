"""The grade book's options of `python -m labs.grade` (added to its parser by add_arguments,
acted on by run after the grader has graded the folder)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from labs.gradebook import book as gradebook, due, exports, feedback, marks, points, roster as class_roster

FLAGS = ("canvas", "moodle", "gradescope_zip", "gradescope_results", "feedback", "gradebook")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("grade book (labs.gradebook)")
    g.add_argument("--points", help="TOML points table over the defaults (labs/gradebook/points.py)")
    g.add_argument("--set-points", action="append", default=[], metavar="LAB.ITEM=POINTS[:COUNTS]", help="change one entry of the points table")
    g.add_argument("--due", help="TOML due dates, grace and late policy per lab (labs/gradebook/due.py)")
    g.add_argument("--marks", help="JSON marks for free-text answers, as the dashboard's marking view saves them")
    g.add_argument("--gradebook", help="write the points per student and lab, the total and the flags here (CSV)")
    g.add_argument("--canvas", help="write a Canvas gradebook import CSV here (needs --roster)")
    g.add_argument("--canvas-missing", choices=exports.MISSING, default="blank", help="a lab not handed in: blank (default) or 0")
    g.add_argument("--canvas-template", help="an export of the course's Canvas gradebook: reuse its 'Name (id)' columns for labs")
    g.add_argument("--moodle", help="write the Moodle offline grading worksheet here (needs --moodle-template and --roster)")
    g.add_argument("--moodle-template", help="the grading worksheet downloaded from the Moodle assignment")
    g.add_argument("--moodle-lab", help="fill the worksheet with one lab's points instead of the course total")
    g.add_argument("--gradescope-zip", help="write a Gradescope autograder zip here")
    g.add_argument("--gradescope-results", help=argparse.SUPPRESS)  # run_autograder's: results.json of the submission
    g.add_argument("--feedback", help="write one HTML feedback page per student into this folder")


def wanted(args) -> bool:
    return any(getattr(args, f, None) for f in FLAGS)


def build(args, table: pd.DataFrame, people=()) -> tuple[gradebook.Book, dict]:
    from labs.gradebook import integrity

    documents = gradebook.read_documents(sorted(set(table["file"]))) if not table.empty else {}
    book = gradebook.build(table, documents, points.load(args.points, args.set_points), due.load(args.due), marks.load(args.marks),
                           roster_students=[p.student for p in people], key=integrity.key_from_env(), salt=getattr(args, "salt", None))
    return book, documents


def run(args, table: pd.DataFrame) -> int:
    """Write what the options ask for; 2 (and a message naming the option) for bad options."""
    try:
        if args.gradescope_zip:
            names = exports.write_gradescope_zip(args.gradescope_zip, args.points, args.due)
            print(f"Gradescope autograder: {args.gradescope_zip} ({len(names)} files)", file=sys.stderr)
        if args.gradescope_results:
            return _gradescope_results(args, table)
        if not (args.canvas or args.moodle or args.feedback or args.gradebook):
            return 0
        if (args.canvas or args.moodle) and not args.roster:
            raise ValueError("--canvas and --moodle join on the roster: give --roster roster.csv")
        if args.moodle and not args.moodle_template:
            raise ValueError("--moodle fills the worksheet Moodle gave you: give --moodle-template worksheet.csv")
        people = class_roster.load(args.roster) if args.roster else []
        book, documents = build(args, table, people)
    except (OSError, ValueError) as err:
        print(f"grade book: {err}", file=sys.stderr)
        return 2
    if args.gradebook:
        numbers = _numbers(book)
        exports.write_csv([list(numbers.columns)] + numbers.values.tolist(), args.gradebook)
    if args.canvas:
        unlisted = exports.write_canvas(book, people, args.canvas, args.canvas_missing, args.canvas_template)
        print(f"Canvas import: {args.canvas} ({len(people)} roster students)" + (f"; not on the roster, left out: {', '.join(unlisted[:5])}{' ...' if len(unlisted) > 5 else ''}" if unlisted else ""), file=sys.stderr)
    if args.moodle:
        unmatched = exports.write_moodle(book, people, args.moodle_template, args.moodle, args.moodle_lab)
        print(f"Moodle worksheet: {args.moodle}" + (f"; {len(unmatched)} worksheet row(s) matched to no student, left as they were" if unmatched else ""), file=sys.stderr)
    if args.feedback:
        pages = feedback.write_all(book, table, documents, args.feedback)
        print(f"feedback: {len(pages)} pages in {args.feedback}", file=sys.stderr)
    totals = book.totals["total"]
    print(f"points: {len(totals)} students, course total out of {book.course_possible:g}, median {totals.median() if len(totals) else 0:g}", file=sys.stderr)
    return 0


def _numbers(book: gradebook.Book) -> pd.DataFrame:
    """The grade book as numbers, with a first row of points possible."""
    labs = list(book.possible)
    possible = pd.DataFrame([{"student": "Points Possible", "file": "", **book.possible, "total": book.course_possible, "possible": book.course_possible, "flags": ""}])
    return pd.concat([possible, book.totals[["student", "file", *labs, "total", "possible", "flags"]]], ignore_index=True)


def _gradescope_results(args, table: pd.DataFrame) -> int:
    """results.json for the one ledger Gradescope handed in: always written, a score of 0 with the
    reason when there is no ledger or several students' ledgers."""
    path = Path(args.gradescope_results)
    students = sorted(set(table["student"])) if not table.empty else []
    if len(students) != 1:
        why = "no ledger found in the submission: upload the .ledger.json the lab downloads" if not students else f"ledgers of {len(students)} students in one submission"
        result = {"score": 0.0, "output": why, "tests": []}
    else:
        book, _ = build(args, table)
        result = exports.results_json(book, students[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0

"""The grade book's options of `python -m labs.grade` (added to its parser by add_arguments,
acted on by run after the grader has graded the folder). Gradescope's entry point, which reads
the zip's autograder_config.json (the class salt and signing key, as the instructor's environment
had them when the zip was built) and grades the submission, is labs.gradebook.autograder."""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys
from pathlib import Path

import pandas as pd

from labs.gradebook import book as gradebook
from labs.gradebook import due, exports, feedback, marks, points
from labs.gradebook import roster as class_roster

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
    g.add_argument("--canvas-template", help="an export of the course's Canvas gradebook: reuse its 'Name (id)' columns for labs, and its ID and SIS User ID per SIS Login ID")
    g.add_argument("--moodle", help="write the Moodle offline grading worksheet here (needs --moodle-template and --roster)")
    g.add_argument("--moodle-template", help="the grading worksheet downloaded from the Moodle assignment")
    g.add_argument("--moodle-lab", help="fill the worksheet with one lab's points instead of the course total")
    g.add_argument("--gradescope-zip", help="write a Gradescope autograder zip here (with --points, --due, --roster, the class salt and LABS_SIGNING_KEY inside)")
    g.add_argument("--gradescope-visibility", choices=exports.VISIBILITY, default="after_due_date",
                   help="when Gradescope shows each question's result and the engine's answer (default after_due_date)")
    g.add_argument("--gradescope-results", help=argparse.SUPPRESS)  # the autograder's: results.json of the submission
    g.add_argument("--gradescope-metadata", help=argparse.SUPPRESS)  # the autograder's: Gradescope's submission_metadata.json
    g.add_argument("--gradescope-roster", help=argparse.SUPPRESS)  # the autograder's: the roster the zip carries
    g.add_argument("--feedback", help="write one HTML feedback page per student into this folder")


def wanted(args) -> bool:
    return any(getattr(args, f, None) for f in FLAGS)


def build(args, table: pd.DataFrame, people=()) -> tuple[gradebook.Book, dict]:
    from labs.grading import integrity

    documents = gradebook.read_documents(sorted(set(table["file"]))) if not table.empty else {}
    book = gradebook.build(table, documents, points.load(args.points, args.set_points), due.load(args.due), marks.load(args.marks),
                           roster_students=[p.student for p in people], key=integrity.key_from_env(), salt=getattr(args, "salt", None))
    return book, documents


def _zip(args) -> None:
    """The autograder zip, with the class salt (--salt, else LABS_CLASS_SALT), the signing key
    (LABS_SIGNING_KEY) of this environment and the grader's --require-signatures, and the
    roster's identity columns (no codes)."""
    given = getattr(args, "salt", None)
    salt = (given if given is not None else os.environ.get("LABS_CLASS_SALT", "")) or None  # as labs.variants.class_salt reads it
    key = os.environ.get("LABS_SIGNING_KEY", "").strip() or None
    roster_text = None
    if getattr(args, "roster", None):
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["student", "name", "email", "sis_user_id"])
        writer.writerows([p.student, p.name, p.email, p.sis_user_id] for p in class_roster.load(args.roster))
        roster_text = out.getvalue()
    require = bool(getattr(args, "require_signatures", False))
    names = exports.write_gradescope_zip(args.gradescope_zip, args.points, args.due, salt=salt, signing_key=key,
                                         roster_text=roster_text, visibility=args.gradescope_visibility, require_signatures=require)
    print(f"Gradescope autograder: {args.gradescope_zip} ({len(names)} files; class salt {'inside' if salt else 'NONE (variants drawn unsalted)'}, "
          f"signing key {'inside' if key else 'NONE (every entry self-reported)'}, roster {'inside' if roster_text else 'none'}, "
          f"{'--require-signatures, ' if require else ''}answers shown {args.gradescope_visibility.replace('_', ' ')})", file=sys.stderr)


def run(args, table: pd.DataFrame) -> int:
    """Write what the options ask for; 2 (and a message naming the option) for bad options."""
    try:
        if args.gradescope_zip:
            _zip(args)
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
        pages = feedback.write_all(book, table, documents, args.feedback, salt=getattr(args, "salt", None))
        print(f"feedback: {len(pages)} pages in {args.feedback}", file=sys.stderr)
    totals = book.totals["total"]
    print(f"points: {len(totals)} students, course total out of {book.course_possible:g}, median {totals.median() if len(totals) else 0:g}", file=sys.stderr)
    return 0


def _numbers(book: gradebook.Book) -> pd.DataFrame:
    """The grade book as numbers, with a first row of points possible."""
    labs = list(book.possible)
    possible = pd.DataFrame([{"student": "Points Possible", "file": "", **book.possible, "total": book.course_possible, "possible": book.course_possible, "flags": ""}])
    return pd.concat([possible, book.totals[["student", "file", *labs, "total", "possible", "flags"]]], ignore_index=True)


def _metadata(path) -> dict | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def _gradescope_results(args, table: pd.DataFrame) -> int:
    """results.json for the one ledger Gradescope handed in: always written, a score of 0 with the
    reason when there is no ledger, several students' ledgers, or a ledger that is not the
    submitter's (Gradescope's submission metadata, through the zip's roster when it has one)."""
    path = Path(args.gradescope_results)
    visibility = args.gradescope_visibility
    students = sorted(set(table["student"])) if not table.empty else []
    metadata = _metadata(args.gradescope_metadata) if args.gradescope_metadata else None
    if not students:
        result = exports.refusal("no ledger found in the submission: upload the .ledger.json the lab downloads.", visibility)
    elif len(students) > 1:
        result = exports.refusal(f"Ledgers of {len(students)} students in one submission: upload only your own .ledger.json.", visibility)
    elif metadata is None:
        result = exports.refusal("Gradescope's submission metadata could not be read, so the ledger's student cannot be checked against "
                                 "the submitter: 0 points. Tell your instructor.", visibility)
    else:
        people = class_roster.load(args.gradescope_roster) if args.gradescope_roster else []
        problem = exports.identity_problem(students[0], metadata, people)
        if problem:
            result = exports.refusal(problem, visibility)
        else:
            book, documents = build(args, table)
            file = next(iter(sorted(set(table["file"]))), None)
            result = exports.results_json(book, students[0], documents.get(file, {}), getattr(args, "salt", None), visibility)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0

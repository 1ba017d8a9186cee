"""`python -m labs.grade <folder or files> [--csv out.csv] [--strict] [--roster roster.csv]`

Reads every ledger, validates it against the ledger schema, recomputes each step's outcomes
from its stored inputs with the engine, and grades each question by the student's committed
(first) prediction. Every file and every step is graded on its own: a file that cannot be read
or a step the engine refuses is reported with its file, lab and step, and grading goes on.
Flags, each in its own column and left out of the summary's averages: a stored outcome that
disagrees with the engine (tampered, or an older engine), a recorded variant that differs from
the one regenerated from the student's id and the class salt (labs.variants: predictions are
graded at the regenerated variant; a ledger without one is graded as before variants),
predictions changed after their commit, and identity problems (one student id in several files, a file named for another id,
an id missing from the roster). With the class's signing key (LABS_SIGNING_KEY) every row also
carries its trust (labs.gradebook.integrity, the one rule the grade book and exports apply too):
an answer edited after the server signed it, a signature missing from a signed ledger or a ledger
rolled back to an older signed version earns no credit and is flagged; an unsigned ledger is
flagged, and earns no credit with --require-signatures. Nothing in a ledger is executed; the only
file written is --csv. Exit status 0, or with --strict 1 when any file was unreadable or any row is
flagged or in error; 2 for a roster or option that cannot be used.
"""

from __future__ import annotations

import argparse
import gc
import sys

import csv

import pandas as pd

from labs import csvsafe
from labs.core import scenarios
from labs.core.state import Roster
from labs.gradebook import cli as gradebook_cli
from labs.grading import integrity
from labs.grading.grader import (  # noqa: F401 (grade, scores, ... re-exported: the grader's names as `labs.grade` had them)
    MAX_DEPTH, STDERR_LINES_PER_FILE, _needs_attention, _shown_table, collect, csv_bytes, grade, grade_document, read_ledger, scores,
    shown, summary,
)
from labs.grading.specs import BASE_COLUMNS, MAX_BYTES, MAX_WORK_PER_FILE, SPECS  # noqa: F401 (re-exported)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labs.grade", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="ledger files or folders of them")
    parser.add_argument("--csv", help="write the per-step table here")
    parser.add_argument("--roster", help="CSV with columns student,code: flag ledgers whose id is not on it")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any file is unreadable or any row is flagged or in error")
    parser.add_argument("--salt", help="the class salt the labs drew their variants with (default: $LABS_CLASS_SALT, else none)")
    parser.add_argument("--require-signatures", action="store_true",
                        help="with LABS_SIGNING_KEY (a class whose server signs): an answer without the server's signature, "
                             "and its time, earns no credit (edited, stripped or rolled-back ones never do); flagged either way")
    gradebook_cli.add_arguments(parser)
    args = parser.parse_args(argv)
    book_follows = gradebook_cli.wanted(args)  # the book and the feedback pages ask every variant and the labs again
    scenarios.keep_variants(book_follows)
    collections = gc.get_threshold()
    gc.set_threshold(20_000, 20, 20)  # a class parses ~400,000 dicts: the collector ran ~1 s of every 20 at the default 700
    try:
        return _run(args, forget_computed=not book_follows)
    finally:
        scenarios.keep_variants(True)
        gc.set_threshold(*collections)


def _run(args, forget_computed: bool) -> int:
    try:
        roster = Roster.load(args.roster) if args.roster else None
        key = integrity.key_from_env()
        integrity.policy(key, args.require_signatures)
    except (OSError, ValueError, csv.Error) as err:
        print(f"python -m labs.grade: {shown(' '.join(str(err).split()), 300)}", file=sys.stderr)
        return 2
    table, problems = grade(args.paths, roster, salt=args.salt, key=key, require_signatures=args.require_signatures,
                            forget_computed=forget_computed)
    for name, why in problems:
        print(f"not graded {shown(name, 200)}: {shown(why, 300)}", file=sys.stderr)
    not_ok = table.loc[~table["status"].isin(["ok"]), ["file", "lab", "step", "status"]] if not table.empty else table  # four columns, not the whole row
    for file, rows in not_ok.groupby("file", sort=False) if not table.empty else []:
        for row in rows.head(STDERR_LINES_PER_FILE).itertuples():
            print(f"{shown(file, 200)} {shown(row.lab)}/{shown(row.step)}: {shown(row.status, 300)}", file=sys.stderr)
        if len(rows) > STDERR_LINES_PER_FILE:
            print(f"{shown(file, 200)}: {len(rows) - STDERR_LINES_PER_FILE} more row(s) not ok (see --csv)", file=sys.stderr)
    if table.empty:
        print("no gradable ledgers found")
    else:
        with pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_colwidth", 60, "display.max_rows", None):
            print(_shown_table(scores(table)))
            print()
            print(_shown_table(summary(table)))
    if args.csv:
        csvsafe.write(table, args.csv)
    book_status = gradebook_cli.run(args, table) if gradebook_cli.wanted(args) else 0
    if book_status:
        return book_status
    bad = 0 if table.empty else int(_needs_attention(table).sum())
    print(f"{len(problems)} file(s) not graded, {bad} row(s) flagged or in error" + ("" if args.strict else " (--strict: exit 1 when any)"), file=sys.stderr)
    return 1 if args.strict and (problems or bad) else 0


if __name__ == "__main__":
    raise SystemExit(main())

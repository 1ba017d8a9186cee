"""Files an LMS imports, from a grade book (book.py). Each follows its format's documentation;
tests/data/lms/ holds a sample of each from that documentation (sources in its README). Every
number here is the grade book's (its per-item points and labels, its late factors): nothing is
re-judged or re-trusted here.

Canvas: the Gradebook import CSV. Columns Student, ID, SIS User ID, SIS Login ID, Section, then
one per lab; the second row is "Points Possible"; one row per roster student, joined on SIS
Login ID; cells are numbers, and a lab not handed in is blank (left as it is in Canvas) or 0.
ID (Canvas's own user id) and SIS User ID come from the roster's `canvas_id` and `sis_user_id`
columns, else from the row of `canvas_template` (an export of the course's gradebook) with the
same SIS Login ID; where neither has them they stay blank, and Canvas matches the row on SIS
Login ID. A lab column is named "Lab 05: parallelism"; Canvas makes a new assignment of a column
it does not know, and matches an existing one by "Name (assignment id)", taken from that export.

Moodle: the assignment's offline grading worksheet, downloaded from Moodle and given as
`template`: its Grade column is filled (the course total scaled to the worksheet's Maximum
grade, or one lab's), joined on Email address, else Full name, against the roster; every other
column and row is kept as downloaded, as Moodle's importer needs them (Identifier, Grade, Last
modified (grade)), each cell through labs.csvsafe.cell (a name or status a student typed as
`=...` is written as text, not a live formula; Moodle's importer reads only the Identifier, Grade,
Last modified and Feedback columns).

Gradescope: an autograder zip (setup.sh, run_autograder, this package's source and
`autograder_config.json`, mode 0600, with the class salt and signing key read where the zip is
built): Gradescope runs `python3 -m labs.gradebook.autograder autograder`, which sets the salt and key
as the environment every other tool reads them from, grades the submitted ledger with
`python -m labs.grade`, checks the ledger's student against Gradescope's submission metadata, and
writes results.json (results_json): one test per prediction question of the labs the ledger
holds, shown after the due date (or when published)."""

from __future__ import annotations

import csv
import json
import math
import re
import stat
import unicodedata
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
NO_DATE = "-"  # Moodle's worksheet for "no date": kept as Moodle wrote it (a lone operator is no formula)
ROOT = Path(__file__).resolve().parents[2]
NO_ANSWER, SKIPPED = "no answer committed", "skipped"


def lab_title(lab: str) -> str:
    """`05_parallelism` -> `Lab 05: parallelism`."""
    number, _, topic = lab.partition("_")
    return f"Lab {number}: {topic.replace('_', ' ')}"


def _number(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def write_csv(rows: list[list], path: str | Path) -> None:
    """Rows (the first one the header) through the project's CSV-safe writer."""
    csvsafe.write(pd.DataFrame(rows[1:], columns=rows[0], dtype=object), path)


# ---- what a student answered, in words ----------------------------------------------------------
def student_variant_of(lab: str, student: str, doc: dict, salt: str | None):
    """The variant the student's ledger records for a lab, regenerated (labs.variants) with the
    class salt; None for a ledger without one (graded at the lab's default, as the grader does)."""
    from labs.grading.questions import student_variant

    recorded = (doc.get("variants") or {}).get(lab) if isinstance(doc, dict) else None
    if not recorded:
        return None
    try:
        return student_variant(lab, student, salt, recorded)
    except Exception:  # noqa: BLE001 - the grader has flagged it; only the option's words are lost
        return None


def answer_text(lab: str, item: str, answer, variant=None) -> str:
    """A committed answer as the student saw it: the letter and its option's text ("B: the NIC
    ..."), or a typed number with its unit; the bare answer when no option has that letter."""
    from labs.core.scenarios import QUESTION_OPTIONS
    from labs.grading import questions

    text = str(answer)
    try:
        q = questions._question(lab, item, variant)
        if q is not None and q.numeric:
            return f"{text} {q.spec.unit}".strip()
        options = q.options if q is not None else QUESTION_OPTIONS.get((lab, item), ())
    except Exception:  # noqa: BLE001
        return text
    label = next((o.label for o in options if o.key == text), "")
    return f"{text}: {label}" if label else text


def committed_answer(doc: dict, lab: str, item: str, answer, variant=None) -> str:
    """The grade book's answer in words; "skipped" for a committed skip, "no answer committed"
    when the ledger holds none (never "nan" or a blank)."""
    if not _missing(answer):
        return answer_text(lab, item, answer, variant)
    record = ((doc or {}).get("predictions") or {}).get(lab, {}).get(item) if isinstance(doc, dict) else None
    return SKIPPED if isinstance(record, dict) and record.get("answer") is None else NO_ANSWER


# ---- Canvas ---------------------------------------------------------------------------------
def _canvas_template(template) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """The export's header, and SIS Login ID (case-blind) -> (ID, SIS User ID) of its student rows."""
    if template is None:
        return [], {}
    with open(template, newline="", encoding="utf-8-sig") as handle:
        table = list(csv.reader(handle))
    header = [h.strip() for h in table[0]] if table else []
    where = {h: header.index(h) for h in CANVAS_IDS if h in header}
    ids = {}
    if {"ID", "SIS User ID", "SIS Login ID"} <= set(where):
        for row in table[1:]:
            row = row + [""] * (len(header) - len(row))
            login = row[where["SIS Login ID"]].strip()
            if login:  # the Points Possible row has none
                ids[login.casefold()] = (row[where["ID"]].strip(), row[where["SIS User ID"]].strip())
    return header, ids


def _canvas_names(book: Book, header: list[str]) -> dict[str, str]:
    names = {lab: lab_title(lab) for lab in book.possible}
    for column in header:
        match = re.fullmatch(r"(.*) \((\d+)\)", column.strip())
        for lab in names:
            if match and match.group(1).strip() == lab_title(lab):
                names[lab] = column.strip()
    return names


def canvas_rows(book: Book, people: list[Person], missing: str = "blank", template=None) -> tuple[list[list], list[str]]:
    """The Canvas import's rows, and the ids in the grade book that are not on the roster."""
    if missing not in MISSING:
        raise ValueError(f"missing must be one of {', '.join(MISSING)}, got {missing!r}")
    labs = list(book.possible)
    header, exported = _canvas_template(template)
    names = _canvas_names(book, header)
    by_student = {(r.student, r.lab): r for r in book.labs.itertuples()}
    rows = [CANVAS_IDS + [names[lab] for lab in labs], [POINTS_POSSIBLE, "", "", "", ""] + [_number(book.possible[lab]) for lab in labs]]
    for p in people:
        cells = []
        for lab in labs:
            r = by_student.get((p.student, lab))
            cells.append(_number(r.earned) if r is not None and r.submitted else ("" if missing == "blank" else "0"))
        canvas_id, sis_user_id = exported.get(p.sis_login_id.casefold(), ("", ""))
        rows.append([p.name, p.canvas_id or canvas_id, p.sis_user_id or sis_user_id, p.sis_login_id, p.section] + cells)
    unlisted = sorted(set(book.labs["student"]) - {p.student for p in people})
    return rows, unlisted


def write_canvas(book: Book, people: list[Person], path, missing: str = "blank", template=None) -> list[str]:
    rows, unlisted = canvas_rows(book, people, missing, template)
    write_csv(rows, path)
    return unlisted


# ---- Moodle ---------------------------------------------------------------------------------
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
            row[feedback_i] = f"{_number(earned)} of {_number(possible)} points (Parallelism Labs grader)"
    return [header] + [r[: len(header)] for r in table[1:]], unmatched


def write_moodle(book: Book, people: list[Person], template, path, lab: str | None = None) -> list[str]:
    """Every cell, the worksheet's own included, through labs.csvsafe.cell: a Full name, e-mail or
    status a student set to `=...` or `@SUM(...)` goes back as text (the reliability audit's N7:
    written raw, LibreOffice imported 40 live formulas). Moodle's "-" (no date) stays "-": with
    nothing after it, it is no formula."""
    rows, unmatched = moodle_rows(book, people, template, lab)
    with open(path, "w", newline="", encoding="utf-8") as out:
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerows([[c if c == NO_DATE else csvsafe.cell(c) for c in r] for r in rows])
    return unmatched


# ---- Gradescope -----------------------------------------------------------------------------
# Gradescope's autograder interface is the zip: setup.sh and run_autograder at its root, extracted
# to /autograder/source; the submission in /autograder/submission, its metadata (the submitters)
# in /autograder/submission_metadata.json; results.json in /autograder/results
# (https://gradescope-autograders.readthedocs.io/en/latest/specs/ and .../submission_metadata/).
RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission (https://gradescope-autograders.readthedocs.io/en/latest/specs/)
set -u
ROOT="${AUTOGRADER_ROOT:-/autograder}"
cd "$ROOT/source"
mkdir -p "$ROOT/results"
python3 -m labs.gradebook.autograder autograder "$ROOT"
"""
SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image
set -eu
apt-get install -y python3 python3-pip
cd /autograder/source
python3 -m pip install --break-system-packages . || python3 -m pip install .
"""
CONFIG = "autograder_config.json"  # in the zip, mode 0600: the class salt, the signing key, the options
CONFIG_ENV = ("LABS_CLASS_SALT", "LABS_SIGNING_KEY")  # the names every tool reads them from
CONFIG_FILES = ("--points", "--due", "--gradescope-roster")  # options of config["args"] naming a file in the zip
CONFIG_SWITCHES = ("--require-signatures",)
VISIBILITY = ("after_due_date", "after_published")  # Gradescope's test visibilities that wait
SOURCE_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "assets/ledger.schema.json")
PACKED = (".py", ".json", ".csv", ".toml")
NOT_PACKED = ("__marimo__", "__pycache__")  # marimo's session caches, bytecode: never source


def _packed(path: Path) -> bool:
    """A file of the package's source: no cache folder, no hidden file, no student's ledger."""
    parts = path.relative_to(ROOT).parts
    return (path.suffix in PACKED and not any(p in NOT_PACKED or p.startswith(".") or p.endswith(".egg-info") for p in parts)
            and not path.name.endswith(".ledger.json"))


def source_files() -> list[str]:
    """What the zip carries of this repository: the build files, the package's source (caches and
    anything ignored left out by name) and the reference data setup.py copies into the wheel."""
    from labs.core.engine.datafiles import FILES

    names = [n for n in SOURCE_FILES if (ROOT / n).is_file()]
    names += [f.relative_to(ROOT).as_posix() for f in sorted((ROOT / "labs").rglob("*")) if f.is_file() and _packed(f)]
    names += [f"tests/data/{n}" for n in FILES if (ROOT / "tests" / "data" / n).is_file()]
    return names


def _secret(name: str, value) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or any(unicodedata.category(c) == "Cc" for c in value):
        raise ValueError(f"{name}: must be text without control characters")
    return value


def write_gradescope_zip(path, points_file=None, due_file=None, salt: str | None = None, signing_key: str | None = None,
                         roster_text: str | None = None, visibility: str = "after_due_date", require_signatures: bool = False) -> list[str]:
    """The autograder zip: setup.sh and run_autograder at its root, this package's source beside
    them, the instructor's points and due files when given, the roster's identity columns
    (`roster_text`, CSV: student, name, email, sis_user_id; 0600) and autograder_config.json
    (0600) with the class salt, the signing key and the trust policy (`require_signatures`: the
    grader's --require-signatures, which needs the key). Returns the names it holds."""
    if visibility not in VISIBILITY:
        raise ValueError(f"--gradescope-visibility must be one of {', '.join(VISIBILITY)}, got {visibility!r}")
    if signing_key is not None:
        from labs.core import signing

        signing.signing_key(signing_key)  # a key too short to sign with is refused here, by name
    elif require_signatures:
        raise ValueError("--require-signatures needs the class's signing key: set LABS_SIGNING_KEY as on the class server")
    config = {"env": {"LABS_CLASS_SALT": _secret("LABS_CLASS_SALT (--salt)", salt), "LABS_SIGNING_KEY": _secret("LABS_SIGNING_KEY", signing_key)},
              "args": ["--require-signatures"] if require_signatures else [], "visibility": visibility}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, given, flag in (("points.toml", points_file, "--points"), ("due.toml", due_file, "--due")):
            if given is not None:
                z.write(given, name)
                config["args"] += [flag, name]
        private = [(CONFIG, None, 0o600)]
        if roster_text is not None:
            private.append(("roster.csv", roster_text, 0o600))
            config["args"] += ["--gradescope-roster", "roster.csv"]
        private[0] = (CONFIG, json.dumps(config, indent=1), 0o600)
        for name, text, mode in (("run_autograder", RUN_AUTOGRADER, 0o755), ("setup.sh", SETUP_SH, 0o755), *private):
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, text)
        for name in source_files():
            z.write(ROOT / name, name)
        return z.namelist()


def read_config(path: str | Path) -> dict:
    """autograder_config.json, checked: ValueError naming the field."""
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"{Path(path).name}: cannot be read ({err})") from None
    if not isinstance(config, dict):
        raise ValueError(f"{Path(path).name}: not an object")  # noqa: TRY004 - a bad file, refused as bad input
    env, args, visibility = config.get("env", {}), config.get("args", []), config.get("visibility", "after_due_date")
    if not isinstance(env, dict) or set(env) - set(CONFIG_ENV):
        raise ValueError(f"{Path(path).name}: env may name only {', '.join(CONFIG_ENV)}")
    for name, value in env.items():
        _secret(f"{Path(path).name}: env.{name}", value)
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"{Path(path).name}: args must be a list of text")
    i = 0
    while i < len(args):  # only the options the zip writes: nothing else reaches the grader's command line
        if args[i] in CONFIG_FILES and i + 1 < len(args) and "/" not in args[i + 1] and not args[i + 1].startswith("."):
            i += 2
        elif args[i] in CONFIG_SWITCHES:
            i += 1
        else:
            raise ValueError(f"{Path(path).name}: args: {args[i]!r} is not one of {', '.join(CONFIG_FILES + CONFIG_SWITCHES)} (with a file name in the zip)")
    if visibility not in VISIBILITY:
        raise ValueError(f"{Path(path).name}: visibility must be one of {', '.join(VISIBILITY)}, got {visibility!r}")
    return {"env": env, "args": args, "visibility": visibility}


def _key(text) -> str:
    """An id, an e-mail or a name as a reader compares them: compatibility forms and case folded,
    spaces collapsed."""
    return " ".join(unicodedata.normalize("NFKC", str(text)).casefold().split())


def submitters(metadata) -> list[dict]:
    """Gradescope's users of the submission (one, or a group's), as {email, name, sid} text."""
    users = metadata.get("users") if isinstance(metadata, dict) else None
    if not isinstance(users, list):
        return []
    return [{k: str(u.get(k) or "").strip() for k in ("email", "name", "sid")} for u in users if isinstance(u, dict)]


def identity_problem(student: str, metadata, people: list[Person] = ()) -> str | None:
    """Why this ledger does not belong to the Gradescope submitter, or None when it does.

    With a roster, a submitter is found by e-mail or SIS user id (its `sid`) and must be the
    ledger's student; a submitter not on the roster, or without a roster, must have the ledger's
    id as their e-mail, the e-mail's name part, their student id or their name."""
    users = submitters(metadata)
    if not users:
        return "Gradescope's submission metadata names no submitter, so this ledger's student cannot be checked: 0 points. Tell your instructor."
    wanted = _key(student)
    by_email = {_key(p.email): p for p in people if p.email}
    by_sid = {_key(p.sis_user_id): p for p in people if p.sis_user_id}
    for u in users:
        person = by_email.get(_key(u["email"])) if u["email"] else None
        person = person or (by_sid.get(_key(u["sid"])) if u["sid"] else None)
        if person is not None:
            if _key(person.student) == wanted:
                return None
            continue
        names = {u["email"], u["email"].partition("@")[0], u["sid"], u["name"]} - {""}
        if wanted in {_key(n) for n in names}:
            return None
    who = ", ".join(" ".join(x for x in (u["name"], f"<{u['email']}>" if u["email"] else "") if x) or "an unnamed submitter" for u in users)
    return (f"This ledger was written by {student!r}, but this submission is {who}'s: a ledger earns points only for the "
            f"student who wrote it, so this submission scores 0. Upload the .ledger.json your own lab downloaded; if it is "
            f"yours, ask your instructor to add your id to the autograder's roster.")


def refusal(message: str, visibility: str = "after_due_date") -> dict:
    """results.json of a submission that earns nothing, with the reason (shown at once)."""
    return {"score": 0.0, "output": message, "visibility": visibility, "stdout_visibility": "hidden", "tests": []}


def results_json(book: Book, student: str, doc: dict | None = None, salt: str | None = None, visibility: str = "after_due_date") -> dict:
    """Gradescope's results.json for one student: a test per prediction question of each lab the
    ledger holds (its points and, in its output, the committed answer and the engine's with the
    why), shown `visibility` (after the due date, or when the instructor publishes: the answers
    never reach a classmate before the deadline); and the total (late penalties and marks
    included, which is why it is given beside the tests). The grade book's points and labels as
    they are; its identity flags go to a hidden test, for the instructor."""
    if visibility not in VISIBILITY:
        raise ValueError(f"visibility must be one of {', '.join(VISIBILITY)}, got {visibility!r}")
    doc = doc or {}
    labs = book.labs[book.labs["student"].eq(student) & book.labs["submitted"].astype(bool)]
    handed = list(labs["lab"])
    items = book.items[book.items["student"].eq(student) & book.items["lab"].isin(handed)]
    variants = {lab: student_variant_of(lab, student, doc, salt) for lab in handed}
    tests = []
    for r in items.itertuples():
        if r.kind == "marked":
            continue
        answer = committed_answer(doc, r.lab, r.item, r.answer, variants.get(r.lab))
        why = r.why if isinstance(r.why, str) and r.why else "not computed"
        tests.append({
            "name": f"{lab_title(r.lab)} · {r.item}", "score": float(r.earned), "max_score": float(r.points),
            "status": "passed" if r.earned >= r.points and r.points > 0 else "failed",
            "output": f"Your committed answer: {answer}. The engine's answer: {why}." + (f" {r.note}" if isinstance(r.note, str) and r.note else "")
            + (f" Integrity: {r.label}." if isinstance(r.label, str) and r.label else ""),
            "visibility": visibility,
        })
    flags = sorted({f for text in labs["flags"] for f in str(text).split("; ") if f})
    if flags:
        tests.append({"name": "For the instructor: the grader's flags", "score": 0.0, "max_score": 0.0, "status": "passed",
                      "output": "; ".join(flags), "visibility": "hidden"})
    late = [f for text in labs["flags"] for f in str(text).split("; ") if f.startswith("late by")]
    when = "after the due date" if visibility == "after_due_date" else "when your instructor publishes the grades"
    received = ", ".join(lab_title(lab) for lab in handed) or "none"
    return {
        "score": float(round(labs["earned"].sum(), 4)),
        "output": f"Ledger of {student!r} received; labs graded: {received}. Graded by the Parallelism Labs engine from your ledger: "
        "every outcome recomputed, every question judged by your first committed answer. "
        f"Each question's result, with the engine's answer, is shown {when}."
        + (" Free-text answers are marked by hand." if (items["kind"] == "marked").any() else "") + (" " + "; ".join(late) if late else ""),
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "tests": tests,
    }

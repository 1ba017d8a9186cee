"""The grader behind `python -m labs.grade` (labs/grade.py, the command line).

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
carries its trust (labs.grading.integrity, the one rule the grade book and exports apply too):
an answer edited after the server signed it, a signature missing from a signed ledger or a ledger
rolled back to an older signed version earns no credit and is flagged; an unsigned ledger is
flagged, and earns no credit with --require-signatures. Nothing in a ledger is executed; the only
file written is --csv. Exit status 0, or with --strict 1 when any file was unreadable or any row is
flagged or in error; 2 for a roster or option that cannot be used.
"""

from __future__ import annotations

import array
import math
import os
import re
import stat
import unicodedata
from collections import defaultdict
from pathlib import Path

import msgspec
import numpy as np
import pandas as pd

try:
    from pandas.api.internals import create_dataframe_from_blocks
except ImportError:  # pandas before 3.0
    create_dataframe_from_blocks = None

from labs.core import scenarios
from labs.core.scenarios import OUTCOMES
from labs.core import ENGINE_VERSION
from labs.core.state import SCHEMA_VERSION, Roster, normalise_student, parse_document_digest, student_hash
from labs.core.variants import class_salt
from labs import csvsafe
from labs.grading import integrity

from labs.grading.specs import BASE_COLUMNS, MAX_BYTES, MAX_WORK_PER_FILE, SPECS, TOLERANCE, StepSpec, WorkLimitReached, _text  # noqa: F401


def read_ledger(path: Path) -> dict:
    """A validated ledger from a plain file; refuses symlinks, FIFOs and devices, and files
    larger than any ledger, before reading them."""
    return read_ledger_digest(path)[0]


def read_ledger_digest(path: Path) -> tuple[dict, bytes]:
    """read_ledger(path) and the digest of the bytes read (state.parse_document_digest)."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise ValueError("a symlink; not followed")
    if not stat.S_ISREG(info.st_mode):
        raise ValueError("not a regular file")
    if info.st_size == 0:
        raise ValueError("empty file")
    if info.st_size > MAX_BYTES:
        raise ValueError(f"{info.st_size:,} bytes is larger than any ledger ({MAX_BYTES:,} max)")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        if not stat.S_ISREG(opened.st_mode):
            raise ValueError("not a regular file")
        # the bytes read(MAX_BYTES + 1) returns, without its 1 MB buffer a file (~0.3 ms of page faults for a 60 KB ledger)
        raw = handle.read(min(opened.st_size, MAX_BYTES) + 1)
        if len(raw) == min(opened.st_size, MAX_BYTES) + 1:  # grown since: read on, up to the same limit
            raw += handle.read(MAX_BYTES + 1 - len(raw))
    return parse_document_digest(raw)


STDERR_LINES_PER_FILE = 5  # rows not ok printed per file; the rest are counted (all are in --csv)
MAX_DEPTH = 16  # folders below a class folder (a zip's own folders included); deeper ones are named, not entered


def collect(paths: list[str], skipped: list[tuple[str, str]] | None = None) -> list[Path]:
    """Ledger files named or found below the folders named, walked without recursion. A folder
    named here is entered even when it is a link (the instructor chose it); below it, no link is
    followed (a linked file is named by read_ledger, a linked folder here), nor a folder deeper
    than MAX_DEPTH. Every folder not entered is added to `skipped` with why."""
    skip = skipped.append if skipped is not None else (lambda item: None)
    files = []
    for root in map(Path, paths):
        if not root.is_dir():
            files.append(root)
            continue
        stack = [(root, 0)]
        while stack:
            folder, depth = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError as err:
                skip((str(folder), f"folder not read ({err.strerror or type(err).__name__}); any ledgers in it were not graded"))
                continue
            below = []
            for entry in entries:
                path = Path(entry.path)
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if entry.is_symlink() and not entry.name.endswith(".json") and os.path.isdir(path):
                    skip((str(path), "a linked folder; not followed"))
                elif is_dir and depth >= MAX_DEPTH:
                    skip((str(path), f"a folder nested more than {MAX_DEPTH} deep; not entered"))
                elif is_dir:
                    below.append((path, depth + 1))
                elif entry.name.endswith(".json"):
                    files.append(path)
            stack.extend(reversed(below))  # depth first, in name order
    return files


# ---- grading ------------------------------------------------------------------------------
def _agrees(stored, fresh) -> bool:
    if isinstance(fresh, float) and isinstance(stored, (int, float)) and not isinstance(stored, bool):
        return math.isclose(stored, fresh, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    return type(stored) is type(fresh) and stored == fresh if isinstance(fresh, bool) else stored == fresh


_TOKEN = msgspec.json.Encoder(order="sorted")  # a cache key from parsed JSON values (two a step; json.dumps took 5x as long)


# Outcomes remembered at most (each ~1-2 KB): a class with variants repeats a (seed, inputs) pair only
# within one ledger, so 20,000 kept were ~30 MB of the grader's peak and served no other student.
OUTCOMES_KEPT = 2048


class _Engine:
    """The outcome functions, with results remembered by their exact inputs (a class's ledgers
    repeat the same slider settings many times); `salt`: the class salt the variants were drawn
    with (labs.variants; default LABS_CLASS_SALT)."""

    def __init__(self, limit: int = 20_000, salt: str | None = None, key: bytes | None | str = "env", require_signatures: bool = False):
        self.cache: dict[str, dict] = {}
        self.limit = limit
        self.salt = class_salt(salt)  # LABS_CLASS_SALT read once, not once a variant
        self.key = integrity.key_from_env() if key == "env" else key  # the class's signing key: trust is checked with it
        self.signatures = integrity.policy(self.key, require_signatures)
        self.spent = 0  # timeline ops priced for the current file (grade_document resets it)
        self.checked: dict[str, str | None] = {}  # input checks by exact inputs: None, or why they were refused

    def check(self, key: tuple[str, str], spec: StepSpec, inputs: dict) -> None:
        """spec.check(inputs), remembered by exact inputs (some checks price the setting with the
        engine, and a class repeats its slider settings)."""
        token = _TOKEN.encode([key, inputs])
        if token not in self.checked:
            if len(self.checked) >= self.limit:
                self.checked.clear()
            try:
                spec.check(inputs)
                self.checked[token] = None
            except ValueError as err:
                self.checked[token] = str(err)
        if self.checked[token] is not None:
            raise ValueError(self.checked[token])

    def __call__(self, key: tuple[str, str], inputs: dict, predictions: dict, variant=None) -> dict:
        token = _TOKEN.encode([key, inputs, predictions, variant.seed if variant else None, variant.salt if variant else None])
        if token not in self.cache:
            price = SPECS[key].work(inputs) if key in SPECS and SPECS[key].work else 0  # priced before anything is built
            if self.spent + price > MAX_WORK_PER_FILE:
                raise WorkLimitReached(f"judging this step would take the file to {self.spent + price:,} timeline ops (p x m x v per judging); "
                                       f"the grader spends at most {MAX_WORK_PER_FILE:,} on one file, the largest the lab's sliders make, twice")
            self.spent += price
            if len(self.cache) >= min(self.limit, OUTCOMES_KEPT):
                self.cache.clear()
            if variant is None:
                self.cache[token] = OUTCOMES[key](dict(inputs), dict(predictions))
            else:
                self.cache[token] = OUTCOMES[key](dict(inputs), dict(predictions), variant=variant)
        return self.cache[token]

    def variant(self, doc: dict, lab: str):
        """(the student's variant regenerated from their id and the class salt, the fields where
        the ledger's record of it differs); (None, []) for a ledger without a variant of `lab`,
        graded as before variants."""
        from labs.core.scenarios import regenerate, registry

        recorded = doc.get("variants", {}).get(lab)
        if recorded is None or lab not in registry():
            return None, []
        fresh, mismatches = regenerate(lab, doc["student"], recorded, self.salt)  # at the edition the record names
        if mismatches and engines_written(doc) - {ENGINE_VERSION, None}:
            # A key or tolerance the lab computed with another engine is recomputed by this one (as
            # every outcome is, and version_skew notes on the row): not a sign of an edit.
            mismatches = [m for m in mismatches if not m.endswith(ENGINE_NUMBERS)]
        return fresh, mismatches


ENGINE_NUMBERS = (".answer", ".tolerance")  # the fields of a recorded variant that the engine computes


def engines_written(doc: dict) -> set:
    """The engine versions a ledger's document and steps say wrote them (None where unsaid)."""
    return {doc.get("engine_version")} | {entry.get("engine_version") for steps in doc["labs"].values() for entry in steps.values()}


def _variant_status(mismatches: list[str]) -> str:
    why = " (another class salt: grade with the salt the lab ran with, --salt or LABS_CLASS_SALT)" if "salt" in mismatches else ""
    return f"recorded variant differs from the one regenerated for this id and salt: {', '.join(mismatches[:8])}{why}"


def _error(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}"
    return " ".join(text.split())[:300]


def grade_step(doc: dict, lab: str, step: str, entry: dict, source: str, engine: _Engine) -> dict:
    row = {"file": source, "student": doc["student"], "lab": lab, "step": step, "saved": entry["saved"], "tampered": False, "changes": 0, "skipped": 0}
    spec = SPECS.get((lab, step))
    if spec is None or (lab, step) not in OUTCOMES:
        row["status"] = "not graded (no engine check for this step)"
        return row
    inputs, stored_predictions = entry["inputs"], entry["predictions"]
    try:
        engine.check((lab, step), spec, inputs)
        for q in stored_predictions:
            if q not in spec.questions:
                raise ValueError(f"unknown prediction {q[:40]!r}")
            if stored_predictions[q] is not None:
                _text(f"prediction {q}", stored_predictions[q])
    except ValueError as err:
        row["status"] = f"invalid inputs: {_error(err)[len('ValueError: '):]}"
        return row
    row.update({f"input.{k}": v for k, v in inputs.items()})

    commits = doc.get("predictions", {}).get(lab, {})
    answers, from_commit = {}, []
    for q in spec.questions:
        record = commits.get(q)
        if record is not None:
            answers[q] = record["answer"]
            row["changes"] += len(record["changes"])
            row[f"changes.{q}"] = len(record["changes"])  # per question, for the class dashboard
            from_commit.append(q)
        else:
            answers[q] = stored_predictions.get(q)
            row[f"changes.{q}"] = 0
    row["answers_from"] = "commit" if len(from_commit) == len(spec.questions) else ("step" if not from_commit else "commit+step")

    try:
        variant, variant_mismatches = engine.variant(doc, lab)
        fresh = engine((lab, step), inputs, stored_predictions, variant)  # what the lab showed: the tamper check
        graded = fresh if all(answers[q] == stored_predictions.get(q) for q in spec.questions) else engine((lab, step), inputs, {k: v for k, v in answers.items() if v is not None}, variant)
    except WorkLimitReached as err:
        row["status"] = f"work limit: {err}"
        return row
    except Exception as err:  # noqa: BLE001 - one step's failure must not stop the class
        row["status"] = f"engine error: {_error(err)}"
        return row
    row.update({k: v for k, v in fresh.items() if k not in spec.questions.values()})
    row["right"] = row["judged"] = 0
    for q, outcome in spec.questions.items():
        row[f"answer.{q}"] = "skipped" if answers[q] is None else answers[q]
        row.update(_option_columns(variant, q, answers[q]))
        if answers[q] is None:
            row[outcome] = None
            row["skipped"] += 1
        else:
            row[outcome] = bool(graded.get(outcome))
            row["judged"] += 1
            row["right"] += row[outcome]
    mismatched = sorted(k for k, v in entry["outcomes"].items() if k in fresh and not _agrees(v, fresh[k]))
    row["variant"] = variant.seed if variant else ""
    row["tampered"] = bool(mismatched) or bool(variant_mismatches)
    row["status"] = "ok" if not mismatched else f"stored outcome disagrees with the engine: {', '.join(mismatched)}"
    if variant_mismatches:
        row["status"] = _variant_status(variant_mismatches) if not mismatched else f"{row['status']}; {_variant_status(variant_mismatches)}"
    return row


def _option_columns(variant, question: str, letter) -> dict:
    """option.<q> and misconception.<q> for a multiple-choice question of a student's variant
    (letters differ per student: the option they name); none for a numeric question or a ledger
    without a variant. The option is its id in the scenario module, with the lab's edition when it
    is not the first (editions may give an id another meaning), so the dashboard never pools two
    editions' different options."""
    if variant is None or question not in variant.questions or variant.questions[question].numeric:
        return {}
    asked = variant.questions[question]
    oid = asked.option_id(letter)
    return {f"option.{question}": oid if oid is None or variant.version == 1 else f"{oid} (edition {variant.version})",
            f"misconception.{question}": asked.misconception(letter)}


def grade_commits(doc: dict, lab: str, step: str, source: str, engine: _Engine | None = None) -> dict:
    """A step the student never submitted whose questions they committed: each committed answer
    judged against the engine's answer (labs.grading.questions); there are no inputs to check."""
    from labs.grading.questions import engine_answer

    spec, commits = SPECS[(lab, step)], doc.get("predictions", {}).get(lab, {})
    variant, variant_mismatches = (engine or _Engine()).variant(doc, lab)
    row = {"file": source, "student": doc["student"], "lab": lab, "step": step, "saved": None, "status": "ok", "tampered": False,
           "changes": 0, "skipped": 0, "right": 0, "judged": 0, "answers_from": "commit (not submitted)"}
    for q, outcome in spec.questions.items():
        record = commits.get(q)
        answer = None if record is None else record["answer"]
        row["changes"] += 0 if record is None else len(record["changes"])
        row[f"changes.{q}"] = 0 if record is None else len(record["changes"])
        row[f"answer.{q}"] = "skipped" if answer is None else answer
        row.update(_option_columns(variant, q, answer))
        if answer is None:
            row[outcome] = None
            row["skipped"] += 1
        else:
            if variant is not None and q in variant.questions:
                row[outcome] = variant.questions[q].judge(answer)
            else:
                right = engine_answer(lab, q)
                row[outcome] = right is not None and answer == right
            row["judged"] += 1
            row["right"] += row[outcome]
    row["variant"] = variant.seed if variant else ""
    if variant_mismatches:
        row["tampered"], row["status"] = True, _variant_status(variant_mismatches)
    return row


def _trust(row: dict, ledger: integrity.Ledger) -> None:
    """Trust columns of a graded row, by integrity's rule: trust.<q> per question, the row's
    worst label and its flags; `right` counts only the answers that keep their credit."""
    spec = SPECS.get((row["lab"], row["step"]))
    row["signatures"] = ledger.rule
    if spec is None or "judged" not in row:
        return
    saved = row["step"] if row["step"] in ledger.doc.get("labs", {}).get(row["lab"], {}) else None
    verdicts = [ledger.item(row["lab"], q, saved) for q in spec.questions]
    row.update({f"trust.{q}": t.label for q, t in zip(spec.questions, verdicts)})
    row["right"] = sum(bool(row.get(o)) and t.credit for o, t in zip(spec.questions.values(), verdicts))
    row["trust"] = integrity.trust([t.label for t in verdicts if t.label], ledger.rule).label
    row["trust_flag"] = "; ".join(dict.fromkeys(t.flag for t in verdicts if t.flag))


def grade_document(doc: dict, source: str, engine: _Engine | None = None, digest: bytes | None = None) -> list[dict]:
    """Every row of one ledger; `digest`: its bytes' (read_ledger_digest), by which this process
    keeps its signatures' check for the grade book (integrity.Ledger)."""
    engine = engine or _Engine()
    engine.spent = 0
    rows, unchecked = [], defaultdict(list)
    for lab, steps in doc["labs"].items():
        for step, entry in steps.items():
            if (lab, step) not in SPECS or (lab, step) not in OUTCOMES:
                unchecked[lab].append(step)  # counted, not graded one by one: a ledger may hold 100,000 of them
                continue
            try:
                rows.append(grade_step(doc, lab, step, entry, source, engine))
            except Exception as err:  # noqa: BLE001
                rows.append({"file": source, "student": doc["student"], "lab": lab, "step": step, "status": f"grader error: {_error(err)}"})
    for lab, steps in unchecked.items():
        listed = ", ".join(repr(s[:40]) for s in steps[:3]) + (" ..." if len(steps) > 3 else "")
        rows.append({"file": source, "student": doc["student"], "lab": lab, "step": steps[0] if len(steps) == 1 else f"({len(steps)} steps)",
                     "saved": doc["labs"][lab][steps[0]]["saved"] if len(steps) == 1 else None, "tampered": False, "changes": 0, "skipped": 0,
                     "status": "not graded (no engine check for this step)" if len(steps) == 1 else f"not graded (no engine check for its {len(steps)} steps: {listed})"})
    # every committed prediction is graded, submitted or not (a step never submitted has none of its inputs)
    for (lab, step), spec in SPECS.items():
        commits = doc.get("predictions", {}).get(lab, {})
        if step not in doc["labs"].get(lab, {}) and any(q in commits for q in spec.questions):
            try:
                rows.append(grade_commits(doc, lab, step, source, engine))
            except Exception as err:  # noqa: BLE001
                rows.append({"file": source, "student": doc["student"], "lab": lab, "step": step, "status": f"grader error: {_error(err)}"})
    skew = version_skew(doc)
    ledger = integrity.Ledger(doc, engine.key, engine.signatures, digest)
    for row in rows:
        row["version"] = skew
        _trust(row, ledger)
    return rows


def version_skew(doc: dict) -> str:
    """A note when the ledger was written by another schema or engine version than the one that
    grades it (audit G10): outcomes are recomputed by this engine either way, so a number the
    student saw may differ from the one graded."""
    notes = []
    if type(doc.get("schema_version", SCHEMA_VERSION)) is not int:  # JSON 1.0 passes the schema's const 1
        notes.append(f"schema_version {doc['schema_version']!r} is not the integer {SCHEMA_VERSION}")
    other = sorted(str(v)[:20] for v in engines_written(doc) - {ENGINE_VERSION, None})
    if other:
        notes.append(f"written by engine {', '.join(other)}, graded by {ENGINE_VERSION}")
    return "; ".join(notes)


_HASH_IN_NAME = re.compile(r"-([0-9a-f]{10})(?![0-9a-f])")


def look_alike_key(student: str) -> str:
    """One key for ids a reader takes for the same name: compatibility forms (fullwidth Ａ,
    mathematical bold 𝐚) and case folded, spaces collapsed."""
    return " ".join(unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", student).casefold()).split())


def identity_flags(students: list[str], files: list[str], roster: Roster | None) -> list[str]:
    """For each (student, file) of a class's rows: an id not normalised or invalid, a file named
    for another id, the same id in other files, look-alike ids, an id not on the roster."""
    files_of, ids_like = defaultdict(set), defaultdict(set)
    for student, file in zip(students, files):
        files_of[student].add(file)
    for student in files_of:
        ids_like[look_alike_key(student)].add(student)
    flags_of = {pair: _identity_of(*pair, files_of, ids_like, roster) for pair in dict.fromkeys(zip(students, files))}  # once per file, not per row
    return [flags_of[pair] for pair in zip(students, files)]


def _identity_of(student: str, file: str, files_of: dict, ids_like: dict, roster: Roster | None) -> str:
    flags = []
    try:
        canonical = normalise_student(student)
        if canonical != student:
            flags.append("id not normalised")
    except ValueError as err:
        canonical = None
        flags.append(f"invalid id ({err})")
    hashes = _HASH_IN_NAME.findall(Path(file).name)
    if canonical is not None and hashes and student_hash(canonical) not in hashes:
        flags.append("file named for another id")
    others = sorted(files_of[student] - {file})
    if others:
        flags.append(f"same id in {len(others)} other file(s): {', '.join(Path(o).name for o in others[:3])}")
    alike = sorted(ids_like[look_alike_key(student)] - {student})
    if alike:
        flags.append(f"looks like {len(alike)} other id(s): {', '.join(repr(a[:40]) for a in alike[:3])}")
    if roster is not None and (canonical is None or canonical not in roster):
        flags.append("not on the roster")
    return "; ".join(flags)


class Columns:
    """A class's graded rows gathered a column at a time, each row's dict let go once read. A
    column keeps only the rows that name it (a row number and a value each): a class's table has
    ~530 columns of which a row fills ~40, so lists of a cell per row for every column (~80 MB of
    pointers to NaN for 1,000 students) are never made. The table is built from them a column at
    a time, NaN where a row has no such key, as a DataFrame built from the rows' dicts has."""

    def __init__(self):
        self.columns: dict[str, tuple[array.array, list]] = {}
        self.rows = 0

    def add(self, row: dict) -> None:
        n = self.rows
        for key, value in row.items():
            column = self.columns.get(key)
            if column is None:
                column = self.columns[key] = (array.array("q"), [])
            column[0].append(n)
            column[1].append(value)
        self.rows = n + 1

    def table(self, roster: Roster | None) -> pd.DataFrame:
        """The rows as one table with their identity flags, BASE_COLUMNS first, the others in the
        order the rows first named them."""
        if not self.rows:
            return pd.DataFrame()
        n = self.rows
        students, files = (_spread(*self.columns.get(c, ((), [])), n) for c in ("student", "file"))
        self.columns["identity"] = (array.array("q", range(n)), identity_flags(students, files, roster))
        order = BASE_COLUMNS + [c for c in self.columns if c not in BASE_COLUMNS]
        columns, self.columns, self.rows = self.columns, {}, 0
        return _frame([(name, *columns.pop(name, (array.array("q"), []))) for name in order], n)


def _spread(rows, values: list, n: int) -> list:
    """A sparse column as a value per row, NaN where a row has none."""
    if len(values) == n:
        return values
    full = [math.nan] * n
    for row, value in zip(rows, values):
        full[row] = value
    return full


def _frame(columns: list[tuple[str, array.array, list]], n: int) -> pd.DataFrame:
    """The table of sparse columns (name, row numbers, values), NaN where a row has none: the same
    frame, dtypes included, as one built from lists of a value per row. A column's dtype is the one
    pandas infers from its values and a NaN (inference reads the kinds of value, not their count),
    and the columns of one NumPy dtype are written straight into one block: a frame built from whole
    columns held them all twice (the columns, then the blocks they were copied into), ~150 MB for
    1,000 students. Before pandas 3.0 (no create_dataframe_from_blocks) it is built from whole columns."""
    if create_dataframe_from_blocks is None:
        return pd.DataFrame({name: pd.Series(_spread(rows, values, n)) for name, rows, values in columns})
    inferred = []  # (array of the column's values and a trailing NaN if it has gaps, their rows or None)
    for _, rows, values in columns:
        full = len(values) == n
        series = pd.Series(values if full else [*values, math.nan])
        array_of = series.to_numpy() if isinstance(series.dtype, np.dtype) else series.array
        inferred.append((array_of, None if full else np.frombuffer(rows, dtype=np.int64)))
    blocks, places = [], defaultdict(list)
    for place, (values, rows) in enumerate(inferred):
        if isinstance(values.dtype, np.dtype):
            places[values.dtype].append(place)
        else:  # an extension dtype (pandas' str): a block of its own
            indexer = np.arange(n) if rows is None else np.full(n, -1)
            if rows is not None:
                indexer[rows] = np.arange(len(rows))
            blocks.append((values.take(indexer, allow_fill=True), np.array([place])))
    for dtype, at in places.items():
        block = np.empty((len(at), n), dtype=dtype)
        for i, place in enumerate(at):
            values, rows = inferred[place]
            inferred[place] = None
            if rows is None:
                block[i] = values
            else:
                block[i] = math.nan
                block[i, rows] = values[:-1]
        blocks.append((block, np.array(at)))
    return create_dataframe_from_blocks(blocks, index=pd.RangeIndex(n), columns=pd.Index([name for name, _, _ in columns]))


def grade(paths: list[str], roster: Roster | None = None, salt: str | None = None, key: bytes | None | str = "env",
          require_signatures: bool = False, forget_computed: bool = False) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """The table of every step of every ledger and the files not graded. `key`: the class's
    signing key ("env": LABS_SIGNING_KEY; None: trust not checked). `forget_computed`: drop the
    engine's and the labs' caches once every ledger is graded, before the table is built (a
    process that asks the engine nothing more: `python -m labs.grade` without a grade book)."""
    rows, problems = Columns(), []
    engine = _Engine(salt=salt, key=key, require_signatures=require_signatures)
    for path in collect(paths, problems):
        if ".corrupt-" in path.name:
            problems.append((str(path), "a copy the lab moved aside as unreadable; not graded"))
            continue
        try:
            doc, digest = read_ledger_digest(path)
        except Exception as err:  # noqa: BLE001 - one file must not stop the class
            problems.append((str(path), (str(err).splitlines() or [type(err).__name__])[0][:300]))
            continue
        try:
            graded = grade_document(doc, str(path), engine, digest)
        except Exception as err:  # noqa: BLE001
            problems.append((str(path), f"grader error: {_error(err)}"))
            continue
        if not graded:
            problems.append((str(path), "no step saved and no prediction committed: nothing to grade"))
        for row in graded:
            rows.add(row)
    if forget_computed:
        scenarios.forget_computed()
    return rows.table(roster), problems


# ---- reporting ----------------------------------------------------------------------------
def _flagged(table: pd.DataFrame) -> pd.Series:
    """Rows left out of the summary's averages: tampered, an identity flag or a trust flag
    (integrity). A changed prediction is not one: the first, committed answer is the one graded."""
    trust_flag = table["trust_flag"] if "trust_flag" in table else pd.Series("", index=table.index)
    return table["tampered"].fillna(False).astype(bool) | table["identity"].fillna("").ne("") | trust_flag.fillna("").ne("")


def _needs_attention(table: pd.DataFrame) -> pd.Series:
    """Rows --strict fails on: tampered, an identity or trust flag, or an input or engine error (a
    changed prediction is graded by its commit, and a step without an engine check is only listed)."""
    graded = ~table["status"].fillna("").str.startswith("not graded")
    return _flagged(table) | (graded & ~table["status"].eq("ok"))


def _outcome_columns(table: pd.DataFrame) -> list[str]:
    return [c for c in dict.fromkeys(o for spec in SPECS.values() for o in spec.questions.values()) if c in table]


def scores(table: pd.DataFrame) -> pd.DataFrame:
    """One row per student and file: each lab's right answers out of the judged ones (skipped
    questions are counted apart, never as wrong; "error" when no step of the lab could be
    graded), and the flags."""
    if table.empty:
        return pd.DataFrame()
    t = table.assign(
        trust=table["trust"] if "trust" in table else "",
        right=table["right"].fillna(0).astype(int), judged=table["judged"].fillna(0).astype(int), skipped=table["skipped"].fillna(0).astype(int),
        errors=(~table["status"].eq("ok") & ~table["status"].fillna("").str.startswith(("stored", "not graded"))).astype(int),
        name=table["file"].map({f: Path(f).name for f in table["file"].unique()}),  # a Path per file, not per row
    )
    per_lab = t.groupby(["student", "name", "lab"], sort=True)[["right", "judged", "skipped", "errors"]].sum()
    text = [
        ("error" if r.errors and not r.judged else f"{r.right}/{r.judged}") + (f" ({r.skipped} skipped)" if r.skipped else "")
        for r in per_lab.itertuples()
    ]
    grid = pd.Series(text, index=per_lab.index).unstack("lab").fillna("")
    keys = [t["student"], t["name"]]
    pairs = list(zip(t["student"].tolist(), t["name"].tolist()))  # each row's (student, name) group, for _distinct_joined
    tampered = t["tampered"].fillna(False).astype(bool).groupby(keys, sort=True).any()  # the file's groups, sorted as agg sorts them
    flags = pd.DataFrame({
        "tampered": ["yes" if v else "" for v in tampered.tolist()],
        "changed": [int(v) for v in t["changes"].fillna(0).groupby(keys, sort=True).sum().tolist()],
        **{column: _distinct_joined(pairs, t[column], tampered.index) for column in ("identity", "trust", "version")},
    }, index=tampered.index)
    out = grid.join(flags).reset_index().rename(columns={"name": "file"})
    return out


def _distinct_joined(pairs: list[tuple], column: pd.Series, groups: pd.MultiIndex) -> list[str]:
    """Per (student, name) group (`pairs`: each row's), its distinct non-empty values of `column`,
    sorted and joined by "; " (in one pass over the rows: a lambda per group was ~1,000 calls a column)."""
    found = defaultdict(set)  # a column no row fills reads float64: filled as objects (pandas 4 refuses "" in a float column)
    for key, value in zip(pairs, column.astype(object).fillna("").tolist()):
        if value != "":
            found[key].add(value)
    return ["; ".join(sorted(found.get(key, ()))) for key in groups]


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per lab and step: students, rows left out for a flag, and the share of right predictions
    (per question, skipped ones not counted) over the rows without a flag."""
    if table.empty:
        return pd.DataFrame()
    flagged = _flagged(table)
    outcome_cols = _outcome_columns(table)
    clean = ~flagged & table["status"].eq("ok")
    keys = {"lab": table["lab"], "step": table["step"]}
    mfu = pd.to_numeric(table["mfu"], errors="coerce").where(clean) if "mfu" in table else pd.Series(float("nan"), index=table.index)
    grouped = pd.DataFrame({**keys, "student": table["student"], "flagged": flagged.astype(int), "mfu": mfu}).groupby(["lab", "step"], sort=True).agg(
        students=("student", "nunique"), flagged=("flagged", "sum"), mfu=("mfu", "median"))
    out = grouped.reset_index()[["lab", "step", "students", "flagged"]].rename(columns={"flagged": "flagged (left out)"}).astype({"flagged (left out)": int})
    shares = {}
    for start in range(0, len(outcome_cols), OUTCOMES_AT_ONCE):
        # right answers as 1/0 over clean rows, NaN where skipped, flagged or not asked; a few questions at a time
        judged = {col: _as_one_or_zero(table[col], clean) for col in outcome_cols[start:start + OUTCOMES_AT_ONCE]}
        stats = pd.DataFrame({**keys, **judged}).groupby(["lab", "step"], sort=True).agg(["mean", "count"]).reindex(grouped.index)
        for col in judged:
            shares[f"right {col.removesuffix('_correct')}"] = [f"{v:.0%} of {k}" if k else "" for v, k in zip(stats[(col, "mean")], stats[(col, "count")])]
    out = pd.concat([out, pd.DataFrame(shares, index=out.index)], axis=1)
    out["median mfu"] = [f"{v:.1%}" if pd.notna(v) else "" for v in grouped["mfu"]]
    return out.loc[:, [c for c in out.columns if c in ("lab", "step", "students", "flagged (left out)") or out[c].ne("").any()]]


def _as_one_or_zero(column: pd.Series, clean: pd.Series) -> pd.Series:
    """1.0 or 0.0 (its truth) for each answered question of a clean row, NaN elsewhere."""
    keep = (clean & column.notna()).to_numpy()
    out = np.full(len(column), np.nan)
    out[keep] = [float(bool(v)) for v in column.to_numpy(dtype=object)[keep].tolist()]
    return pd.Series(out, index=column.index)


OUTCOMES_AT_ONCE = 16  # a class's ~90 questions as 1/0 columns at once were 13 MB at the grader's peak


def shown(value, width: int = 40) -> str:
    """Text safe for a terminal: control characters escaped, long values cut."""
    text = str(value)
    if not (text.isascii() and text.isprintable()):  # printable ASCII has no control character to escape
        text = "".join(c if not unicodedata.category(c).startswith("C") else c.encode("unicode_escape").decode() for c in text)
    return text if len(text) <= width else text[: width - 1] + "…"


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """A table as CSV bytes a spreadsheet reads as text only (labs.csvsafe)."""
    return csvsafe.to_bytes(frame)


def _shown_table(frame: pd.DataFrame) -> str:
    """A table for the terminal: cells and column names escaped (lab and step names are the
    students' text)."""
    return frame.map(shown).rename(columns=lambda c: shown(c, 60)).to_string(index=False)

"""Marks for free-text answers (Lab 09's one-line reasons and its paragraph), given in the class
dashboard's marking view and read by the grader into the totals (`--marks marks.json`).

The file: {"marks": {student: {lab: {field: {"points": 1.5, "comment": "..."}}}}}. A mark is out
of the field's points in the points table; the rubric below gives each field's levels as
fractions of those points. Writes are atomic and locked (the dashboard may save while the
grader reads)."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

from filelock import FileLock

from labs.core.scenarios import lab09

MAX_COMMENT = 1000

# (lab, field) -> [(fraction of the field's points, what earns it)], best first
RUBRICS: dict[tuple[str, str], list[tuple[float, str]]] = {
    **{(lab09.LAB, f): [
        (1.0, f"names what this degree buys and why it sits where it does ({f.removeprefix('reason_').upper()} on its link)"),
        (0.5, "a reason, but not the one the engine's map shows (or no link named)"),
        (0.0, "blank, or contradicts the design"),
    ] for f in lab09.REASONS},
    (lab09.LAB, "paragraph"): [
        (1.0, "every degree and where it sits, what each buys, and the bottleneck collective the engine's map names"),
        (0.75, "the degrees and what they buy; the bottleneck missing or not the map's"),
        (0.5, "the degrees listed without why"),
        (0.0, "blank, or not about the design"),
    ],
}


def load(path: str | Path | None) -> dict:
    """{student: {lab: {field: {"points", "comment"}}}}; {} for no file or a file not yet written."""
    if path is None or not Path(path).exists():
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not a marks file ({err})") from None
    marks = data.get("marks") if isinstance(data, dict) else None
    if not isinstance(marks, dict):
        raise ValueError(f"{path}: a marks file holds {{\"marks\": {{student: {{lab: {{field: {{\"points\": ...}}}}}}}}}}")
    for student, labs in marks.items():
        for lab, fields in (labs or {}).items():
            for field, mark in (fields or {}).items():
                check(mark, f"{path}: {student} {lab} {field}")
    return marks


def check(mark, where: str, most: float | None = None) -> None:
    points = mark.get("points") if isinstance(mark, dict) else None
    if isinstance(points, bool) or not isinstance(points, (int, float)) or not math.isfinite(points) or points < 0 or (most is not None and points > most):
        raise ValueError(f"{where}: points must be a number from 0 to {most if most is not None else 'the field s points'}, got {points!r}")
    if not isinstance(mark.get("comment", ""), str) or len(mark.get("comment", "")) > MAX_COMMENT:
        raise ValueError(f"{where}: comment must be text of at most {MAX_COMMENT} characters")


def save(path: str | Path, student: str, lab: str, field: str, points: float, comment: str = "", most: float | None = None) -> dict:
    """Set one mark (replacing any earlier one) and write the file atomically; returns all marks."""
    mark = {"points": float(points), "comment": comment}
    check(mark, f"{student} {lab} {field}", most)
    path = Path(path)
    with FileLock(str(path) + ".lock", timeout=30):
        marks = load(path)
        marks.setdefault(student, {}).setdefault(lab, {})[field] = mark
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({"marks": marks}, out, indent=1, ensure_ascii=False, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    return marks

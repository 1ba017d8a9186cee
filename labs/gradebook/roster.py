"""The class list the LMS exports join on: a CSV with a `student` column (the ledger's id) and,
optionally, the LMS's own columns: `name` (as the LMS shows it), `sis_login_id` (Canvas joins on
it; the student id when absent), `sis_user_id`, `canvas_id`, `section`, `email` (Moodle's
worksheet joins on it). The `student,code` roster of a shared server works as it is."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from labs.core.state import normalise_student

OPTIONAL = ("name", "sis_login_id", "sis_user_id", "canvas_id", "section", "email")


@dataclass(frozen=True)
class Person:
    student: str
    name: str
    sis_login_id: str
    sis_user_id: str = ""
    canvas_id: str = ""
    section: str = ""
    email: str = ""


def load(path: str | Path) -> list[Person]:
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        names = {f.strip().lower(): f for f in (reader.fieldnames or []) if f}
        if "student" not in names:
            raise ValueError(f"{path}: a roster needs a `student` column; found {list(names)}")
        people, seen = [], set()
        for line, row in enumerate(reader, start=2):
            try:
                student = normalise_student(row[names["student"]] or "")
            except ValueError as err:
                raise ValueError(f"{path} line {line}: student: {err}") from None
            if student in seen:
                raise ValueError(f"{path} line {line}: {student!r} is listed twice")
            seen.add(student)
            extra = {k: (row[names[k]] or "").strip() for k in OPTIONAL if k in names}
            people.append(Person(student, extra.get("name") or student, extra.get("sis_login_id") or student,
                                 extra.get("sis_user_id", ""), extra.get("canvas_id", ""), extra.get("section", ""), extra.get("email", "")))
    return people

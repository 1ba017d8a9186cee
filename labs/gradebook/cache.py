"""Grade a folder once and keep the rows: the class dashboard rereads its folder on every refresh,
and only files whose bytes changed are graded again (by their BLAKE2 digest; a file's size and
modification time say when its bytes need reading at all). Identity flags, which compare files
with each other, are recomputed over all rows each time (cheap). One ClassCache per dashboard
process; `documents` keeps each file's ledger for the grade book and the marking view."""

from __future__ import annotations

import copy
import hashlib
import os
from pathlib import Path

import pandas as pd

from labs import grade


class ClassCache:
    def __init__(self, salt: str | None = None):
        self.salt = salt
        self.engine = grade._Engine(salt=salt)
        self.seen: dict[str, tuple[int, int, bytes]] = {}  # path -> (mtime_ns, size, digest)
        self.graded: dict[tuple[str, bytes], tuple[list[dict], dict | None, str | None]] = {}  # (path, digest) -> rows, document, problem
        self.regraded = 0  # files graded by the last refresh (the rest came from the cache)

    def _digest(self, path: Path) -> bytes | None:
        try:
            info = os.lstat(path)
        except OSError:
            return None
        known = self.seen.get(str(path))
        if known is not None and known[:2] == (info.st_mtime_ns, info.st_size):
            return known[2]
        try:
            with open(path, "rb") as handle:
                digest = hashlib.blake2b(handle.read(grade.MAX_BYTES + 1), digest_size=16).digest()
        except OSError:
            return None
        self.seen[str(path)] = (info.st_mtime_ns, info.st_size, digest)
        return digest

    def _grade_file(self, path: Path) -> tuple[list[dict], dict | None, str | None]:
        if ".corrupt-" in path.name:
            return [], None, "a copy the lab moved aside as unreadable; not graded"
        try:
            doc = grade.read_ledger(path)
        except Exception as err:  # noqa: BLE001 - one file must not stop the class
            return [], None, (str(err).splitlines() or [type(err).__name__])[0][:300]
        try:
            return grade.grade_document(doc, str(path), self.engine), doc, None
        except Exception as err:  # noqa: BLE001
            return [], doc, f"grader error: {grade._error(err)}"

    def refresh(self, folder: str | Path, roster=None) -> tuple[pd.DataFrame, list[tuple[str, str]], dict[str, dict]]:
        """(the grader's table, files not graded with why, file -> ledger), as grade.grade gives them."""
        problems: list[tuple[str, str]] = []
        rows, documents, live = [], {}, set()
        self.regraded = 0
        for path in grade.collect([str(folder)], problems):
            digest = self._digest(path)
            key = (str(path), digest)
            if digest is None or key not in self.graded:
                self.graded[key] = self._grade_file(path)
                self.regraded += 1
            live.add(key)
            file_rows, doc, problem = self.graded[key]
            if problem:
                problems.append((str(path), problem))
            rows.extend(copy.copy(r) for r in file_rows)
            if doc is not None:
                documents[str(path)] = doc
        for key in set(self.graded) - live:  # files gone or changed since
            del self.graded[key]
        grade._identity_flags(rows, roster)
        table = pd.DataFrame(rows)
        if not table.empty:
            table = table.reindex(columns=grade.BASE_COLUMNS + [c for c in table.columns if c not in grade.BASE_COLUMNS])
        return table, problems, documents

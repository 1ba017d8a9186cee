"""Grade a folder once and keep the rows: the class dashboard rereads its folder on every refresh,
and only files whose bytes changed are graded again (by their BLAKE2 digest; a file's size and
modification time say when its bytes need reading at all). Identity flags, which compare files
with each other, are recomputed over all rows each time (cheap). One ClassCache per dashboard
process; `documents` keeps each file's ledger for the grade book and the marking view.

With a `store` folder (the dashboard uses ~/.cache/parallelism_labs) the graded rows also go to
disk, one JSON file per class folder, keyed by the files' digests, the class salt and a digest of
the labs package's own source: a new dashboard process grades only what it has not seen, and a
changed engine grades everything again."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

import pandas as pd

from labs.grading import grader as grade
from labs.core.variants import class_salt


DEFAULT_STORE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "parallelism_labs" / "grades"


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of every .py file of the labs package (any change to the engine or grader changes it)."""
    root = Path(grade.__file__).resolve().parent
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _plain(value):
    """JSON for numpy scalars in a row (a float64 outcome)."""
    return value.item() if hasattr(value, "item") else str(value)


class ClassCache:
    def __init__(self, salt: str | None = None, store: str | Path | None = None):
        self.store = Path(store) if store is not None else None
        self.stored: dict[str, dict] = {}  # store file -> {"path|digest": [rows, document, problem]}
        self.salt = class_salt(salt)  # the salt itself, not None for $LABS_CLASS_SALT: it keys the store file
        self.engine = grade._Engine(salt=self.salt)
        self.seen: dict[str, tuple[int, int, bytes]] = {}  # path -> (mtime_ns, size, digest)
        self.graded: dict[tuple[str, bytes], tuple[list[dict], dict | None, str | None]] = {}  # (path, digest) -> rows, document, problem
        self.parsed: dict[tuple[str, bytes], tuple[dict | None, str | None]] = {}  # (path, digest) -> document, problem: read, not graded
        self.regraded = 0  # files graded by the last refresh (the rest came from the cache)
        self.lock = threading.Lock()  # one refresh at a time (several dashboard sessions share a cache)

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

    def _parse_file(self, path: Path) -> tuple[dict | None, str | None]:
        if ".corrupt-" in path.name:
            return None, "a copy the lab moved aside as unreadable; not graded"
        try:
            return grade.read_ledger(path), None
        except Exception as err:  # noqa: BLE001 - one file must not stop the class
            return None, (str(err).splitlines() or [type(err).__name__])[0][:300]

    def _parsed(self, path: Path, digest: bytes | None) -> tuple[dict | None, str | None]:
        if digest is None:
            return self._parse_file(path)
        key = (str(path), digest)
        if key not in self.parsed:
            self.parsed[key] = self._parse_file(path)
        return self.parsed[key]

    def read(self, folder: str | Path) -> tuple[dict[str, dict], list[tuple[str, str]]]:
        """(file -> ledger, files not read with why): every ledger read and validated, none graded
        (what the dashboard's first chart needs: the committed answers). Kept by digest, so the
        grading that follows (refresh) does not read a file again."""
        with self.lock:
            problems: list[tuple[str, str]] = []
            documents, live = {}, set()
            for path in grade.collect([str(folder)], problems):
                digest = self._digest(path)
                doc, problem = self._parsed(path, digest)
                live.add((str(path), digest))
                if problem:
                    problems.append((str(path), problem))
                elif doc is not None:
                    documents[str(path)] = doc
            for key in set(self.parsed) - live:
                del self.parsed[key]
            return documents, problems

    def _grade_file(self, path: Path, digest: bytes | None = None) -> tuple[list[dict], dict | None, str | None]:
        doc, problem = self._parsed(path, digest)
        if problem:
            return [], None, problem
        try:
            return grade.grade_document(doc, str(path), self.engine), doc, None
        except Exception as err:  # noqa: BLE001
            return [], doc, f"grader error: {grade._error(err)}"

    def refresh(self, folder: str | Path, roster=None) -> tuple[pd.DataFrame, list[tuple[str, str]], dict[str, dict]]:
        """(the grader's table, files not graded with why, file -> ledger), as grade.grade gives them."""
        with self.lock:
            return self._refresh(folder, roster)

    def _store_file(self, folder) -> Path | None:
        if self.store is None:
            return None
        name = hashlib.blake2b(json.dumps([str(Path(folder).resolve()), self.salt, code_digest()]).encode(), digest_size=16).hexdigest()
        return self.store / f"{name}.json"

    def _stored(self, store: Path | None) -> dict:
        if store is None:
            return {}
        if str(store) not in self.stored:
            try:
                self.stored[str(store)] = json.loads(store.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self.stored[str(store)] = {}
        return self.stored[str(store)]

    def _save(self, store: Path, entries: dict) -> None:
        try:
            store.parent.mkdir(parents=True, exist_ok=True)
            handle, temp = tempfile.mkstemp(dir=store.parent, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(entries, out, default=_plain)
            os.replace(temp, store)
        except OSError:
            pass  # a cache that cannot be written only costs time

    def _refresh(self, folder, roster):
        problems: list[tuple[str, str]] = []
        rows, documents, live = grade.Columns(), {}, set()
        self.regraded = 0
        store = self._store_file(folder)
        stored = self._stored(store)
        for path in grade.collect([str(folder)], problems):
            digest = self._digest(path)
            key = (str(path), digest)
            token = f"{path}|{digest.hex() if digest else ''}"
            if digest is not None and key not in self.graded and token in stored:
                self.graded[key] = tuple(stored[token])
            if digest is None or key not in self.graded:
                self.graded[key] = self._grade_file(path, digest)
                self.regraded += 1
            live.add(key)
            file_rows, doc, problem = self.graded[key]
            if problem:
                problems.append((str(path), problem))
            for row in file_rows:
                rows.add(row)
            if doc is not None:
                documents[str(path)] = doc
        for key in set(self.graded) - live:  # files gone or changed since
            del self.graded[key]
        if store is not None and (self.regraded or len(stored) != len(live)):
            entries = {f"{p}|{d.hex()}": list(v) for (p, d), v in self.graded.items() if d is not None}
            self.stored[str(store)] = entries
            self._save(store, entries)
        return rows.table(roster), problems, documents


_SHARED: dict[str | None, ClassCache] = {}


def shared(salt: str | None = None, store: str | Path | None = DEFAULT_STORE) -> ClassCache:
    """The process's cache for a class salt: every dashboard session of one server shares it."""
    return _SHARED.setdefault(salt, ClassCache(salt, store))

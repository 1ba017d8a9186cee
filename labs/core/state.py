"""DesignLedger: one durable JSON document per student, the record a grader reads.

    ledger = DesignLedger()                      # LABS_LEDGER_DIR, else ~/.parallelism_labs
    ledger.save_step("05_parallelism", "act1", inputs={...}, predictions={...}, outcomes={...})
    ledger.save(chapter="v2_05", design={...})   # the seed notebooks' call, kept working
    data = ledger.load(); raw = ledger.export()  # bytes for mo.download

Writes are atomic (temp file in the same folder, fsync, os.replace) under an exclusive lock,
so two notebooks saving at once lose nothing. A file that cannot be parsed or fails the schema
is moved aside with a timestamp and reported (LedgerRecovered), never silently reset.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import jsonschema

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "assets" / "ledger.schema.json"
DEFAULT_DIR = Path.home() / ".parallelism_labs"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class LedgerRecovered(UserWarning):
    """Raised by load() when an unreadable ledger was moved aside; `.moved_to` says where."""

    def __init__(self, message: str, moved_to: Path):
        super().__init__(message)
        self.moved_to = moved_to


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def load_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def _finite(value, path="ledger"):
    """Reject NaN and infinities anywhere in a document: JSON cannot carry them honestly."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{path} is {value!r}; ledgers hold finite numbers only")
    if isinstance(value, dict):
        for k, v in value.items():
            _finite(v, f"{path}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _finite(v, f"{path}[{i}]")


def validate_document(doc: dict) -> None:
    """Raise ValueError naming what is wrong when `doc` is not a valid ledger."""
    try:
        jsonschema.validate(doc, load_schema())
    except jsonschema.ValidationError as err:
        where = ".".join(str(p) for p in err.absolute_path) or "ledger"
        raise ValueError(f"{where}: {err.message}") from None
    _finite(doc)


def parse_document(raw: bytes) -> dict:
    """Bytes to a validated ledger document, or ValueError saying why not. Refuses NaN and
    infinities and nesting too deep to be a ledger; executes nothing."""
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("nested too deeply to be a ledger") from None
    validate_document(doc)
    return doc


def safe_name(student: str) -> str:
    cleaned = _SAFE.sub("_", student).strip("._") or "student"
    return cleaned[:80]


class DesignLedger:
    def __init__(self, student: str | None = None, directory: str | os.PathLike | None = None, engine_version: str | None = None):
        from labs.core import ENGINE_VERSION

        self.student = student or os.environ.get("LABS_STUDENT") or "student"
        self.directory = Path(directory or os.environ.get("LABS_LEDGER_DIR") or DEFAULT_DIR)
        self.engine_version = engine_version or ENGINE_VERSION

    @property
    def path(self) -> Path:
        return self.directory / f"{safe_name(self.student)}.ledger.json"

    # reading -----------------------------------------------------------------------------
    def _empty(self) -> dict:
        now = _now()
        return {"schema_version": SCHEMA_VERSION, "student": self.student, "engine_version": self.engine_version, "created": now, "updated": now, "labs": {}}

    def _read(self) -> dict:
        if not self.path.exists():
            return self._empty()
        try:
            return parse_document(self.path.read_bytes())
        except (ValueError, UnicodeDecodeError) as err:
            moved = self.path.with_name(f"{self.path.stem}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.json")
            os.replace(self.path, moved)
            raise LedgerRecovered(f"ledger {self.path} could not be read ({err}); it was moved to {moved} and a new one will be started", moved) from err

    def load(self) -> dict:
        with self._locked():
            return self._read()

    def export(self) -> bytes:
        """The ledger as UTF-8 JSON bytes, for mo.download."""
        return json.dumps(self.load(), indent=2, sort_keys=True).encode("utf-8")

    # writing -----------------------------------------------------------------------------
    def save_step(self, lab: str, step: str, inputs: dict, predictions: dict | None = None, outcomes: dict | None = None) -> dict:
        """Record one step; saving the same lab and step again replaces it."""
        for name, value in (("lab", lab), ("step", step)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        entry = {"saved": _now(), "engine_version": self.engine_version, "inputs": dict(inputs), "predictions": dict(predictions or {}), "outcomes": dict(outcomes or {})}
        _finite(entry, f"{lab}.{step}")
        json.dumps(entry)  # fail here, before touching the file, if anything is not JSON
        with self._locked():
            try:
                doc = self._read()
            except LedgerRecovered:
                doc = self._empty()
            doc["labs"].setdefault(lab, {})[step] = entry
            doc["updated"] = _now()
            doc["engine_version"] = self.engine_version
            validate_document(doc)
            self._write(doc)
        return entry

    def save(self, chapter: str, design: dict, track: str | None = None, **extra) -> dict:
        """The seed notebooks' call: `save(chapter="v2_05", design={...})`."""
        step = track or "design"
        return self.save_step(chapter, step, inputs=design, predictions=extra.get("predictions"), outcomes=extra.get("outcomes"))

    def _write(self, doc: dict) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".ledger-", suffix=".tmp", dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(json.dumps(doc, indent=2, sort_keys=True).encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
            dir_fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def _locked(self):
        self.directory.mkdir(parents=True, exist_ok=True)
        lock_path = self.directory / f".{safe_name(self.student)}.lock"
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a finite number")

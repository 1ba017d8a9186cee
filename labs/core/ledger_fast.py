"""The part of each ledger the class dashboard's first chart reads (its committed answers), read
before the ledgers are validated; the full read (labs.gradebook.cache, labs.core.state) follows
the chart and decides. `same_part` says whether the validated class holds exactly these parts:
where it does not (a file the full read refuses or reads otherwise), the dashboard draws again
from the validated ledgers.

A ledger's JSON is scanned by msgspec (marimo's own dependency) into the fields the answers need:
`student`, `predictions`, `variants` and each step's `predictions`; the rest of the file (inputs,
outcomes, most of its bytes) is checked for well-formed JSON but never built into Python objects:
about 0.1 ms a ledger, against 1.6 ms to parse and validate it whole. The fields the first chart's
code reads are decoded with their schema's types (the student a text, each commit record as
ledger.schema.json's `commit`, a step's predictions an object, the variants an object of lab ->
record), so that code meets only the shapes it meets after validation: a file whose part has
another shape is left out until the full read, which names why.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import msgspec

_KEYS = ("student", "predictions", "variants")


class _Change(msgspec.Struct, forbid_unknown_fields=True):
    answer: str | None
    at: str


class _Commit(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    answer: str | None
    committed: str
    changes: list[_Change]
    signature: str | msgspec.UnsetType = msgspec.UNSET


class _Step(msgspec.Struct):
    predictions: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


class _Skim(msgspec.Struct):
    student: str | msgspec.UnsetType = msgspec.UNSET
    predictions: dict[str, dict[str, _Commit]] | msgspec.UnsetType = msgspec.UNSET
    variants: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    labs: dict[str, dict[str, _Step]] | msgspec.UnsetType = msgspec.UNSET


_DECODE = msgspec.json.Decoder(_Skim).decode


def _as_dict(skim: _Skim) -> dict:
    out = {key: getattr(skim, key) for key in _KEYS if getattr(skim, key) is not msgspec.UNSET}
    if "predictions" in out:
        out["predictions"] = msgspec.to_builtins(out["predictions"])
    if skim.labs is not msgspec.UNSET:
        out["labs"] = {lab: {step: ({} if entry.predictions is msgspec.UNSET else {"predictions": entry.predictions}) for step, entry in steps.items()}
                       for lab, steps in skim.labs.items()}
    return out


def part(doc: dict) -> dict:
    """The fields of a (validated) ledger that `skim` reads, in the shape it gives them."""
    out = {key: doc[key] for key in _KEYS if key in doc}
    if "labs" in doc:
        out["labs"] = {lab: {step: ({"predictions": entry["predictions"]} if "predictions" in entry else {}) for step, entry in steps.items()}
                       for lab, steps in doc["labs"].items()}
    return out


def skim_file(path: Path, most: int) -> dict | None:
    """`part` of the ledger in a regular file of at most `most` bytes, or None where it is not a
    JSON object of that shape (the full read names why)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(most + 1)
        if len(raw) > most:
            return None
        return _as_dict(_DECODE(raw))
    except (OSError, msgspec.DecodeError, RecursionError):
        return None


def skim(paths: list[Path], most: int) -> dict[str, dict]:
    """file -> `part` of its ledger, for the files that skim_file reads."""
    out = {}
    for path in paths:
        got = skim_file(path, most)
        if got is not None:
            out[str(path)] = got
    return out


def same_part(skimmed: dict[str, dict], documents: dict[str, dict]) -> bool:
    """Whether `skimmed` is `part` of every validated document and of nothing else: the same
    files, each with the same values of the same types (compared as msgspec writes them, keys
    sorted: a commit record is decoded into its schema's fields, in their order, not the file's;
    1 and 1.0 differ)."""
    if skimmed is documents:
        return True
    if skimmed.keys() != documents.keys():
        return False
    encode = msgspec.json.Encoder(order="sorted").encode
    return all(encode(skimmed[file]) == encode(part(doc)) for file, doc in documents.items())

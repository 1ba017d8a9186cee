"""Every CSV the project writes (the grader's --csv, the class dashboard's downloads): cells a
spreadsheet can only read as text.

A spreadsheet runs a cell as a formula when its text starts with = + - or @ (or with a tab, CR
or LF before one), and a reader that splits rows on a bare CR or LF starts a new cell there. So
every cell is quoted, no cell keeps a control character (CR, LF, tab and the rest are written as
their backslash escapes, so each row is one physical line), and a text cell whose first visible
character could start a formula is prefixed with `'`. Text that is not valid UTF-8 (a file name
from a CP437 zip, a lone surrogate from JSON) is written with backslash escapes instead of
stopping the write. Numbers and booleans are written as they are.
"""

from __future__ import annotations

import csv
import unicodedata
from pathlib import Path

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@")


def _utf8(text: str) -> str:
    """Text that encodes as UTF-8: surrogate-escaped bytes (os.fsdecode of a non-UTF-8 name) as
    \\xff, other lone surrogates as \\udxxx."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _visible(text: str) -> str:
    """Control characters (category Cc: tab, CR, LF, ESC...) as their escapes."""
    return "".join(c.encode("unicode_escape").decode("ascii") if unicodedata.category(c) == "Cc" else c for c in text)


def _could_start_a_formula(text: str) -> bool:
    """The first character past spaces and invisible format characters is = + - or @, also in
    its compatibility form (a fullwidth ＝ is =)."""
    folded = unicodedata.normalize("NFKC", text)
    start = next((c for c in folded if not (c.isspace() or unicodedata.category(c) == "Cf")), "")
    return start in FORMULA_STARTS


def cell(value):
    """One cell as it is written: text made visible and neutralised, anything else unchanged."""
    if not isinstance(value, str):
        return value
    text = value if value.isascii() and value.isprintable() else _visible(_utf8(value))
    return "'" + text if _could_start_a_formula(text) else text


def _neutralised(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every text cell as `cell` writes it (numbers and booleans as they are)."""
    safe, done = frame.copy(deep=False), {}  # done: each distinct text once (a class repeats its texts)

    def once(value):
        if not isinstance(value, str):
            return value
        if value not in done:
            done[value] = cell(value)
        return done[value]

    for i in range(frame.shape[1]):
        column = frame.iloc[:, i]
        if not pd.api.types.is_numeric_dtype(column.dtype):
            safe.isetitem(i, column.map(once))
    safe.columns = [cell(str(c)) for c in frame.columns]
    return safe


CSV_FORMAT = {"index": False, "quoting": csv.QUOTE_ALL, "lineterminator": "\r\n"}


def to_bytes(frame: pd.DataFrame) -> bytes:
    """The frame (column names included, no index) as UTF-8 CSV bytes, every cell quoted."""
    return _neutralised(frame).to_csv(**CSV_FORMAT).encode("utf-8")


def write(frame: pd.DataFrame, path: str | Path) -> None:
    """to_bytes(frame) into `path`, written a chunk of rows at a time (a class's whole CSV as one
    text and then as bytes was two copies of it at once)."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        _neutralised(frame).to_csv(handle, **CSV_FORMAT)

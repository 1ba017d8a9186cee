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
import io
import unicodedata
from pathlib import Path

import numpy as np
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


def _text_of(value, done: dict):
    """A cell's text as pandas' to_csv wrote it (missing as empty, numbers by repr), text through
    `cell` once per distinct value (a class repeats its texts)."""
    if isinstance(value, str):
        if value not in done:
            done[value] = cell(value)
        return done[value]
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and value != value):
        return ""
    return value


def _rows(frame: pd.DataFrame):
    """The header and then each row's cells, a column at a time turned to Python values (a wide
    table of pandas' string columns was 0.2 s a row block through DataFrame.to_csv)."""
    done: dict = {}
    yield [cell(str(c)) for c in frame.columns]
    for start in range(0, len(frame), ROWS_AT_ONCE):
        block = frame.iloc[start:start + ROWS_AT_ONCE]
        yield from zip(*(_column(block.iloc[:, i], done) for i in range(block.shape[1])))


ROWS_AT_ONCE = 2048  # a class's table is ~20,000 rows x 500 columns: its cells as Python lists a block at a time


def _column(series: pd.Series, done: dict) -> list:
    kind = series.dtype.kind if isinstance(series.dtype, np.dtype) else "O"  # pandas' nullable kinds hold pd.NA: the mixed path
    if kind in "iub":
        return series.tolist()
    if kind == "f":
        return ["" if v != v else v for v in series.tolist()]
    if isinstance(series.dtype, pd.StringDtype):  # text and missing only: each distinct text once
        codes, texts = pd.factorize(series)
        return np.array([*(_text_of(t, done) for t in texts), ""], dtype=object)[codes].tolist()
    return ["" if v.__class__ is float and v != v else _text_of(v, done) for v in series.tolist()]  # mixed (True and 1 are one key to a hash: kept apart here)


def _write(frame: pd.DataFrame, handle) -> None:
    csv.writer(handle, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerows(_rows(frame))


def to_bytes(frame: pd.DataFrame) -> bytes:
    """The frame (column names included, no index) as UTF-8 CSV bytes, every cell quoted."""
    out = io.StringIO(newline="")
    _write(frame, out)
    return out.getvalue().encode("utf-8")


def write(frame: pd.DataFrame, path: str | Path) -> None:
    """to_bytes(frame) into `path`, written as the rows are made (a class's whole CSV as one text
    and then as bytes was two copies of it at once)."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        _write(frame, handle)

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


def _quoted(text: str) -> str:
    """A field as csv.writer(quoting=QUOTE_ALL) writes it: in quotes, its quotes doubled."""
    return '"' + text.replace('"', '""') + '"'


def _field(value) -> str:
    """A value that is not text, as csv.writer writes it: its str()."""
    return _quoted(str(value))


EMPTY = _quoted("")  # a missing cell
_MISSING_TYPES = (float, type(None), type(pd.NA), type(pd.NaT))  # the missing values _field_of writes as ""


def _column_text(values, read: str, done: dict) -> list[str]:
    """One column's cells of a block as quoted fields (`read`: _values'). Only the filled cells are
    visited (a class's table is ~92% missing cells); text goes through `cell` once per distinct value."""
    if read == "scalars":
        return [_field_of(v, done) for v in values.tolist()]
    kind = values.dtype.kind
    if kind in "iub":
        return [_field(v) for v in values.tolist()]
    n = len(values)
    if kind == "f":
        filled = np.flatnonzero(~np.isnan(values))
        if len(filled) == n:
            return [f'"{v}"' for v in values.tolist()]  # a Python float's str is its repr
        out = [EMPTY] * n
        for i, v in zip(filled.tolist(), values[filled].tolist()):
            out[i] = f'"{v}"'
        return out
    missing = pd.isna(values)
    if read != "text" and not all(issubclass(t, _MISSING_TYPES) for t in set(map(type, values[missing]))):
        return [_field_of(v, done) for v in values.tolist()]  # a missing kind _field_of writes as text (datetime64's NaT): cell by cell
    out = [EMPTY] * n
    filled = np.flatnonzero(~missing)
    for i, v in zip(filled.tolist(), values[filled].tolist()):
        out[i] = _field_of(v, done)
    return out


def _field_of(value, done: dict) -> str:
    """A cell as csv.writer quotes it (missing as empty, text through `cell`), text once per
    distinct value (a class repeats its texts). `done` holds quoted fields only: a str subclass
    (NumPy's str_) equals its str and shares its entry."""
    if isinstance(value, str):
        if value not in done:
            done[value] = _quoted(cell(value))
        return done[value]
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and value != value):
        return EMPTY
    return _field(value)


def _values(series: pd.Series) -> tuple:
    """A column's values to slice a block from, and how to read them: "numpy" (a view of the
    frame's NumPy block), "text" (pandas' string dtype as its NumPy array: text and its missing
    value), or "scalars" (another extension array, datetimes included: its items as Series.tolist
    gives them, which its NumPy form would not)."""
    if isinstance(series.dtype, np.dtype) and series.dtype.kind in "iubfO":
        return series.to_numpy(), "numpy"
    if isinstance(series.dtype, pd.StringDtype):
        return series.to_numpy(), "text"
    return series.array, "scalars"


def _lines(frame: pd.DataFrame):
    """The header line and then the rows' lines, ROWS_AT_ONCE at a time, each cell quoted as
    csv.writer(quoting=QUOTE_ALL) quotes it (the same bytes): a column's values are read once as
    NumPy arrays and only its filled cells are turned to text (csv.writer took ~10 million Python
    values a class, 92% of them empty)."""
    done: dict = {}
    yield ",".join(_quoted(cell(str(c))) for c in frame.columns) + "\r\n"
    columns = [_values(frame.iloc[:, i]) for i in range(frame.shape[1])]
    for start in range(0, len(frame), ROWS_AT_ONCE):
        texts = [_column_text(values[start:start + ROWS_AT_ONCE], read, done) for values, read in columns]
        yield from (",".join(row) + "\r\n" for row in zip(*texts))  # a line at a time: a block's text as one string was 4-16 MB more


ROWS_AT_ONCE = 1024  # a class's table is ~20,000 rows x 500 columns: a block's cells as quoted text, ~14 MB at 1,024 rows (25 MB at 2,048)


def _write(frame: pd.DataFrame, handle) -> None:
    handle.writelines(_lines(frame))


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

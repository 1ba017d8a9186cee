"""The grader's CSV (labs.csvsafe): written from each column's filled cells, the same bytes as
Python's csv.writer(quoting=QUOTE_ALL) writes from every cell made safe (csvsafe.cell)."""

import csv
import decimal
import io
import math

import numpy as np
import pandas as pd

from labs import csvsafe


def _by_csv_module(frame: pd.DataFrame) -> bytes:
    """The oracle: every cell of every row through csv.writer, missing ones as empty text."""
    def text(value):
        if isinstance(value, str):
            return csvsafe.cell(value)
        if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
            return ""
        return value

    out = io.StringIO(newline="")
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow([csvsafe.cell(str(c)) for c in frame.columns])
    columns = [frame.iloc[:, i].tolist() for i in range(frame.shape[1])]
    writer.writerows([text(v) for v in row] for row in zip(*columns))
    return out.getvalue().encode("utf-8")


def test_a_small_table_by_hand():
    frame = pd.DataFrame({
        "name": pd.Series(['say "hi"', None, "=1+1"], dtype="str"),
        "mfu": [0.5, math.nan, 1e16],
        "mixed": [True, 1, math.nan],
        "n": [1, 2, 3],
        "when": pd.to_datetime(["2026-01-02", None, "2026-01-03"]),
    })
    got = csvsafe.to_bytes(frame).decode("utf-8").split("\r\n")
    print(got)
    assert got == ['"name","mfu","mixed","n","when"',
                   '"say ""hi""","0.5","True","1","2026-01-02 00:00:00"',
                   '"","","1","2",""',
                   '"\'=1+1","1e+16","","3","2026-01-03 00:00:00"', ""]


def test_the_same_bytes_as_the_csv_module_on_every_kind_of_cell():
    rng = np.random.default_rng(3)
    n = 5000  # more than one block of ROWS_AT_ONCE rows
    pick = lambda values: [values[i] for i in rng.integers(0, len(values), n)]
    texts = ["ok", "=cmd", "+1", "a\tb", 'q"uote', "\u202eevil", "Ａ=", "x\r\ny", "", " -1", "é"]
    objects = [True, False, 1, 0, 2.5, -0.0, math.inf, math.nan, None, pd.NA, pd.NaT, np.float64(1.5), np.int64(7), "t", "=1",
               [1, "a"], {"k": "v"}, decimal.Decimal("1.10"), np.datetime64("NaT"), 10**30]
    frame = pd.DataFrame({
        "text": pd.Series(pick(texts + [None] * 30), dtype="str"),
        "sparse float": [v if rng.random() < 0.05 else math.nan for v in rng.standard_normal(n)],
        "float": rng.standard_normal(n) * 1e-7,
        "int": rng.integers(-10**12, 10**12, n),
        "bool": rng.random(n) < 0.5,
        "mixed": pd.Series(pick(objects), dtype=object),
        "mostly missing": pd.Series(pick([math.nan] * 50 + ["=x", 3, True]), dtype=object),
        "Int64": pd.array(pick([1, None, -5]), dtype="Int64"),
        "category": pd.Categorical(pick(["a", "=b", None])),
        "dates": pd.to_datetime(pick(["2026-11-28 15:00", None])),
        '=head"er\t': range(n),
    })
    got, want = csvsafe.to_bytes(frame), _by_csv_module(frame)
    print(len(got), "bytes;", got[:200])
    assert got == want
    assert csvsafe.to_bytes(frame.iloc[:0]) == _by_csv_module(frame.iloc[:0])
    assert csvsafe.to_bytes(pd.DataFrame(index=range(3))) == _by_csv_module(pd.DataFrame(index=range(3))) == b"\r\n"


def test_a_str_subclass_beside_its_equal_str_is_quoted_once():
    """NumPy's str_ equals its str and shares its entry among the texts already made: each is
    written quoted once, in either order (one entry held a quoted field, another an unquoted cell)."""
    for cells in (["x", np.str_("x"), "=y", np.str_("=y")], [np.str_("x"), "x", np.str_("=y"), "=y"]):
        frame = pd.DataFrame({"mixed": pd.Series(cells + [None, 1.5], dtype=object)})
        assert csvsafe.to_bytes(frame) == _by_csv_module(frame) == b'"mixed"\r\n"x"\r\n"x"\r\n"\'=y"\r\n"\'=y"\r\n""\r\n"1.5"\r\n'

"""The ledger's bytes on disk (labs.core.state._dump, written by msgspec): json.dumps(indent=2,
sort_keys=True, ensure_ascii=False)'s layout, character for character, and the same values read
back; only a float's exponent is spelled differently (1e-6 for 1e-06)."""

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from labs.core.state import _dump

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)  # every code point but lone surrogates (refused before a write)
LEAVES = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | TEXT


def _documents(leaves):
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_documents(LEAVES))
def test_without_floats_the_bytes_are_json_dumps(doc):
    assert _dump(doc) == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False).encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(_documents(LEAVES | st.floats(allow_nan=False, allow_infinity=False)))
def test_every_value_reads_back_the_same(doc):
    back = json.loads(_dump(doc))
    assert back == doc and _same_floats(back, doc)


def _same_floats(a, b) -> bool:
    """-0.0 stays -0.0 (== says 0.0 == -0.0)."""
    if isinstance(a, float):
        return math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dict):
        return all(_same_floats(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return all(_same_floats(x, y) for x, y in zip(a, b))
    return True


def test_a_floats_exponent_is_the_one_difference():
    doc = {"tolerance": 9.765625e-06, "big": 1e20, "plain": 0.1}
    assert _dump(doc).decode() == '{\n  "big": 1e20,\n  "plain": 0.1,\n  "tolerance": 9.765625e-6\n}'
    assert json.dumps(doc, indent=2, sort_keys=True) == '{\n  "big": 1e+20,\n  "plain": 0.1,\n  "tolerance": 9.765625e-06\n}'

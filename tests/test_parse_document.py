"""state.parse_document's two readers: msgspec for a ledger it can tell json.loads reads the same
(state._decoded), json.loads with its duplicate-key hook for everything else. Each hostile text is
refused, or read, as json.loads reads it."""

import json

import pytest

from labs.core import state
from labs.core.state import DesignLedger, parse_document

HEAD = '"schema_version": 1, "engine_version": "0", "created": "t", "updated": "t", "student": "s", "labs": {}'


def _doc(more: str) -> str:
    """A ledger's text: HEAD and `more` (text after it, from its comma) inside one object."""
    return "{" + HEAD + more + "}"


def _same(a, b) -> bool:
    """Equal values of the same types, keys in the same order, floats to the bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a.hex() == b.hex() if isinstance(a, float) else a == b


def test_a_ledger_the_labs_wrote_is_read_by_msgspec_as_json_reads_it(tmp_path):
    ledger = DesignLedger("Zoë \u00e9tudiante", directory=tmp_path)
    ledger.save_step("06_zero_sweep", "sweep", {"dp": 8, "ratio": 0.1 + 0.2, "tiny": 5e-324, "big": 2**70, "note": "a: b, {c} [d] \u2028"},
                     outcomes={"t": 9.765625e-06, "neg": -0.0})
    ledger.commit_prediction("06_zero_sweep", "fit", "B")
    raw = ledger.path.read_bytes()
    fast, schema_checked = state._decoded(raw)
    assert fast is not None and schema_checked  # the fast reader took it, typed by the schema
    assert _same(fast, json.loads(raw))
    assert _same(parse_document(raw), json.loads(raw))


@pytest.mark.parametrize("text", [
    '{"student": "a", "student": "b"}',
    _doc(', "labs": {"l": {"s": {}, "s": {}}}'),
    _doc(', "x": [{"k": 1}, {"k": 2, "k": 3}]'),
    _doc(', "q": "\\u0022", "q": 1'),  # a quote written as an escape inside the repeated key's value
    _doc(', "q" : 1, "q"  :  2'),  # spaces before the colons
    _doc(', "q": "say \\"hi\\"", "q": "x"'),  # escaped quotes: read by json.loads alone
    _doc(', "q": {"r": "1"}, "q": {"r": "1"}'),  # the same value twice
])
def test_a_repeated_key_is_refused_by_name(text):
    assert state._decoded(text.encode()) == (None, False)
    with pytest.raises(ValueError, match="duplicate key"):
        parse_document(text.encode())


@pytest.mark.parametrize("text, why", [
    (_doc(', "x": NaN'), "not a finite number"),
    (_doc(', "x": Infinity'), "not a finite number"),
    (_doc(', "x": 1e400'), "finite numbers only"),
    (_doc(', "x": 9' + "9" * 4400), "digits"),
    ('[' * 100 + ']' * 100, "nested"),
    (_doc(', "x": ' + "[" * 40 + "]" * 40), "nested 33 deep"),
    (_doc(', "x": 1,'), "not valid JSON"),
])
def test_what_json_refuses_is_refused_as_before(text, why):
    assert state._decoded(text.encode()) == (None, False)
    with pytest.raises(ValueError, match=why):
        parse_document(text.encode())


def test_what_only_json_reads_is_read_as_before():
    """A byte-order mark and a lone surrogate: msgspec refuses them, json.loads reads them as it did."""
    bom = ("\ufeff" + _doc("")).encode("utf-8")
    assert state._decoded(bom) == (None, False) and parse_document(bom)["student"] == "s"
    lone = ("{" + HEAD.replace('"labs": {}', '"labs": {"l": {"s": {"saved": "t", "inputs": {"x": "\\udc00"}, "predictions": {}, "outcomes": {}}}}') + "}").encode()
    assert state._decoded(lone) == (None, False)
    assert parse_document(lone)["labs"]["l"]["s"]["inputs"]["x"] == "\udc00"

"""labs.core.schema_types: the ledger schema as msgspec types, made from ledger.schema.json. A
ledger the types accept must be one the schema accepts (they are never looser); every ledger the
schema refuses is still refused by parse_document, with jsonschema's words, as before."""

import copy
import json

import pytest

from labs.core import state
from labs.core.schema_types import ledger_decoder
from labs.core.state import DesignLedger, parse_document

SCHEMA = state.load_schema()


def _ledger(tmp_path) -> dict:
    ledger = DesignLedger("ann", directory=tmp_path)
    ledger.save_step("06_zero_sweep", "sweep", {"dp": 8, "note": "x"}, {"fit": "B"}, {"t": 1.5})
    ledger.commit_prediction("06_zero_sweep", "fit", "A")
    ledger.commit_prediction("06_zero_sweep", "fit", "B")  # a change
    ledger.commit_prediction("06_zero_sweep", "zero2", None)  # skipped
    doc = json.loads(ledger.path.read_text())
    doc["variants"] = {"06_zero_sweep": {"scheme": "v1", "seed": "s", "student": "ann", "salt": "", "settings": {"a": 1}, "questions": {}, "version": 2}}
    return doc


def _set(path: tuple, value):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def _drop(path: tuple):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return change


STEP = ("labs", "06_zero_sweep", "sweep")
COMMIT = ("predictions", "06_zero_sweep", "fit")
VARIANT = ("variants", "06_zero_sweep")
EDITS = {  # each a way a file can differ from a ledger the labs write
    "schema_version 2": _set(("schema_version",), 2), "schema_version 1.0": _set(("schema_version",), 1.0),
    "schema_version true": _set(("schema_version",), True), "student empty": _set(("student",), ""),
    "student 201 chars": _set(("student",), "s" * 201), "student a number": _set(("student",), 7),
    "no labs": _drop(("labs",)), "labs a list": _set(("labs",), []), "an unknown top key": _set(("extra",), 1),
    "a lab name of 101": _set(("labs", "l" * 101), {}), "101 labs": _set(("labs",), {f"l{i}": {} for i in range(101)}),
    "a step without inputs": _drop((*STEP, "inputs")), "a step with an unknown key": _set((*STEP, "extra"), 1),
    "a step's saved 101": _set((*STEP, "saved"), "t" * 101), "201 inputs": _set((*STEP, "inputs"), {f"k{i}": i for i in range(201)}),
    "inputs a list": _set((*STEP, "inputs"), [1]), "a signature of 201": _set((*STEP, "signature"), "x" * 201),
    "a signature null": _set((*STEP, "signature"), None), "an answer empty": _set((*COMMIT, "answer"), ""),
    "an answer 1,001": _set((*COMMIT, "answer"), "a" * 1001), "an answer a number": _set((*COMMIT, "answer"), 2),
    "a commit without changes": _drop((*COMMIT, "changes")), "a change without at": _drop((*COMMIT, "changes", 0, "at")),
    "a change with an unknown key": _set((*COMMIT, "changes", 0, "x"), 1), "changes a dict": _set((*COMMIT, "changes"), {}),
    "10,001 changes": _set((*COMMIT, "changes"), [{"answer": "A", "at": "t"}] * 10001),
    "a variant version 0": _set((*VARIANT, "version"), 0), "a variant version 1,001": _set((*VARIANT, "version"), 1001),
    "a variant version 1.0": _set((*VARIANT, "version"), 1.0), "a variant version true": _set((*VARIANT, "version"), True),
    "a variant without seed": _drop((*VARIANT, "seed")), "101 settings": _set((*VARIANT, "settings"), {f"k{i}": i for i in range(101)}),
    "predictions of 101 labs": _set(("predictions",), {f"l{i}": {} for i in range(101)}), "a variant null": _set(VARIANT, None),
}


def test_the_project_schema_is_translated_whole():
    assert ledger_decoder(SCHEMA) is not None


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}, "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "number"}}},  # additionalProperties not false: looser than a TypedDict
    {"type": "object", "additionalProperties": True},
    {"anyOf": [{"type": "string"}]},
])
def test_a_keyword_it_does_not_translate_turns_the_types_off(schema):
    assert ledger_decoder(schema) is None


@pytest.mark.parametrize("edit", list(EDITS))
def test_the_types_are_never_looser_than_the_schema(tmp_path, edit):
    """For each edit: if the types accept the file (msgspec drops a key a typed object does not name:
    _decoded's count of strings sees it), the schema does too; and parse_document's
    verdict is the schema's (jsonschema names what it refuses)."""
    doc = copy.deepcopy(_ledger(tmp_path))
    EDITS[edit](doc)
    raw = json.dumps(doc).encode()
    typed_ok = state._decoded(raw)[1]  # the types' verdict with the count of strings that sees a dropped key
    schema_error = state._import_jsonschema().exceptions.best_match(state._validator().iter_errors(doc))
    assert not (typed_ok and schema_error is not None)
    if schema_error is None:
        assert parse_document(raw) == doc
    else:
        with pytest.raises(ValueError) as refused:
            parse_document(raw)
        with pytest.raises(ValueError) as named:
            state.validate_document(doc)
        assert str(refused.value) == str(named.value)


def test_a_ledger_the_labs_wrote_is_accepted_by_the_types(tmp_path):
    doc = _ledger(tmp_path)
    raw = json.dumps(doc).encode()
    assert ledger_decoder(SCHEMA).decode(raw) == doc
    assert state._decoded(raw) == (doc, True)

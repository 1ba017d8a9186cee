"""The ledger schema's two validators (labs.core.state): fastjsonschema's compiled one decides that a
ledger is valid, jsonschema names what is wrong with one that is not. They must accept and refuse
the same documents: every value of a real ledger is replaced, one at a time, by each of a list of
awkward values (a boolean where 1 is required, 1.0, too long, too many, null...), and every
object gets an unknown key and loses each key in turn."""

import copy
import json

import pytest

from labs.core import state
from labs.core.state import DesignLedger
from labs.variants import variant

AWKWARD = [True, False, 1, 1.0, 0, -1, 2, 1001, 1e300, None, "", "x", "x" * 201, "x" * 1001, [], {}, [1], {"a": 1}, {"x" * 101: 1}]


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    ledger = DesignLedger("ann", tmp_path_factory.mktemp("ledger"))
    for lab in ("05", "06", "13"):
        v = variant(lab, "ann", salt="")
        for q, asked in v.questions.items():
            ledger.commit_prediction(v.lab, q, "1" if asked.numeric else "A", variant=v.record())
    ledger.commit_prediction(v.lab, q, "B", variant=v.record())  # a change
    ledger.save_step("05_parallelism", "act1", {"gpus": 64}, {"cause": "A"}, {"mfu": 0.3})
    return json.loads(ledger.path.read_text())


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*path, i))


def _at(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def _variants_of(doc):
    for path in _paths(doc):
        for value in AWKWARD:
            changed = copy.deepcopy(doc)
            if not path:
                yield value
                continue
            _at(changed, path[:-1])[path[-1]] = value
            yield changed
        if isinstance(_at(doc, path), dict):
            extra = copy.deepcopy(doc)
            _at(extra, path)["zz-unknown"] = 1
            yield extra
            for key in list(_at(doc, path)):
                missing = copy.deepcopy(doc)
                del _at(missing, path)[key]
                yield missing


def test_the_compiled_validator_accepts_and_refuses_what_jsonschema_does(ledger):
    fast, refused = state._fast_validator()
    slow = state._validator()

    def accepts(doc):
        try:
            fast(doc)
            return True
        except refused:
            return False

    cases = list(_variants_of(ledger))
    assert len(cases) > 1000
    differ = [json.dumps(doc)[:120] for doc in cases if accepts(doc) != slow.is_valid(doc)]
    assert not differ, differ[:5]
    assert accepts(ledger) and not accepts({**ledger, "schema_version": True}) and not accepts({**ledger, "student": ""})


def test_a_valid_ledger_never_reaches_jsonschema_and_a_refused_one_is_named_by_it(ledger, monkeypatch):
    class Refuses:
        def iter_errors(self, doc):
            raise AssertionError("jsonschema was asked about a valid ledger")

    state._validator.cache_clear()
    monkeypatch.setattr(state, "_validator", lambda: Refuses())
    state.validate_document(ledger)  # the compiled validator alone
    monkeypatch.undo()
    with pytest.raises(ValueError, match=r"^student: '' should be non-empty"):
        state.validate_document({**ledger, "student": ""})
    too_many = {**ledger, "labs": {f"l{i}": {} for i in range(101)}}
    with pytest.raises(ValueError, match="labs has more than 100 entries"):
        state.validate_document(too_many)

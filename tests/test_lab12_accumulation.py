"""Lab 12's accumulation errors kept in labs/core/scenarios/lab12_accumulation.py: the engine's
numbers to the bit, for every K of the slider and every case the lab and the grader read."""

from labs.core.engine import precision
from labs.core.scenarios import lab12, lab12_accumulation


def test_the_kept_errors_are_the_engines_to_the_bit():
    kept = lab12_accumulation.ERRORS
    assert set(kept) == {(k, *case) for k in lab12.ACCUMULATION_KS for case in lab12.ACCUMULATION_CASES}
    for k in lab12.ACCUMULATION_KS:
        fresh = precision.dot_product_errors(lab12.ACCUMULATION_ROWS, k, lab12.ACCUMULATION_CASES)
        assert [kept[(k, *case)].hex() for case in lab12.ACCUMULATION_CASES] == [e.hex() for e in fresh], k


def test_the_grader_reads_the_kept_errors():
    """precision_outcomes reads the outcome cases: each is the engine's number for those cases alone
    (computed apart from the lab's other cases) and is the kept one."""
    k = lab12.ACCUMULATION_KS[-1]
    fresh = precision.dot_product_errors(lab12.ACCUMULATION_ROWS, k, lab12.OUTCOME_ACCUMULATION_CASES)
    read = {(r["accumulator"], r["promote_every"]): r["error"] for r in lab12._accumulation_rows(k, lab12.OUTCOME_ACCUMULATION_CASES)}
    assert [read[case] for case in lab12.OUTCOME_ACCUMULATION_CASES] == list(fresh)
    assert lab12.accumulation_rows(k)[1] == {"accumulator": "h800-truncated", "promote_every": None, "error": lab12_accumulation.ERRORS[(k, "h800-truncated", None)]}


def test_a_case_not_kept_is_computed():
    lab12._accumulation_rows.cache_clear()
    rows = lab12._accumulation_rows(512, (("fp16", None),))
    assert rows[0]["error"] == precision.dot_product_errors(lab12.ACCUMULATION_ROWS, 512, (("fp16", None),))[0] > 0

"""Schema check of tests/data/kernel_benchmarks_v4.json, the kernel, collective and datasheet rows
engine v4 is calibrated and tested on (issues 36 and 37). A data sanity test: it does not import
the engine."""

import json
import math
from pathlib import Path

import pytest

PATH = Path(__file__).parent / "data" / "kernel_benchmarks_v4.json"
KINDS = {"datasheet", "gemm", "attention", "nccl", "rccl", "grouped_gemm", "fp8_recipe_kernel", "hbm"}
CONFIDENCE = {"measured", "datasheet", "derived", "vendor-claim"}
FIELDS = {"id", "kind", "hardware", "quantity", "value", "unit", "conditions", "source", "quote", "confidence"}
# Words that mark an end-to-end training figure, which this file must never hold.
END_TO_END = ("mfu", "tokens/s", "tokens per second", "step time", "per gpu of a training run")


@pytest.fixture(scope="module")
def rows():
    data = json.loads(PATH.read_text())
    assert isinstance(data, list) and data, "the file is a non-empty list of rows"
    return data


def test_every_row_has_exactly_the_schema(rows):
    for row in rows:
        assert isinstance(row, dict)
        assert set(row) == FIELDS, (row.get("id"), sorted(set(row) ^ FIELDS))


def test_ids_unique_and_non_empty(rows):
    ids = [row["id"] for row in rows]
    assert all(isinstance(i, str) and i.strip() for i in ids)
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    assert not dupes, dupes


def test_kind_and_confidence_in_allowed_sets(rows):
    for row in rows:
        assert row["kind"] in KINDS, (row["id"], row["kind"])
        assert row["confidence"] in CONFIDENCE, (row["id"], row["confidence"])


def test_value_finite_positive_number(rows):
    for row in rows:
        v = row["value"]
        assert isinstance(v, (int, float)) and not isinstance(v, bool), row["id"]
        assert math.isfinite(v) and v > 0, (row["id"], v)


def test_text_fields_non_empty(rows):
    for row in rows:
        for field in ("hardware", "quantity", "unit", "source", "quote"):
            assert isinstance(row[field], str) and row[field].strip(), (row["id"], field)
        assert isinstance(row["conditions"], dict), row["id"]


def test_no_end_to_end_training_figures(rows):
    for row in rows:
        text = (row["quantity"] + " " + row["unit"]).lower()
        assert not any(word in text for word in END_TO_END), row["id"]


def test_every_kind_is_present(rows):
    assert {row["kind"] for row in rows} == KINDS


def test_rates_in_tflops_do_not_exceed_their_stated_peak(rows):
    # A measured matmul rate above the peak it was measured against would be a transcription error.
    for row in rows:
        peak = row["conditions"].get("peak_used_TFLOPs")
        if isinstance(peak, (int, float)) and row["unit"] == "TFLOP/s":
            assert row["value"] <= peak, row["id"]

"""Lab 08's SHARP section (issue 38 item 5, review X2): the page's numbers are the engine's, the
bytes per NIC are the hand count, and seed 002's "SHARP halves all-reduce traffic" is checked in
words: halved on the wire, halved in time only where the NIC limits."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from conftest import report
from labs.core.scenarios.lab08_sharp import (
    SHARP_BYTES,
    SHARP_MEASURED_BUSBW,
    SHARP_NODES,
    sharp_measured,
    sharp_rows,
)
from test_notebooks import LABS, committed, shared_app, mine, right, text_of

pytestmark = pytest.mark.usefixtures("ledger_dir")  # a fresh ledger per test (tests/conftest.py)
LAB08 = next(p for p in LABS if p.name == "08_collectives.py")
ROWS = {r["id"]: r for r in json.loads((Path(__file__).parent / "data" / "kernel_benchmarks_v4.json").read_text())}


def test_hidden_before_the_first_commit():
    outputs, _ = shared_app(LAB08).run()
    assert "SHARP: the scale-out switches add too" not in html.unescape(text_of(outputs))


def test_bytes_per_nic_by_hand():
    """16 nodes, 4 GiB. One GPU a node (n = 16, one NIC): ring 2 x 15/16 x 4 GiB = 8.05 GB, SHARP
    4 GiB. Whole nodes (n = 128, 8 NICs a node): ring 2 x 127/128 x 4 GiB / 8, SHARP 4 GiB / 8."""
    one, whole = sharp_rows()
    assert one["nic_bytes_off"] == pytest.approx(2 * 15 / 16 * SHARP_BYTES) and one["nic_bytes_on"] == pytest.approx(SHARP_BYTES)
    assert whole["nic_bytes_off"] == pytest.approx(2 * 127 / 128 * SHARP_BYTES / 8) and whole["nic_bytes_on"] == pytest.approx(SHARP_BYTES / 8)
    assert (one["n"], whole["n"]) == (SHARP_NODES, 8 * SHARP_NODES)


def test_time_halves_only_where_the_nic_limits():
    """One GPU a node: the 47 GB/s NIC carries 2 x 15/16 M with the ring, M with SHARP: 1.875x
    on the bandwidth terms (the latencies differ a little). Whole nodes: NVLink bounds, ~1x."""
    one, whole = sharp_rows()
    assert abs(report("SHARP speed-up, one GPU a node", one["speedup"], 2 * 15 / 16)) < 0.02
    assert 1.0 <= whole["speedup"] < 1.05


def test_measured_figure_is_the_row():
    assert SHARP_MEASURED_BUSBW == ROWS["nccl_h100_64gpu_sharp_allreduce_4294967296"]["value"] * 1e9
    m = sharp_measured()
    assert abs(report("8x8 H100 SHARP busbw, engine against CoreWeave", m["engine_on"], m["measured"])) < 0.05


def test_page_reads_the_engine():
    ring = mine("08_collectives", "ring")
    outputs, _ = shared_app(LAB08).run(defs=committed("ring", ring, right(ring)))
    text = html.unescape(text_of(outputs))
    one, whole = sharp_rows()
    m = sharp_measured()
    assert "SHARP: the scale-out switches add too" in text
    assert f"{one['nic_bytes_off'] / 1e9:.2f} GB against {one['nic_bytes_on'] / 1e9:.2f} GB" in text
    assert f"finishes **{one['speedup']:.2f}x** sooner" in text or f"<strong>{one['speedup']:.2f}x</strong> sooner" in text
    assert f"{whole['speedup']:.2f}x" in text
    assert f"measured {m['measured'] / 1e9:.0f} GB/s" in text and f"{m['engine_on'] / 1e9:.0f} GB/s with SHARP" in text
    assert f"{one['time_off_s'] * 1e3:.1f} ms" in text and f"{one['time_on_s'] * 1e3:.1f} ms" in text

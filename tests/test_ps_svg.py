"""Lab 08's parameter-server chart drawn as plain SVG (labs.core.ps_svg): every point shows the
engine's time (checked against the hand-counted formulas: server 2 alpha + N M / B, ring
2(N-1) alpha + 2(N-1)/N M / B), placed on log axes through a mapping written out here."""

import re

import pytest
from svg_readback import SVG, log_px, parsed

from labs.core import ps_svg
from labs.core.engine.hardware import LINKS
from labs.core.scenarios.lab08 import (
    PS_N,
    PS_SERVER_LINK,
    PS_SIZES,
    PS_WORKER_LINKS,
    ps_vs_ring,
)
from labs.core.style import COLORS

LEFT, RIGHT, TOP, BOTTOM = 100, 960 - 20, 50, 340 - 62  # the plot's edges in the 960 x 340 viewBox


def hand_ms(nbytes: float, n: int, worker: str) -> tuple[float, float]:
    s, w = LINKS[PS_SERVER_LINK], LINKS[worker]
    server = 2 * s.latency_s + n * nbytes / s.effective_bytes_per_s
    ring = 2 * (n - 1) * w.latency_s + 2 * (n - 1) / n * nbytes / w.effective_bytes_per_s
    return server * 1e3, ring * 1e3


@pytest.mark.parametrize("size", list(PS_SIZES))
@pytest.mark.parametrize("worker", PS_WORKER_LINKS)
def test_points_are_the_engine_times_on_log_axes(size, worker):
    nbytes = PS_SIZES[size]
    result = ps_vs_ring(nbytes, worker)
    root = parsed(ps_svg.ps_chart(result), words=("infiniband",))
    points = [(c, c.find(f"{SVG}title").text) for c in root.iter(f"{SVG}circle") if c.find(f"{SVG}title") is not None]
    ns = [n for n in PS_N if n >= 2]
    assert len(points) == 2 * len(ns)
    engine = {(r["n"], "server"): r["ps_s"] * 1e3 for r in result["rows"]} | {(r["n"], "ring"): r["ring_s"] * 1e3 for r in result["rows"]}
    lo, hi = min(engine.values()), max(engine.values())
    worst_px, worst_rel = 0.0, 0.0
    for circle, title in points:
        name, n, ms = re.fullmatch(r"(.+), N = ([\d,]+): ([\d,.]+) ms", title).groups()
        n, ms = int(n.replace(",", "")), float(ms.replace(",", ""))
        kind = "server" if name.startswith("parameter server") else "ring"
        assert name == (f"parameter server ({result['server']})" if kind == "server" else f"ring ({result['worker']})")
        assert circle.get("fill") == (COLORS["red"] if kind == "server" else COLORS["blue"])
        want = engine[(n, kind)]
        assert ms == pytest.approx(want, abs=0.0005)
        hand = hand_ms(nbytes, n, worker)[0 if kind == "server" else 1]
        worst_rel = max(worst_rel, abs(want - hand) / hand)
        x, y = float(circle.get("cx")), float(circle.get("cy"))
        worst_px = max(worst_px, abs(x - log_px(n, min(ns), max(ns), LEFT, RIGHT, 0.03)), abs(y - log_px(want, lo, hi, BOTTOM, TOP, 0.06)))
    print(f"{size}, {worker}: worst {worst_px:.3f} px from the hand mapping; engine vs hand formula worst relative {worst_rel:.2e}")
    assert worst_px <= 0.051
    assert worst_rel < 1e-9


def test_titles_ticks_and_legend():
    result = ps_vs_ring(PS_SIZES["1 GB"], "ib-hdr")
    root = parsed(ps_svg.ps_chart(result), words=("infiniband",))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "workers N" in texts and "time per exchange (ms)" in texts
    assert "parameter server (InfiniBand NDR 400 Gb/s)" in texts and "ring (InfiniBand HDR 200 Gb/s)" in texts
    assert [t for t in texts if t in {f"{n:,}" for n in PS_N}][:14] == [f"{n:,}" for n in PS_N if n >= 2]
    # 1 GB over HDR: 42.6 .. 21,787 ms, padded 0.06 of its 2.71 decades each side (29 .. 31,700),
    # so the y ticks run 50 .. 20,000 (1, 2, 5 a decade), each at its value
    ticks = {t.text: float(t.get("y")) - 5 for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end"}
    assert list(ticks) == ["50", "100", "200", "500", "1,000", "2,000", "5,000", "10,000", "20,000"]
    ms = [r[k] * 1e3 for r in result["rows"] for k in ("ps_s", "ring_s")]
    for label, y in ticks.items():
        assert y == pytest.approx(log_px(float(label.replace(",", "")), min(ms), max(ms), BOTTOM, TOP, 0.06), abs=0.051)

"""Lab 08's ring stepper drawn as plain SVG (labs.core.ring_svg): every rank, send and chunk label
read back from the markup against the ring all-reduce's schedule counted by hand here (reduce-
scatter step k: rank r sends chunk (r - k + 1) mod N; all-gather step j: chunk (r + 1 - j) mod N;
each send one chunk M/N) and against the engine's ring_state, placed through a mapping written
out here (the unit circle from the top clockwise, -1.3..1.3 on a 330 px square under a 60 px title)."""

import math
import re

import pytest
from svg_readback import SVG, parsed

from labs.core import ring_svg
from labs.core.scenarios.lab08 import STEPPER_RANKS, STEPPER_SIZES, ring_state
from labs.core.style import COLORS

M = STEPPER_SIZES["1 GB"]


def pixel(x: float, y: float) -> tuple[float, float]:
    """A point of the figure's plane (-1.3..1.3 both ways, y up) in the 420 x 400 viewBox."""
    return 45 + (x + 1.3) / 2.6 * 330, 60 + (1.3 - y) / 2.6 * 330


def on_circle(r: int, n: int, scale: float = 1.0) -> tuple[float, float]:
    degrees = 90 - 360 * r / n  # rank 0 at the top, then clockwise
    return scale * math.cos(math.radians(degrees)), scale * math.sin(math.radians(degrees))


def hand_sends(n: int, step: int) -> list[int] | None:
    if step == 0:
        return None
    if step <= n - 1:
        return [(r - step + 1) % n for r in range(n)]
    return [(r + 1 - (step - n)) % n for r in range(n)]


def hand_holds(n: int, step: int) -> list[list[int]]:
    """How many ranks' parts rank r's copy of chunk c sums after `step` steps: chunk c starts its
    reduce-scatter at rank c, so after k steps rank c + d holds d + 1 of them (d <= k); after
    N - 1 rank c - 1 holds all N, and all-gather step j hands the full sum on to rank c - 1 + j."""
    def held(r: int, c: int) -> int:
        d = (r - c) % n
        if step <= n - 1:
            return d + 1 if d <= step else 1
        return n if (d + 1) % n <= step - (n - 1) else d + 1
    return [[held(r, c) for c in range(n)] for r in range(n)]


def cases():
    return [(n, step) for n in STEPPER_RANKS for step in sorted({0, 1, n - 1, n, 2 * (n - 1)})]


@pytest.mark.parametrize("n, step", cases())
def test_ranks_sends_and_labels_are_the_schedule_on_the_circle(n, step):
    view = ring_state(n, M, "nvlink4", step)
    assert [list(row) for row in view["holds"]] == hand_holds(n, step)
    assert (list(view["sends"]) if view["sends"] is not None else None) == hand_sends(n, step)
    root = parsed(ring_svg.ring_chart(view))
    worst = 0.0

    ranks = root.findall(f"{SVG}g[@class='rank']")
    assert len(ranks) == n
    holds = hand_holds(n, step)
    for r, g in enumerate(ranks):
        circle, text = g.find(f"{SVG}circle"), g.find(f"{SVG}text")
        assert text.text == f"GPU {r}"
        assert g.find(f"{SVG}title").text == f"GPU {r}: " + ", ".join(f"c{c} {holds[r][c]} of {n}" for c in range(n))
        x, y = pixel(*on_circle(r, n))
        worst = max(worst, abs(float(circle.get("cx")) - x), abs(float(circle.get("cy")) - y), abs(float(text.get("x")) - x))

    arrows = [g for g in root.findall(f"{SVG}g") if g.get("class") is None]
    labels = root.findall(f"{SVG}text[@class='chunk']")
    sends = hand_sends(n, step)
    if sends is None:
        assert not arrows and not labels
    else:
        color = COLORS["blue"] if step <= n - 1 else COLORS["green"]
        assert len(arrows) == len(labels) == n
        for r, (g, label) in enumerate(zip(arrows, labels)):
            nxt = (r + 1) % n
            assert g.find(f"{SVG}title").text == f"GPU {r} to GPU {nxt}: chunk c{sends[r]}, {M / n / 1e6:,.1f} MB"
            assert label.text == f"c{sends[r]}" and label.get("fill") == color
            line, head = g.find(f"{SVG}line"), g.find(f"{SVG}path")
            assert line.get("stroke") == head.get("fill") == color
            start, tip = pixel(*on_circle(r, n, 0.8)), pixel(*on_circle(nxt, n, 0.8))
            tip_drawn = [float(v) for v in re.match(r"M([-\d.]+),([-\d.]+)L", head.get("d")).groups()]
            (ax, ay), (bx, by) = on_circle(r, n), on_circle(nxt, n)
            at = pixel(0.56 * (ax + bx), 0.56 * (ay + by))
            worst = max(worst, abs(float(line.get("x1")) - start[0]), abs(float(line.get("y1")) - start[1]),
                        abs(tip_drawn[0] - tip[0]), abs(tip_drawn[1] - tip[1]), abs(float(label.get("x")) - at[0]))
            # the line stops where the head's base begins, on the way from start to tip
            along = math.hypot(tip[0] - float(line.get("x2")), tip[1] - float(line.get("y2")))
            assert 9 < along < 13

    assert worst <= 0.051, worst


@pytest.mark.parametrize("n, step, title", [
    (4, 0, "Ring all-reduce, N = 4: step 0 of 6 (before the first step)"),
    (4, 2, "Ring all-reduce, N = 4: step 2 of 6 (reduce-scatter)"),
    (16, 30, "Ring all-reduce, N = 16: step 30 of 30 (all-gather)"),
])
def test_title(n, step, title):
    root = parsed(ring_svg.ring_chart(ring_state(n, M, "pcie4", step)))
    assert title in [t.text for t in root.iter(f"{SVG}text")]

"""The points table: per lab and item (a prediction question, or a free-text field marked by
hand), the points it is worth and what earns them.

    counts = "correctness"    the points when the committed answer is the engine's
             "participation"  the points for committing an answer (a skip earns nothing)
             "both"           half for committing, half for being right
             "marked"         a free-text field: the instructor's mark (marks.py), out of the points

Defaults are below. An instructor changes any entry in one TOML file (`--points points.toml`):

    ["05_parallelism"]
    cause = 2                                      # 2 points, still for correctness
    design = { points = 3, counts = "both" }
    ["09_64gpu_design"]
    paragraph = 4

or on the command line: `--set-points 05_parallelism.cause=2` or `...=3:both`.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from labs.grading.questions import FREE_TEXT, questions

COUNTS = ("correctness", "participation", "both")
MAX_POINTS = 1000.0
DEFAULT_QUESTION = 1.0
DEFAULT_FREE_TEXT = {"paragraph": 2.0}  # each other free-text field (a one-line reason): 1 point


@dataclass(frozen=True)
class Item:
    points: float
    counts: str  # one of COUNTS, or "marked"

    def earned(self, answer: str | None, right: bool | None) -> float:
        """Points for a committed answer (None: skipped or never committed) judged `right`."""
        committed, correct = answer is not None, bool(right)
        if self.counts == "correctness":
            return self.points * correct
        if self.counts == "participation":
            return self.points * committed
        if self.counts == "both":
            return self.points / 2 * committed + self.points / 2 * (committed and correct)
        raise ValueError(f"counts={self.counts!r} is marked by hand, not earned by an answer")


def default_table() -> dict[tuple[str, str], Item]:
    table = {key: Item(DEFAULT_QUESTION, "correctness") for key in questions()}
    for (lab, _step), fields in FREE_TEXT.items():
        for field in fields:
            table[(lab, field)] = Item(DEFAULT_FREE_TEXT.get(field, 1.0), "marked")
    return dict(sorted(table.items()))


def _points(where: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value <= MAX_POINTS:
        raise ValueError(f"{where}: points must be a number from 0 to {MAX_POINTS:g}, got {value!r}")
    return float(value)


def _override(table: dict, lab: str, item: str, value, where: str) -> None:
    key = (lab, item)
    if key not in table:
        known = sorted({k[1] for k in table if k[0] == lab}) or sorted({k[0] for k in table})
        raise ValueError(f"{where}: no item {lab}.{item} in the points table (known: {', '.join(known)})")
    old = table[key]
    if isinstance(value, dict):
        unknown = set(value) - {"points", "counts"}
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}; use points and counts")
        points = _points(where, value.get("points", old.points))
        counts = value.get("counts", old.counts)
    else:
        points, counts = _points(where, value), old.counts
    allowed = ("marked",) if old.counts == "marked" else COUNTS
    if counts not in allowed:
        raise ValueError(f"{where}: counts must be one of {', '.join(allowed)}, got {counts!r}")
    table[key] = replace(old, points=points, counts=counts)


def load(path: str | Path | None = None, settings: list[str] | tuple[str, ...] = ()) -> dict[tuple[str, str], Item]:
    """The default table, with a TOML file's entries and then `LAB.ITEM=POINTS[:COUNTS]` settings
    over it; ValueError naming the file, lab and item of anything wrong."""
    table = default_table()
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"{path}: not valid TOML: {err}") from None
        for lab, items in data.items():
            if not isinstance(items, dict):
                raise ValueError(f"{path}: [{lab}] must be a table of items")
            for item, value in items.items():
                _override(table, lab, item, value, f"{path} [{lab}] {item}")
    for setting in settings:
        name, sep, value = setting.partition("=")
        lab, dot, item = name.strip().rpartition(".")
        if not sep or not dot:
            raise ValueError(f"--set-points {setting!r}: write LAB.ITEM=POINTS or LAB.ITEM=POINTS:COUNTS")
        points, _, counts = value.partition(":")
        try:
            number = float(points)
        except ValueError:
            raise ValueError(f"--set-points {setting!r}: points must be a number, got {points!r}") from None
        _override(table, lab, item, {"points": number, **({"counts": counts.strip()} if counts else {})}, f"--set-points {setting!r}")
    return table


def possible(table: dict[tuple[str, str], Item], lab: str) -> float:
    return sum(item.points for (l, _), item in table.items() if l == lab)

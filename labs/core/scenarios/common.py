"""What every lab's scenario module shares: a prediction option (a key and its label, and the
misconception it stands for when the engine judges it wrong: a short name the class dashboard's
heat map counts; empty for an option that is right, or not yet named)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Option:
    key: str
    label: str
    misconception: str = ""

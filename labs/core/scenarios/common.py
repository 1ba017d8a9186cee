"""What every lab's scenario module shares: a prediction option (a key and its label, and the
misconception it stands for when the engine judges it wrong: a short name the class dashboard's
heat map counts). Every option carries one, the right one too, so the source does not say which
is right: the engine decides, at each student's variant (labs.variants)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Option:
    key: str
    label: str
    misconception: str = ""

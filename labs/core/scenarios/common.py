"""What every lab's scenario module shares: a prediction option (a key and its label)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Option:
    key: str
    label: str

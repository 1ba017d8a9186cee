"""Input checks shared by the engine: every error names the field and what is allowed."""

from __future__ import annotations

import math
from collections.abc import Iterable


def check_positive(name: str, value, *, integer: bool = False, allow_zero: bool = False) -> None:
    kind = "a whole number" if integer else "a number"
    bound = ">= 0" if allow_zero else "> 0"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be {kind} {bound}, got {value!r}")
    if integer and int(value) != value:
        raise ValueError(f"{name} must be {kind} {bound}, got {value!r}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {kind} {bound}, got {value!r}")


def check_fraction(name: str, value) -> None:
    check_positive(name, value)
    if value > 1:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")


def check_choice(name: str, value, allowed: Iterable) -> None:
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")


def unknown_key_error(name: str, key, catalog) -> ValueError:
    return ValueError(f"unknown {name} {key!r}; known: {', '.join(sorted(catalog))}")

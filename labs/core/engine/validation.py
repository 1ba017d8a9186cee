"""Input checks, applied once where input enters the engine: every error names the field and
what is allowed, so inner functions can trust their arguments."""

from __future__ import annotations

import math
import numbers
from functools import lru_cache
from collections.abc import Iterable

# Sizes beyond any machine or batch that exists: refusing them keeps every product finite.
MAX_COUNT = 1 << 31
MAX_FLOAT = 1.7976931348623157e308


def check_positive(name: str, value, *, integer: bool = False, allow_zero: bool = False, maximum: float | None = None) -> None:
    kind = "a whole number" if integer else "a number"
    bound = ">= 0" if allow_zero else "> 0"
    allowed = numbers.Integral if integer else numbers.Real
    plain = type(value) is int or (type(value) is float and not integer)  # allowed: the ABC checks below cost ~1 us a call (~150,000 a class graded)
    if not plain and (isinstance(value, bool) or not isinstance(value, allowed)):
        raise ValueError(f"{name} must be {kind} {bound}, got {short(value)}")
    if type(value) is not float and not _fits_a_float(value):  # 10**400: math.isfinite and every later float() would overflow
        raise ValueError(f"{name} must be at most {maximum if maximum is not None else MAX_FLOAT:g} in size, got {short(value)}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {kind} {bound}, got {short(value)}")
    limit = maximum if maximum is not None else (MAX_COUNT if integer else None)
    if limit is not None and value > limit:
        raise ValueError(f"{name} must be at most {limit:g}, got {short(value)}")


def _fits_a_float(value) -> bool:
    """False for an int or Fraction beyond float range, which no check can compare as a float."""
    try:
        float(value)
    except OverflowError:
        return False
    return True


def short(value, width: int = 60) -> str:
    """A value's repr for a message, cut (a 4,000-digit integer is named by its length)."""
    text = repr(value)
    return text if len(text) <= width else f"{text[:20]}... ({len(text)} characters)"


def check_fraction(name: str, value) -> None:
    check_positive(name, value)
    if value > 1:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")


def _is_bool(value) -> bool:
    return isinstance(value, bool) or type(value).__name__ == "bool_"


def check_bool(name: str, value) -> None:
    if not _is_bool(value):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def check_str(name: str, value) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {value!r}")


def _same_kind(a, b) -> bool:
    """True when an allowed value `a` and a given value `b` are of one kind: both strings, both
    booleans, both whole numbers, or neither (so 1.0 or True is not zero_stage 1)."""
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str)
    if _is_bool(a) or _is_bool(b):
        return _is_bool(a) and _is_bool(b)
    if isinstance(a, numbers.Integral) or isinstance(b, numbers.Integral):
        return isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral)
    return True


def check_choice(name: str, value, allowed: Iterable) -> None:
    allowed = tuple(allowed)
    if type(value) in (int, bool, str) and _among_plain(value, allowed):
        return  # a plain value of the same type among the allowed ones: the grader checks every student's settings and inputs
    try:
        ok = any(_same_kind(a, value) and bool(a == value) for a in allowed)
    except (TypeError, ValueError):  # incomparable values, arrays
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")


def _among_plain(value, allowed: tuple) -> bool:
    try:
        return (type(value), value) in _plain_choices(allowed)
    except TypeError:  # an unhashable choice: the general check decides
        return False


@lru_cache(maxsize=1024)
def _plain_choices(allowed: tuple) -> frozenset:
    return frozenset((type(a), a) for a in allowed)


def unknown_key_error(name: str, key, catalog) -> ValueError:
    return ValueError(f"unknown {name} {key!r}; known: {', '.join(sorted(catalog))}")

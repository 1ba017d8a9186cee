"""Due dates and late policies, per lab, from one TOML file (`--due due.toml`):

    policy = "percent"                 # for every lab unless it says otherwise: none | zero | percent
    percent_per_day = 10               # percent: this much off per day (or part of one) late
    grace_hours = 0
    ["05_parallelism"]
    due = 2026-12-01T23:59:00Z         # a TOML date-time with its offset (or the same as a string)
    grace_hours = 2

A lab without `due` is never late. `none` only reports the lateness; `zero` gives a late lab 0.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

POLICIES = ("none", "zero", "percent")
DAY_S = 86_400.0
RULE_KEYS = {"due", "grace_hours", "policy", "percent_per_day"}


@dataclass(frozen=True)
class Rule:
    due: datetime | None = None
    grace_hours: float = 0.0
    policy: str = "none"
    percent_per_day: float = 0.0

    def late_seconds(self, handed_in: datetime | None) -> float:
        """Seconds past the due date and its grace (0 when on time, undated or never handed in)."""
        if self.due is None or handed_in is None:
            return 0.0
        return max(0.0, (handed_in - self.due - timedelta(hours=self.grace_hours)).total_seconds())

    def factor(self, late_s: float) -> float:
        """What a lab's points are multiplied by when it is `late_s` seconds late."""
        if late_s <= 0 or self.policy == "none":
            return 1.0
        if self.policy == "zero":
            return 0.0
        return max(0.0, 1.0 - self.percent_per_day / 100.0 * math.ceil(late_s / DAY_S))


def parse_time(value, where: str = "time") -> datetime:
    """A timezone-aware datetime from a TOML date-time or an ISO 8601 string; ValueError otherwise."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{where}: {value[:60]!r} is not an ISO 8601 date and time") from None
    if not isinstance(value, datetime):
        raise ValueError(f"{where}: expected a date and time, got {value!r}")
    if value.tzinfo is None:
        raise ValueError(f"{where}: {value.isoformat()} has no UTC offset (write e.g. 2026-12-01T23:59:00Z)")
    return value


def _rule(data: dict, base: Rule, where: str) -> Rule:
    unknown = set(data) - RULE_KEYS
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}; use {', '.join(sorted(RULE_KEYS))}")
    policy = data.get("policy", base.policy)
    if policy not in POLICIES:
        raise ValueError(f"{where}: policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    numbers = {}
    for key, top in (("grace_hours", 24 * 365), ("percent_per_day", 100)):
        value = data.get(key, getattr(base, key))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value <= top:
            raise ValueError(f"{where}: {key} must be a number from 0 to {top}, got {value!r}")
        numbers[key] = float(value)
    due = parse_time(data["due"], f"{where} due") if "due" in data else base.due
    return Rule(due, numbers["grace_hours"], policy, numbers["percent_per_day"])


@dataclass(frozen=True)
class Deadlines:
    rules: dict[str, Rule]
    default: Rule = Rule()

    def rule(self, lab: str) -> Rule:
        return self.rules.get(lab, self.default)


def load(path: str | Path | None) -> Deadlines:
    """The deadlines in a due.toml (none: nothing is ever late); ValueError naming the lab and key."""
    if path is None:
        return Deadlines({})
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: not valid TOML: {err}") from None
    labs = {k: v for k, v in data.items() if isinstance(v, dict)}
    default = _rule({k: v for k, v in data.items() if k not in labs}, Rule(), str(path))
    return Deadlines({lab: _rule(table, default, f"{path} [{lab}]") for lab, table in labs.items()}, default)

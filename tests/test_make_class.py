"""scripts/make_class.py --jobs: each student draws from their own stream, so the class written by
several processes is the one written by one (times, signatures and the random signing key aside)."""

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def _make():
    spec = importlib.util.spec_from_file_location("make_class", ROOT / "scripts" / "make_class.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _masked(value, key=None):
    """A ledger with its times and signatures (which differ between any two runs) as '*'."""
    if isinstance(value, dict):
        return {k: _masked(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return "*" if key == "signature" or (isinstance(value, str) and STAMP.match(value)) else value


def test_two_jobs_write_the_class_one_job_writes(tmp_path):
    make = _make()
    for jobs in (1, 2):
        make.make_class(tmp_path / f"jobs{jobs}", students=3, seed=5, hostile=False, salt="demo-salt", jobs=jobs)
    one, two = (sorted(p.name for p in (tmp_path / f"jobs{j}").iterdir()) for j in (1, 2))
    assert one == two and len([n for n in one if n.startswith("student-")]) == 3
    for name in one:
        if name.endswith(".json"):
            first, second = (json.loads((tmp_path / f"jobs{j}" / name).read_text()) for j in (1, 2))
            assert _masked(first) == _masked(second), name
            assert first["labs"] or first.get("predictions")  # a ledger with work in it, not two empty ones
    assert (tmp_path / "jobs1" / "roster.csv").read_bytes() == (tmp_path / "jobs2" / "roster.csv").read_bytes()


def test_jobs_below_one_are_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="jobs"):
        _make().make_class(tmp_path, students=2, jobs=0)

"""`python -m labs.grade <folder or files> [--csv out.csv] [--strict]`

Reads every ledger, validates it against assets/ledger.schema.json, recomputes each step's
outcomes from its stored inputs with the engine, and flags stored outcomes that disagree
(tampering, or an older engine). Malformed files are reported by name and skipped. Nothing in
a ledger is executed; the only file written is the --csv output.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

from labs.core.outcomes import OUTCOMES
from labs.core.state import parse_document

MAX_BYTES = 10_000_000  # a ledger is a few KB; anything this large is not one
TOLERANCE = 1e-6


def read_ledger(path: Path) -> dict:
    size = path.stat().st_size
    if size == 0:
        raise ValueError("empty file")
    if size > MAX_BYTES:
        raise ValueError(f"{size} bytes is larger than any ledger ({MAX_BYTES} max)")
    return parse_document(path.read_bytes())


def _agrees(stored, fresh) -> bool:
    if isinstance(fresh, float) and isinstance(stored, (int, float)) and not isinstance(stored, bool):
        return math.isclose(stored, fresh, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    return stored == fresh


def grade_document(doc: dict, source: str) -> list[dict]:
    rows = []
    for lab, steps in doc["labs"].items():
        for step, entry in steps.items():
            row = {"file": source, "student": doc["student"], "lab": lab, "step": step, "saved": entry["saved"]}
            row.update({f"input.{k}": v for k, v in entry["inputs"].items()})
            row.update({f"prediction.{k}": v for k, v in entry["predictions"].items()})
            recompute = OUTCOMES.get((lab, step))
            if recompute is None:
                row["status"] = "not graded (no engine check for this step)"
                rows.append(row)
                continue
            try:
                fresh = recompute(entry["inputs"], entry["predictions"])
            except (ValueError, KeyError, TypeError) as err:
                row["status"] = f"invalid inputs: {err}"
                rows.append(row)
                continue
            mismatched = [k for k, v in entry["outcomes"].items() if k in fresh and not _agrees(v, fresh[k])]
            row.update({k: v for k, v in fresh.items()})
            row["status"] = "ok" if not mismatched else f"stored outcome disagrees with the engine: {', '.join(sorted(mismatched))}"
            rows.append(row)
    return rows


def collect(paths: list[str]) -> list[Path]:
    files = []
    for p in map(Path, paths):
        files.extend(sorted(p.rglob("*.json")) if p.is_dir() else [p])
    return files


def grade(paths: list[str]) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    rows, problems = [], []
    for path in collect(paths):
        try:
            doc = read_ledger(path)
        except (ValueError, UnicodeDecodeError, OSError) as err:
            problems.append((str(path), str(err).splitlines()[0][:300]))
            continue
        rows.extend(grade_document(doc, str(path)))
    return pd.DataFrame(rows), problems


def summary(table: pd.DataFrame) -> pd.DataFrame:
    if table.empty or "prediction_correct" not in table:
        return pd.DataFrame()
    graded = table[table["prediction_correct"].notna()]
    return graded.groupby(["lab", "step"]).agg(
        students=("student", "nunique"),
        right_predictions=("prediction_correct", "mean"),
        median_mfu=("mfu", "median"),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labs.grade", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="ledger files or folders of them")
    parser.add_argument("--csv", help="write the per-step table here")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any file is malformed or any outcome disagrees")
    args = parser.parse_args(argv)
    table, problems = grade(args.paths)
    for name, why in problems:
        print(f"skipped {name}: {why}", file=sys.stderr)
    if table.empty:
        print("no gradable ledgers found")
    else:
        cols = [c for c in ("student", "lab", "step", "prediction_correct", "mfu", "fits", "status") if c in table]
        with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_colwidth", 60):
            print(table[cols].to_string(index=False))
            print()
            print(summary(table).to_string())
    if args.csv:
        table.to_csv(args.csv, index=False)
    flagged = (~table["status"].eq("ok")).any() if not table.empty else False
    return 1 if args.strict and (problems or flagged) else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Grade a class of 1,000 valid ledgers plus every hostile file the grader has met, and print the
time, the peak memory and what was named: `python benchmarks/bench_grade.py`.
Target (issue 14): under 15 s and under 300 MB on this 2-core machine, every bad file named, the
CSV written for everyone else. Also prints the schema check per save, cached against uncached."""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jsonschema

from labs.core import state
from labs.core.scenarios.lab05 import ACT1_OPTIONS, ACT2_DESIGNS, act1_outcomes, act2_outcomes
from labs.core.scenarios.lab07 import MICROBATCH_OPTIONS, UTILISATION_OPTIONS, pipeline_outcomes
from labs.core.state import DesignLedger

STUDENTS = 1000
ROOT = Path(__file__).resolve().parents[1]


def make_class(folder: Path) -> None:
    """1,000 ledgers written through DesignLedger's format: committed predictions (some changed,
    some skipped) and three graded steps each, from a few dozen distinct slider settings."""
    rng = random.Random(5)
    cache: dict = {}

    def outcomes(fn, inputs, preds):
        key = (fn.__name__, json.dumps(inputs, sort_keys=True), json.dumps(preds, sort_keys=True))
        if key not in cache:
            cache[key] = fn(inputs, preds)
        return cache[key]

    template = DesignLedger("template", folder / "template")
    template.save_step("lab", "x", {})
    base = template.load()
    for i in range(STUDENTS):
        cause, design = rng.choice([o.key for o in ACT1_OPTIONS]), rng.choice(list(ACT2_DESIGNS))
        util, micro = rng.choice([o.key for o in UTILISATION_OPTIONS]), rng.choice([o.key for o in MICROBATCH_OPTIONS])
        a1 = dict(gpus=rng.choice([8, 64, 512]), global_batch=512, fixed_per_gpu=False, fabric="ib-ndr", algorithm=rng.choice(["ring", "nvls"]), overlap=True, params_b=7)
        a2 = ACT2_DESIGNS[rng.choice(list(ACT2_DESIGNS))].as_dict()
        a3 = dict(p=rng.choice([2, 4, 8]), m=rng.choice([4, 8, 16]), schedule=rng.choice(["gpipe", "1f1b"]), v=1, tf=1.0, tb=2.0, tw=1.0)
        doc = {**base, "student": f"student {i:04d}", "labs": {}, "predictions": {
            "05_parallelism": {"cause": {"answer": cause, "committed": base["created"], "changes": [{"answer": "A", "at": base["created"]}] if i % 10 == 0 else []},
                               "design": {"answer": None if i % 25 == 0 else design, "committed": base["created"], "changes": []}}}}
        doc["labs"]["05_parallelism"] = {
            "act1": {"saved": base["created"], "inputs": a1, "predictions": {"cause": cause}, "outcomes": outcomes(act1_outcomes, a1, {"cause": cause})},
            "act2": {"saved": base["created"], "inputs": a2, "predictions": {"design": design}, "outcomes": outcomes(act2_outcomes, a2, {"design": design})},
        }
        p3 = {"utilisation": util, "microbatches": micro}
        doc["labs"]["07_pipeline_visualizer"] = {"pipeline": {"saved": base["created"], "inputs": a3, "predictions": p3, "outcomes": outcomes(pipeline_outcomes, a3, p3)}}
        (folder / state.ledger_filename(doc["student"])).write_text(json.dumps(doc))
    (folder / "template" / state.ledger_filename("template")).unlink()


def make_hostile(folder: Path) -> list[str]:
    """Every hostile file from issue 14; returns their names."""
    head = {"schema_version": 1, "engine_version": "0", "created": "t", "updated": "t"}

    def step(student, lab, name, inputs):
        return json.dumps({**head, "student": student, "labs": {lab: {name: {"saved": "t", "inputs": inputs, "predictions": {}, "outcomes": {}}}}})

    act1 = dict(gpus=64, global_batch=512, fixed_per_gpu=False, fabric="ib-ndr", algorithm="ring", overlap=True, params_b=7)
    files = {
        "x-global-batch-huge.json": step("h1", "05_parallelism", "act1", {**act1, "global_batch": 10**400}),
        "x-gpus-huge.json": step("h2", "05_parallelism", "act1", {**act1, "gpus": 8 * 10**300}),
        "x-bucket-tiny.json": step("h3", "05_parallelism", "act2", {"tp": 8, "pp": 8, "dp": 16, "global_batch": 1536, "bucket_bytes": 5e-324}),
        "x-plan-huge.json": step("h4", "05_parallelism", "act2", {"tp": 8, "pp": 8, "dp": 10**400, "global_batch": 1536}),
        "x-sweep-huge.json": step("h5", "06_zero_sweep", "sweep", dict(model="llama2-70b", gpu="h100-sxm", optimizer_state="fp32", micro_batch=10**400, seq_len=4096,
                                                                        recompute="full", flash_attention=True, offload=False, dp=8, zero_stage=3, microbatches=1)),
        "x-pipeline-memory.json": step("h6", "07_pipeline_visualizer", "pipeline", dict(p=1024, m=100000, schedule="1f1b", v=1, tf=1.0, tb=2.0, tw=1.0)),
        "x-text-number.json": step("h9", "05_parallelism", "act1", {**act1, "gpus": "64"}),
        "x-many-keys.json": step("h10", "05_parallelism", "act2", {f"k{i}": i for i in range(40000)}),
        "x-truncated.json": '{"schema_version": 1, "student": "x", "labs": {',
        "x-nan.json": json.dumps({**head, "student": "n", "labs": {}, "x": 1})[:-1] + ', "y": NaN}',
        "x-infinity.json": '{"schema_version": 1, "student": "x", "x": Infinity}',
        "x-future.json": json.dumps({**head, "schema_version": 9, "student": "f", "labs": {}}),
        "x-duplicate-keys.json": '{"student": "a", "student": "b"}',
    }
    valid = {  # within every limit: graded, not refused (the second is the engine's largest timeline)
        "v-pipeline-slider.json": step("h7", "07_pipeline_visualizer", "pipeline", dict(p=8, m=1, schedule="zb-h1", v=1, tf=1.0, tb=0.5, tw=2.0)),
        "v-pipeline-largest.json": step("h8", "07_pipeline_visualizer", "pipeline", dict(p=400, m=500, schedule="zb-h2", v=1, tf=1.0, tb=2.0, tw=1.0)),
    }
    for name, text in {**files, **valid}.items():
        (folder / name).write_text(text)
    (folder / "x-deep.json").write_bytes(b"[" * 100000 + b"]" * 100000)
    (folder / "x-100mb.json").write_bytes(b" " * 100_000_000)
    (folder / "x-latin1.json").write_bytes('{"student": "Jos\xe9"}'.encode("latin-1"))
    (folder / "x-symlink.json").symlink_to(folder / "x-truncated.json")
    os.mkfifo(folder / "x-fifo.json")
    return sorted(list(files) + ["x-deep.json", "x-100mb.json", "x-latin1.json", "x-symlink.json", "x-fifo.json"])


def schema_check_times() -> tuple[float, float]:
    ledger_doc = {"schema_version": 1, "student": "s", "engine_version": "1", "created": "t", "updated": "t", "labs": {}}
    n = 200
    start = time.perf_counter()
    for _ in range(n):
        jsonschema.validate(ledger_doc, state.load_schema())
    uncached = (time.perf_counter() - start) / n
    start = time.perf_counter()
    for _ in range(n):
        state.validate_document(ledger_doc)
    cached = (time.perf_counter() - start) / n
    return uncached, cached


def run_grader(*args: str) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run `python -m labs.grade` in a child; its time and peak RSS (the child's own, measured by
    a wrapper so earlier children do not count)."""
    probe = "import resource, runpy, sys; sys.argv = ['labs.grade', *sys.argv[1:]]\ntry:\n    runpy.run_module('labs.grade', run_name='__main__')\nfinally:\n    print('peak-kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)"
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    peak = next(int(line.split()[1]) for line in result.stderr.splitlines() if line.startswith("peak-kb")) / 1024
    return result, elapsed, peak


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "class"
        folder.mkdir()
        make_class(folder)
        bad = make_hostile(folder)
        out = Path(tmp) / "grades.csv"
        result, elapsed, peak_mb = run_grader(str(folder), "--csv", str(out))
        with out.open() as handle:
            rows = list(csv.DictReader(handle))
        largest = folder / "v-pipeline-largest.json"
        largest.rename(Path(tmp) / largest.name)
        _, elapsed_without, peak_without = run_grader(str(folder))
        _, elapsed_one, peak_one = run_grader(str(Path(tmp) / largest.name))
    named = [name for name in bad if name in result.stderr]
    students = {r["student"] for r in rows if r["status"] == "ok"}
    uncached, cached = schema_check_times()
    print(f"graded {STUDENTS} ledgers + {len(bad)} hostile files in {elapsed:.2f} s (target 15 s), peak {peak_mb:.0f} MB (target 300 MB), exit {result.returncode}")
    print(f"  without the one ledger at the engine's largest timeline (p=400, m=500, ZB-H2): {elapsed_without:.2f} s, peak {peak_without:.0f} MB;"
          f" that ledger alone: {elapsed_one:.2f} s, peak {peak_one:.0f} MB")
    print(f"hostile files named: {len(named)} of {len(bad)}; missing: {sorted(set(bad) - set(named)) or 'none'}")
    print(f"CSV: {len(rows)} rows, {len(rows[0]) if rows else 0} columns, {len(students)} students fully ok")
    print(f"schema check per save: {uncached * 1e3:.2f} ms re-reading the schema, {cached * 1e3:.3f} ms with the compiled validator")


if __name__ == "__main__":
    main()

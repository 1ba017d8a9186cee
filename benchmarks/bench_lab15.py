"""Lab 15's share of grading a class: `python benchmarks/bench_lab15.py [--students 1000]`.

Prints, each measured in a fresh Python process (CPU seconds, time.process_time; the class and the
cold ledger the least of --repeat processes, since other load on a shared machine still slows CPU time):
- one router run at the lab's size per scheme, with and without the node limit (a new setting,
  its draw of the token noise included: about 0.2 s of it);
- a class: scripts/make_class.py's student names and Lab 15 inputs (its _routing draw), every
  student's variant regenerated from their id and the class salt and their step recomputed
  (routing_outcomes at their variant), as labs/grading does for each ledger: the distinct
  variant settings and router runs the class reads (from labs/core/scenarios/lab15_runs.npz), the
  CPU for all and per ledger;
- one ledger graded cold (a grader that has run nothing yet);
- the class process's peak memory (imports included).
Issue #39's target: Lab 15 graded in under 50 ms of CPU per ledger; issue #34's budget: the
whole 1,000-ledger class (every lab) in 15 s."""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SALT = "bench-salt"
TARGET_MS_PER_LEDGER = 50.0


def _routing_draw():
    spec = importlib.util.spec_from_file_location("make_class", ROOT / "scripts" / "make_class.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._routing, module.student_name


def _grade_one(name: str, inputs: dict) -> dict:
    """What the grader recomputes for one Lab 15 ledger: the variant from the id and salt (checked
    against the ledger's record of it), the inputs checked, the outcomes at that variant."""
    from labs.core.scenarios import lab15, regenerate, variant

    drawn = variant(lab15.LAB, name, SALT)
    fresh, mismatches = regenerate(lab15.LAB, name, drawn.record(), SALT)
    assert not mismatches, mismatches
    lab15.check_inputs(inputs)
    predictions = {q: (f"{v.spec.answer:g}" if v.numeric else "A") for q, v in fresh.questions.items()}
    return lab15.routing_outcomes(inputs, predictions, variant=fresh)


def part_runs() -> dict:
    from labs.core.engine.routing import route
    from labs.core.scenarios import lab15

    out = {}
    for scheme in lab15.SCHEMES:
        for max_nodes in (lab15.NODES, 4):
            start = time.process_time()
            route(lab15.setting(scheme, max_nodes=max_nodes))
            out[f"{scheme}, max_nodes {max_nodes}"] = time.process_time() - start
    return out


def part_class(students: int) -> dict:
    from labs.core.scenarios import lab15

    draw, student_name = _routing_draw()
    rng = random.Random(5)
    ledgers = [(student_name(i), draw(rng)) for i in range(students)]
    start = time.process_time()
    settings, runs = set(), set()
    for name, inputs in ledgers:
        _grade_one(name, inputs)
    cpu = time.process_time() - start
    from labs.core.scenarios import variant

    for name, inputs in ledgers:
        settings.add(json.dumps(variant(lab15.LAB, name, SALT).settings, sort_keys=True))
    runs = len(lab15._RUNS)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the process's peak, imports included (KiB on Linux)
    return {"cpu_s": cpu, "ms_per_ledger": 1e3 * cpu / students, "distinct_settings": len(settings), "router_runs": runs, "peak_mb": peak_mb}


def part_cold() -> dict:
    draw, student_name = _routing_draw()
    name, inputs = student_name(0), draw(random.Random(5))
    start = time.process_time()
    _grade_one(name, inputs)
    return {"cpu_s": time.process_time() - start}


def _in_fresh_process(part: str, students: int) -> dict:
    code = f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import bench_lab15 as b; "
    code += {"runs": "print(json.dumps(b.part_runs()))", "class": f"print(json.dumps(b.part_class({students})))", "cold": "print(json.dumps(b.part_cold()))"}[part]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per measurement; the least CPU is printed")
    args = parser.parse_args()
    if args.students < 1:
        raise ValueError(f"students must be at least 1, got {args.students}")
    if args.repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {args.repeat}")
    for label, seconds in _in_fresh_process("runs", args.students).items():
        print(f"one router run ({label}): {seconds:.3f} s CPU")
    # the least of a few fresh processes: other load on a shared machine slows CPU time too (caches, SMT)
    cold = min((_in_fresh_process("cold", args.students) for _ in range(args.repeat)), key=lambda r: r["cpu_s"])
    print(f"one ledger graded cold: {cold['cpu_s']:.3f} s CPU")
    klass = min((_in_fresh_process("class", args.students) for _ in range(args.repeat)), key=lambda r: r["cpu_s"])
    print(f"class of {args.students}: {klass['distinct_settings']} distinct variant settings, {klass['router_runs']} router runs, "
          f"{klass['cpu_s']:.2f} s CPU, {klass['ms_per_ledger']:.2f} ms per ledger (target {TARGET_MS_PER_LEDGER:g}), "
          f"the process's peak memory {klass['peak_mb']:.0f} MB")
    return 0 if klass["ms_per_ledger"] < TARGET_MS_PER_LEDGER else 1


if __name__ == "__main__":
    sys.exit(main())

"""Grade a class of 1,000 ledgers (scripts/make_class.py: every lab, as its sliders draw them) plus
every hostile kind of the reliability audit (shared/reviews/reliability_e349cc8.md, G0b-G9, I8),
through a link to the class folder as an instructor might name it; print the time, the peak
memory, what was named and whether the CSV holds a formula: `python benchmarks/bench_grade.py`.
Target (issue 27): under 15 s and under 300 MB on this 2-core machine, every bad file named, the
CSV written for everyone else. Exit 1 when a target is missed."""

from __future__ import annotations

import argparse
import compileall
import csv
import importlib.util
import io
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import resource

import jsonschema

from labs.core import state

ROOT = Path(__file__).resolve().parents[1]
STUDENTS = 1000
TIME_TARGET_S, MEMORY_TARGET_MB = 15.0, 300.0
FEEDBACK_TARGET_S = 30.0  # issue 26: the same class graded with a feedback page per student and the grade book
HEAD = {"schema_version": 1, "engine_version": "0", "created": "t", "updated": "t"}
ACT1 = dict(gpus=64, global_batch=512, fixed_per_gpu=False, fabric="ib-ndr", algorithm="ring", overlap=True, params_b=7)
# the audit's 22 hostile student names (G0b), graded and flagged, never a formula or a split row in the CSV
HOSTILE_NAMES = ["=cmd|' /C calc'!A0", "+1+1", "-1+1", "@SUM(A1)", "\t=1", "\r=1+1", "x\r=1+1", " =1", "＝1+1", "\n=1+1", '"=1+1', ";=1",
                 "<img src=x onerror=alert(1)>", "\x1b[2J\x1b[31mred", "a\nb", "\u202eevil", "Jose\u0301", "n" * 200, "\u200bzero", "x\r\n@SUM(1)",
                 "<script>alert(1)</script>", "a\tb"]
LOOK_ALIKES = ["alice", "Alice", "ALICE", "Ａｌｉｃｅ", "𝐚𝐥𝐢𝐜𝐞"]  # I8: flagged as look-alikes
FORMULA = re.compile(r"^[\s\u200b-\u200f\ufeff]*[=+\-@＝＋－＠]")
NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")


def make_class(folder: Path, reuse: Path | None) -> None:
    """scripts/make_class.py's class (every student in their own variants, drawn with the class's
    salt; most ledgers signed), written by a process per core, or a copy of the one it wrote into
    `reuse` before (1,000 ledgers through DesignLedger, which fsyncs every save: 30 minutes with 2
    jobs on this 2-core machine at load 7-9, into /dev/shm where an fsync costs nothing)."""
    if reuse is not None and any(reuse.glob("*.json")):
        shutil.copytree(reuse, folder)
        return
    spec = importlib.util.spec_from_file_location("make_class", ROOT / "scripts" / "make_class.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make_class(folder, STUDENTS, seed=5, hostile=True, salt="bench-salt", jobs=os.cpu_count() or 1)
    if reuse is not None:
        shutil.rmtree(reuse, ignore_errors=True)
        shutil.copytree(folder, reuse)


def _subset(folder: Path, n: int, out: Path) -> Path:
    """The first n ledgers of `folder` in a folder of their own."""
    out.mkdir()
    for path in sorted(folder.glob("*.json"))[:n]:
        shutil.copyfile(path, out / path.name)
    return out


def remove_deep(folder: Path) -> None:
    """Remove a chain of nested folders bottom up (shutil.rmtree recurses: RecursionError at 1,200)."""
    chain = [folder]
    while (chain[-1] / "d").is_dir():
        chain.append(chain[-1] / "d")
    for path in reversed(chain):
        for child in path.iterdir():
            if not child.is_dir():
                child.unlink()
        path.rmdir()


def step(student: str, lab: str, name: str, inputs) -> str:
    return json.dumps({**HEAD, "student": student, "labs": {lab: {name: {"saved": "t", "inputs": inputs, "predictions": {}, "outcomes": {}}}}})


def make_hostile(folder: Path, outside: Path, template: dict) -> tuple[list[str], list[str]]:
    """Every hostile kind of the audit: (names the grader must name on stderr, file names it must
    grade into the CSV)."""
    named: dict[str, str | bytes] = {
        "h-int-10e400.json": step("h1", "05_parallelism", "act1", {**ACT1, "global_batch": 10**400}),
        "h-int-4302-digits.json": '{"schema_version": 1, "student": "x", "n": ' + "9" * 4302 + "}",
        "h-1e400.json": step("h2", "05_parallelism", "act1", {**ACT1, "global_batch": 1}).replace('"global_batch": 1', '"global_batch": 1e400'),
        "h-nan.json": step("h3", "05_parallelism", "act1", {**ACT1, "global_batch": 1}).replace('"global_batch": 1', '"global_batch": NaN'),
        "h-infinity.json": step("h4", "05_parallelism", "act1", {**ACT1, "global_batch": 1}).replace('"global_batch": 1', '"global_batch": Infinity'),
        "h-minus-infinity.json": step("h5", "05_parallelism", "act1", {**ACT1, "global_batch": 1}).replace('"global_batch": 1', '"global_batch": -Infinity'),
        "h-5e-324.json": step("h6", "05_parallelism", "act1", {**ACT1, "global_batch": 5e-324}),
        "h-1e308.json": step("h7", "05_parallelism", "act2", {"tp": 8, "pp": 8, "dp": 16, "global_batch": 1536, "bucket_bytes": 1e308}),
        "h-nesting-100000.json": b"[" * 100_000 + b"]" * 100_000,
        "h-nesting-33.json": json.dumps({**HEAD, "student": "n33", "labs": {}, "x": json.loads("[" * 33 + "]" * 33)}),
        "h-nesting-900.json": json.dumps({**HEAD, "student": "n900", "labs": {}}).replace('"labs": {}', '"labs": {}, "x": ' + "[" * 900 + "]" * 900),
        "h-100mb.json": b" " * 100_000_000,
        "h-999991-bytes.json": json.dumps({**HEAD, "student": "big", "labs": {}, "extra": "x" * 999_850})[:999_991],
        "h-40k-input-keys.json": step("h8", "05_parallelism", "act2", {f"k{i}": i for i in range(40_000)}),
        "h-40k-keys-in-a-value.json": step("h9", "05_parallelism", "act2", {"tp": {f"k{i}": i for i in range(40_000)}}),
        "h-binary.json": bytes(range(256)) * 40,
        "h-utf16.json": json.dumps({**HEAD, "student": "u", "labs": {}}).encode("utf-16"),
        "h-empty.json": b"",
        "h-whitespace.json": b" \n\t ",
        "h-duplicate-key.json": '{"student": "a", "student": "b"}',
        "h-schema-0.json": json.dumps({**HEAD, "schema_version": 0, "student": "s", "labs": {}}),
        "h-schema-text.json": json.dumps({**HEAD, "schema_version": "1", "student": "s", "labs": {}}),
        "h-schema-true.json": json.dumps({**HEAD, "schema_version": True, "student": "s", "labs": {}}),
        "h-schema-null.json": json.dumps({**HEAD, "schema_version": None, "student": "s", "labs": {}}),
        "h-schema-2.json": json.dumps({**HEAD, "schema_version": 2, "student": "s", "labs": {}}),
        "h-labs-list.json": json.dumps({**HEAD, "student": "s", "labs": []}),
        "h-inputs-string.json": step("h10", "05_parallelism", "act1", "gpus=64"),
        "h-student-int.json": json.dumps({**HEAD, "student": 7, "labs": {}}),
        "h-student-empty.json": json.dumps({**HEAD, "student": "", "labs": {}}),
        "h-top-list.json": "[1, 2]",
        "h-top-string.json": '"ledger"',
        "h-empty-ledger.json": json.dumps({**HEAD, "student": "José", "labs": {}}),  # G9
        # G3: the engine's largest timelines, each tf different so no cache helps: priced, not built
        **{f"h-timeline-{i}.json": step(f"t{i}", "07_pipeline_visualizer", "pipeline", dict(p=1024, m=195, schedule="zb-h1", v=1, tf=1.0 + i / 10, tb=1.0, tw=1.0)) for i in range(5)},
        # G1: 100 labs x 150 steps without an engine check, just under the 1,000,000-byte limit
        "h-unchecked-steps.json": json.dumps({**HEAD, "student": "many", "labs": {f"l{i:02d}": {f"{j}": {"saved": "t", "inputs": {}, "predictions": {}, "outcomes": {}} for j in range(150)} for i in range(100)}},
                                             separators=(",", ":")),
        # G6: terminal escapes in lab and step names
        "h-ansi-lab.json": step("ansi", "\x1b[2J\x1b[31mFORGED\x1b[0m", "\x1b[2Jstep", {}),
        "h-000.json": json.dumps({**HEAD, "student": "locked", "labs": {}}),  # mode 000 (named as root too: nothing to grade)
    }
    for name, text in named.items():
        (folder / name).write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    os.chmod(folder / "h-000.json", 0)
    os.mkfifo(folder / "h-fifo.json")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "h-socket.json"))
    sock.close()
    devices = []
    try:
        os.mknod(folder / "h-chardev.json", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
        devices.append("h-chardev.json")
    except OSError:  # not root: the kind cannot be made here
        pass
    (outside / "ledger.json").write_text(json.dumps({**template, "student": "outside"}))
    for name, target in {"h-link-zero.json": "/dev/zero", "h-link-urandom.json": "/dev/urandom", "h-link-passwd.json": "/etc/passwd",
                         "h-link-outside.json": str(outside / "ledger.json"), "h-link-dangling.json": str(folder / "nowhere"), "h-link-self.json": str(folder / "h-link-self.json")}.items():
        (folder / name).symlink_to(target)
    (folder / "h-linked-folder").symlink_to(outside, target_is_directory=True)
    (folder / "h-loop").symlink_to(folder, target_is_directory=True)
    (folder / "h-dir.json").mkdir()  # a folder named like a ledger: entered, empty
    deep = folder / "h-deep"  # G4: 1,200 folders deep, one level at a time (Path.mkdir(parents=True) recurses)
    deep.mkdir()
    for _ in range(1200):
        deep = deep / "d"
        deep.mkdir()
    (deep / "x.json").write_text("{}")
    (folder / "h-unreadable").mkdir()  # G7 (unreadable for a grader that is not root)
    (folder / "h-unreadable" / "ledger.json").write_text(json.dumps({**template, "student": "hidden"}))
    os.chmod(folder / "h-unreadable", 0)

    graded = []
    for i, name in enumerate(HOSTILE_NAMES + LOOK_ALIKES):
        path = folder / f"g-name-{i:02d}.json"
        path.write_text(json.dumps({**template, "student": name}))
        graded.append(path.name)
    os.link(outside / "ledger.json", folder / "g-hard-link.json")  # a plain file: graded
    graded.append("g-hard-link.json")
    (folder / "=cmd|' -C calc'!A0.json").write_text(json.dumps({**template, "student": "formula file name"}))
    graded.append("=cmd|' -C calc'!A0.json")
    (folder / os.fsdecode(b"g-\xff\xfe-student.json")).write_text(json.dumps({**template, "student": "cp437 zip"}))  # G5
    graded.append(os.fsdecode(b"g-\xff\xfe-student.json"))
    refused = sorted([*named, "h-fifo.json", "h-socket.json", *devices, "h-link-zero.json", "h-link-urandom.json", "h-link-passwd.json",
                      "h-link-outside.json", "h-link-dangling.json", "h-link-self.json", "h-linked-folder", "h-loop", "h-deep"])
    if os.geteuid() != 0:
        refused.append("h-unreadable")
    return refused, graded


def class_env(folder: Path) -> dict:
    """The class's class.env (the signing key and the class salt, as an instructor exports them)."""
    path = folder / "class.env"
    lines = path.read_text().splitlines() if path.exists() else []
    return dict(line.split("=", 1) for line in lines if "=" in line)


CLASS_ENV: dict = {}


def run_grader(*args: str) -> tuple[subprocess.CompletedProcess, float, float, float]:
    """Run `python -m labs.grade` in a child, with the class's class.env: its wall time, CPU time
    (user + system, what a busy machine does not inflate) and peak RSS (the child's own: Linux's
    VmHWM, the high-water mark of the child's memory; ru_maxrss also counts the parent's resident
    memory at the fork, which read ~600 MB for a grader that peaked at ~470)."""
    probe = ("import resource, runpy, sys; sys.argv = ['labs.grade', *sys.argv[1:]]\ntry:\n    runpy.run_module('labs.grade', run_name='__main__')\nfinally:\n"
             "    u = resource.getrusage(resource.RUSAGE_SELF)\n    peak = u.ru_maxrss\n"
             "    try:\n        peak = next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:'))\n"
             "    except OSError:\n        pass\n"
             "    print('peak-kb', peak, u.ru_utime + u.ru_stime, file=sys.stderr)")
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True, errors="backslashreplace", timeout=600,
                            env={**os.environ, **CLASS_ENV})
    elapsed = time.perf_counter() - start
    _, peak, cpu = next(line.split() for line in result.stderr.splitlines() if line.startswith("peak-kb"))
    return result, elapsed, float(cpu), int(peak) / 1024


def compile_bytecode() -> None:
    """Write the labs' bytecode before timing, as any grading after an instructor's first finds it
    (with PYTHONDONTWRITEBYTECODE, set in some containers, every timed run compiled the ~80 modules
    the grader imports from source: ~0.3 s of CPU). compileall writes it whatever that says."""
    compileall.compile_dir(ROOT / "labs", quiet=1)


def formula_cells(data: bytes) -> tuple[int, list[str]]:
    """Rows of the CSV and the cells a spreadsheet would read as a formula (or a row split
    inside a cell, which a spreadsheet reads as a new row)."""
    text = data.decode("utf-8")
    bad = [line[:60] for line in text.split("\r\n")[:-1] if "\r" in line or "\n" in line]
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    bad += [v for row in rows for v in row if FORMULA.match(v) and not v.startswith("'") and not NUMBER.fullmatch(v)]
    return len(rows), bad


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def schema_check_times(raws: list[bytes]) -> tuple[float, float, float, float]:
    """CPU seconds per ledger of the class: jsonschema re-reading the schema, jsonschema's cached
    validator class (Draft202012Validator built once), fastjsonschema's compiled schema (each on
    the parsed document), and what the grader runs: msgspec reading the bytes and checking them
    against the schema's types in one pass (labs.core.schema_types; jsonschema only for a refused
    ledger's message)."""
    docs = [json.loads(raw) for raw in raws]
    n = len(docs)
    start = cpu_s()
    for doc in docs[:50]:
        jsonschema.validate(doc, state.load_schema())
    uncached = (cpu_s() - start) / min(n, 50)
    validator = jsonschema.Draft202012Validator(state.load_schema())
    start = cpu_s()
    for doc in docs:
        jsonschema.exceptions.best_match(validator.iter_errors(doc))
    cached = (cpu_s() - start) / n
    fast = state._fast_validator()[0]
    start = cpu_s()
    for doc in docs:
        fast(doc)
    compiled = (cpu_s() - start) / n
    assert state._decoded(raws[0])[1], "the grader's typed read refused an honest ledger"
    start = cpu_s()
    for raw in raws:
        state._decoded(raw)
    typed = (cpu_s() - start) / n
    return uncached, cached, compiled, typed


def first_chart_times(folder: Path, salt: str | None) -> tuple[float, float, int]:
    """The dashboard's data in this process, CPU seconds: to its first chart (the folder read and
    validated, the first question's lab's committed answers mapped to each student's variant, its
    bars: instructor/class_dashboard.py's cells that the chart reads), and then the whole grading
    (the cell that runs last). In Chromium against the floor page: bench_browser.py --dashboard."""
    spec = importlib.util.spec_from_file_location("class_dashboard", ROOT / "instructor" / "class_dashboard.py")
    dashboard = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dashboard)
    from labs.gradebook import cache

    class_cache = cache.ClassCache(salt)
    start = cpu_s()
    documents, _ = class_cache.read(folder)
    first = dashboard.answered_questions(documents)[0]  # the question picker's first, read before any variant
    answers = dashboard.commit_answers(documents, salt, labs=(first[0],))
    dashboard.answer_figure(dashboard.answer_distribution(answers, first), first)
    to_chart = cpu_s() - start
    start = cpu_s()
    class_cache.refresh(folder)
    return to_chart, cpu_s() - start, len(documents)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reuse", type=Path, help="keep the generated class here and copy it from here on later runs")
    parser.add_argument("--repeat", type=int, default=3, help="grade the class this many times and report the median CPU time (this machine's speed moves +-10%% between runs)")
    parser.add_argument("--dashboard", action="store_true", help="also time the class dashboard's data: to its first chart, then the grading (200 and 1,000 ledgers)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder, outside = Path(tmp) / "class", Path(tmp) / "outside"
        outside.mkdir()
        start = time.perf_counter()
        make_class(folder, args.reuse)
        made = time.perf_counter() - start
        template = json.loads(next(folder.glob("student-000-*.ledger.json")).read_text())
        CLASS_ENV.update(class_env(folder))
        honest = [p.read_bytes() for p in sorted(folder.glob("student-*.ledger.json"))[:300]]
        refused, graded = make_hostile(folder, outside, template)
        linked = Path(tmp) / "linked-class"  # G8: the instructor names a link to the class folder
        linked.symlink_to(folder, target_is_directory=True)
        out = Path(tmp) / "grades.csv"
        compile_bytecode()
        runs = [run_grader(str(linked), "--csv", str(out)) for _ in range(args.repeat)]
        result, elapsed, cpu, peak_mb = sorted(runs, key=lambda run: run[2])[len(runs) // 2]  # the median run by CPU time
        cpus = [run[2] for run in runs]
        csv_rows, formulas = formula_cells(out.read_bytes()) if out.exists() else (0, ["no CSV written"])
        files_in_csv = {Path(r["file"]).name for r in csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"), newline=""))} if out.exists() else set()
        pages = Path(tmp) / "feedback"
        fb_result, fb_elapsed, fb_cpu, fb_peak = run_grader(str(linked), "--feedback", str(pages), "--gradebook", str(Path(tmp) / "book.csv"))
        fb_pages = len(list(pages.glob("*.html")))
        os.chmod(folder / "h-unreadable", 0o700)  # let the temporary folder be removed
        remove_deep(folder / "h-deep")
        if args.dashboard:
            plain = Path(tmp) / "plain-class"  # the honest class alone, as the dashboard reads it
            plain.mkdir()
            for path in folder.glob("student-*.ledger.json"):
                shutil.copyfile(path, plain / path.name)
            chart = {n: first_chart_times(_subset(plain, n, Path(tmp) / f"class-{n}"), CLASS_ENV.get("LABS_CLASS_SALT")) for n in (200, STUDENTS)}
    missing = [n for n in refused if n not in result.stderr]
    ungraded = [n for n in graded if n.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") not in files_in_csv]
    uncached, cached, compiled, typed = schema_check_times(honest)
    ok_time, ok_memory = cpu < TIME_TARGET_S, peak_mb < MEMORY_TARGET_MB
    print(f"class of {STUDENTS} ledgers written in {made:.0f} s (scripts/make_class.py)")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: wall time is an upper bound, CPU time what the grading cost")
    print(f"graded {STUDENTS} ledgers (variants drawn with the class salt, most signed) + {len(refused)} refused + {len(graded)} hostile-but-valid files: "
          f"{cpu:.2f} s CPU (median of {len(cpus)} runs: {', '.join(f'{c:.2f}' for c in cpus)}) = {cpu / TIME_TARGET_S:.2f} x the {TIME_TARGET_S:g} s target ({'met' if ok_time else 'MISSED'}), peak RSS {peak_mb:.0f} MB = "
          f"{peak_mb / MEMORY_TARGET_MB:.2f} x the {MEMORY_TARGET_MB:g} MB target ({'met' if ok_memory else 'MISSED'}); {elapsed:.2f} s wall; exit {result.returncode}")
    print(f"refused and named on stderr: {len(refused) - len(missing)} of {len(refused)}; missing: {missing or 'none'}")
    print(f"hostile-but-valid files in the CSV: {len(graded) - len(ungraded)} of {len(graded)}; missing: {ungraded or 'none'}")
    print(f"CSV: {csv_rows} rows; cells a spreadsheet would run as a formula or split: {len(formulas)} {formulas[:3] if formulas else ''}")
    print(f"stderr: {len(result.stderr.splitlines())} lines; raw ESC bytes on stdout: {result.stdout.count(chr(27))}")
    print(f"schema check per ledger of this class (CPU): {uncached * 1e3:.2f} ms jsonschema re-reading the schema, {cached * 1e3:.3f} ms jsonschema's "
          f"Draft202012Validator built once, {compiled * 1e3:.3f} ms fastjsonschema compiled (on the parsed document); the grader's: "
          f"{typed * 1e3:.3f} ms to read the bytes and check them in one pass (msgspec typed by the schema)")
    if args.dashboard:
        for n, (to_chart, grading, read) in chart.items():
            print(f"dashboard data, {read} ledgers (CPU, this process): first chart's {to_chart:.2f} s, then the grading {grading:.2f} s "
                  f"(before: the grading came first, the chart after it)")
    ok_feedback = min(fb_elapsed, fb_cpu) < FEEDBACK_TARGET_S and fb_peak < MEMORY_TARGET_MB and fb_pages >= STUDENTS and fb_result.returncode == 0
    print(f"with --feedback and --gradebook: {fb_pages} pages in {fb_elapsed:.2f} s wall, {fb_cpu:.2f} s CPU, peak {fb_peak:.0f} MB "
          f"(target {FEEDBACK_TARGET_S:g} s and {MEMORY_TARGET_MB:g} MB: {'met' if ok_feedback else 'MISSED'}), exit {fb_result.returncode}")
    return 0 if ok_time and ok_memory and ok_feedback and not missing and not ungraded and not formulas and result.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

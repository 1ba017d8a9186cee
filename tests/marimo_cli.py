"""`marimo check --strict` and `marimo export html` as the tests of the labs, the problem sets and
the dashboard run them, each notebook's verdict its own: one check run for every notebook (one
interpreter and marimo import, not one a notebook: 2-2.8 s each on 2 loaded cores), and the exports
a process each, as many at once as there are cores, which a test awaits one by one.

tests/conftest.py starts those the session's tests will await in the background as it begins
(start_in_background), one process at a time, on the core that most tests, one Python process
each, leave idle; when a test starts exports, those not begun yet move to the pool of as many as
there are cores."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LABS = tuple(sorted((ROOT / "labs").glob("[0-9][0-9]_*.py")))
PROBLEM_SETS = tuple(sorted((ROOT / "labs" / "problems").glob("ps[0-9][0-9]_*.py")))
DASHBOARD = ROOT / "instructor" / "class_dashboard.py"
NOTEBOOKS = (*LABS, *PROBLEM_SETS, DASHBOARD)


def _check(paths) -> tuple[subprocess.CompletedProcess, dict, dict[Path, list]]:
    """One `marimo check --strict` run: its process, its summary, its findings by file."""
    result = subprocess.run([sys.executable, "-m", "marimo", "check", "--strict", "--format", "json", *map(str, paths)], capture_output=True, text=True, cwd=ROOT)
    report = json.loads(result.stdout) if result.stdout.lstrip().startswith("{") else {"issues": [], "summary": {}}
    findings: dict[Path, list] = {}
    for issue in report["issues"]:
        findings.setdefault(Path(issue["filename"]).resolve(), []).append(issue)
    return result, report["summary"], findings


_CHECK: list[Future] = []  # the one check run of every notebook, once started


def _check_every_notebook():
    if not _CHECK:
        _CHECK.append(_pool().submit(_check, NOTEBOOKS))
    return _CHECK[0].result()


def strict_check_failure(path: Path) -> str:
    """Why `marimo check --strict path` would not exit 0, or "" when it would: a finding (a
    warning or an error) names it, or the shared run failed with no finding at all or checked
    fewer files than it was given."""
    path = Path(path).resolve()
    result, summary, findings = _check_every_notebook() if path in NOTEBOOKS else _check([path])
    own = findings.get(path, [])
    if own:
        return json.dumps(own, indent=1)
    if summary.get("total_files") != (len(NOTEBOOKS) if path in NOTEBOOKS else 1) or (result.returncode != 0 and not findings):
        return f"exit status {result.returncode}\n" + result.stdout[-2000:] + result.stderr[-2000:]
    return ""


_EXPORTS: dict[Path, Future] = {}


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=max(1, min(4, len(os.sched_getaffinity(0)))))


@functools.cache
def _background() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1)


def _export(path: Path, out: Path, env: dict) -> tuple[subprocess.CompletedProcess, Path]:
    result = subprocess.run([sys.executable, "-m", "marimo", "export", "html", str(path), "-o", str(out)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    return result, out


def start_exports(paths, folder: Path, pool=None) -> None:
    """Start `marimo export html` of each of `paths` not started yet, the HTML into `folder`,
    each run with a ledger folder of its own there; one still queued in the background moves to
    the pool of as many as there are cores. Each process gets its environment as a copy
    made here, in the test's thread: a child that inherits it reads the C environ that a test's
    monkeypatch.setenv may be reallocating at that moment (execv then fails with EFAULT, 'Bad
    address': 96 of 1,500 runs from two threads beside a setenv loop, 0 of 3,000 with the copy)."""
    for path in map(Path, paths):
        started = _EXPORTS.get(path.resolve())
        if started is None or (pool is None and started.cancel()):  # cancel(): it had not begun
            env = {**os.environ, "LABS_LEDGER_DIR": str(folder / f"{path.stem}-ledgers")}
            _EXPORTS[path.resolve()] = (pool or _pool()).submit(_export, path, folder / f"{path.stem}.html", env)


def start_in_background(exports, check: bool, folder: Path) -> None:
    """Begin, one process at a time, the check run of every notebook (with `check`) and the
    exports of `exports` into `folder`, before a test asks for them."""
    if check and not _CHECK:
        _CHECK.append(_background().submit(_check, NOTEBOOKS))
    start_exports(exports, folder, _background())


def exported(path: Path, folder: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """`marimo export html path`'s process and its HTML file, once it has run (started now,
    into `folder`, unless it has begun)."""
    start_exports([path], folder)
    return _EXPORTS[Path(path).resolve()].result()


def shutdown() -> None:
    """Drop the exports not started yet (a session stopped early) and wait for the running ones."""
    for pool in (_background, _pool):
        if pool.cache_info().currsize:
            pool().shutdown(cancel_futures=True)

"""deploy/check_hub.py as tests/test_hub.py runs it: `python deploy/check_hub.py`, a process of
its own begun when the session's collection ends (tests/conftest.py), so that its ~150 s, mostly
spent waiting for the hub, the students' servers and a live lecture in Chromium, pass beside the
tests before it instead of while its test waits; the test awaits its exit status and output.

Begun only where it can run (root, the hub extra, configurable-http-proxy); elsewhere the test
skips or fails by name as before, without a process started."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("jupyterhub", "configurable-http-proxy", "useradd", "runuser")
MODULES = ("jupyterhub", "jupyter_server_proxy", "pamela")

_RUN: dict = {}  # "proc", and the files its stdout and stderr go to


def missing() -> list[str]:
    """What the check needs and this machine lacks (tests/conftest.need names them)."""
    lacking = [c for c in COMMANDS if shutil.which(c) is None] + [m for m in MODULES if importlib.util.find_spec(m) is None]
    if os.geteuid() != 0:
        lacking.append("root (the check creates system users)")
    return lacking


def start() -> None:
    """Begin the check unless it has begun. Its environment is the session's, copied here (a
    child inheriting the C environ while a test's monkeypatch.setenv reallocates it can fail:
    tests/marimo_cli.py)."""
    if _RUN:
        return
    # files, not pipes (a pipe nobody reads fills and stalls the check), open until the test reads them
    out, err = (tempfile.TemporaryFile(mode="w+", prefix=f"check-hub-{name}-") for name in ("out", "err"))  # noqa: SIM115
    _RUN.update(out=out, err=err, proc=subprocess.Popen([sys.executable, str(ROOT / "deploy" / "check_hub.py")], cwd=ROOT, env=dict(os.environ),
                                                        stdin=subprocess.DEVNULL, stdout=out, stderr=err))


def result() -> tuple[int, str, str]:
    """The check's exit status, stdout and stderr, once it has run (begun now unless it has)."""
    start()
    code = _RUN["proc"].wait()
    out, err = (_RUN[name] for name in ("out", "err"))
    for file in (out, err):
        file.seek(0)
    return code, out.read(), err.read()


def stop() -> None:
    """A session ending before the test awaited the check: interrupt it (KeyboardInterrupt: its
    finally stops the hub and removes the users it made), then kill it if it lingers."""
    proc = _RUN.get("proc")
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

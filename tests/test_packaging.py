"""`pip install .` (not editable): the wheel carries the ledger schema, and in a virtualenv of its
own (no site packages borrowed: the audit's T1 failed inside the README's venv, whose
--system-site-packages child saw the base interpreter's packages, without filelock) the wheel and
its declared dependencies install, and a save and a grade work from any folder. The wheel is built
and its dependencies installed with uv (a test extra): `uv build --wheel` runs the same isolated
PEP 517 build as `pip wheel .` (the same 136 files, byte for byte) in 3 s of wall time where pip,
fetching setuptools for its build environment each time, took 10; the dependencies come in
seconds from uv's cache, where pip takes minutes."""

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SAVE_AND_GRADE = """
import json, sys
import labs
from labs.core import state
from labs.core.scenarios.lab05 import act1_outcomes
from labs.grade import main
inputs = dict(gpus=64, global_batch=512, fixed_per_gpu=False, fabric="ib-ndr", algorithm="ring", overlap=True, params_b=7)
ledger = state.DesignLedger("wheel student", sys.argv[1])
ledger.save_step("05_parallelism", "act1", inputs, {"cause": "B"}, act1_outcomes(inputs, {"cause": "B"}))
code = main([sys.argv[1], "--strict", "--csv", sys.argv[1] + "/grades.csv"])
from labs.core.scenarios import lab15
print(json.dumps({"labs": labs.__file__, "schema": str(state.SCHEMA_PATH), "exit": code, "stored_runs": sum(lab15.stored_run(k) is not None for k in lab15.instrument_keys())}))
"""


def test_wheel_carries_the_schema_and_installs_into_a_fresh_virtualenv(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "uv", "build", "--wheel", "--quiet", "-o", str(wheels), str(ROOT)], check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("parallelism_labs-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("labs/core/ledger.schema.json") == (ROOT / "assets" / "ledger.schema.json").read_bytes()
        assert "labs/grade.py" in archive.namelist()
        assert archive.read("labs/core/scenarios/lab15_runs.npz") == (ROOT / "labs" / "core" / "scenarios" / "lab15_runs.npz").read_bytes()

    venv = tmp_path / "venv"  # isolated: only the wheel and what its metadata asks for
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    installed = subprocess.run([sys.executable, "-m", "uv", "pip", "install", "-q", "--python", str(python), str(wheel)], capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    borrowed = subprocess.run([str(python), "-c", "import sys; print(sys.flags.no_site, [p for p in sys.path if 'site-packages' in p])"], capture_output=True, text=True, check=True)
    assert all(path.startswith(str(venv)) for path in eval(borrowed.stdout.split(" ", 1)[1])), borrowed.stdout
    work = tmp_path / "elsewhere"
    work.mkdir()
    out = subprocess.run([str(python), "-c", SAVE_AND_GRADE, str(work)], cwd=work, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["labs"].startswith(str(venv)) and result["schema"].startswith(str(venv)) and result["exit"] == 0
    assert result["stored_runs"] == 252  # Lab 15's runs read from the wheel: today's router, every instrument setting
    assert "wheel student" in (work / "grades.csv").read_text()


HOLD_AND_WAIT = """
import sys, time
sys.modules["fcntl"] = None  # a system without fcntl: filelock falls back to SoftFileLock
sys.path.insert(0, sys.argv[1])
from filelock import FileLock
lock = FileLock(sys.argv[2])  # kept: a dropped FileLock releases itself
lock.acquire()
print("held", flush=True)
time.sleep(120)
"""
ACQUIRE = """
import os, sys, time, warnings
sys.modules["fcntl"] = None
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import filelock
lock = filelock.FileLock(sys.argv[2], timeout=10)
lock.acquire()
print(filelock.__version__, type(lock).__name__)
"""


def test_filelock_minimum_recovers_a_lock_from_a_killed_holder(tmp_path):
    """The oldest filelock pyproject.toml allows, without fcntl: a holder SIGKILLed with the lock, and
    one killed between creating the lock file and writing itself into it (an empty file), leave a
    lock the next save takes within its timeout. Audit R2: 3.16, allowed by `filelock>=3.16`, wedged
    every later save until someone deleted the file (3.22 breaks the first, 3.29 the second)."""
    import re
    import signal
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [d for d in deps if d.startswith("filelock")]
    minimum = re.fullmatch(r"filelock>=([\d.]+)\b.*", spec).group(1)
    target = tmp_path / "filelock-minimum"
    subprocess.run([sys.executable, "-m", "uv", "pip", "install", "-q", "--target", str(target), f"filelock=={minimum}"], check=True, capture_output=True, timeout=300)

    killed = tmp_path / "killed.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_AND_WAIT, str(target), str(killed)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    empty = tmp_path / "empty.lock"
    empty.write_bytes(b"")
    os.utime(empty, (time.time() - 60, time.time() - 60))
    for lock in (killed, empty):
        taken = subprocess.run([sys.executable, "-c", ACQUIRE, str(target), str(lock)], capture_output=True, text=True, timeout=60)
        assert taken.returncode == 0, (lock.name, taken.stderr[-1000:])
        version, kind = taken.stdout.split()
        assert kind == "SoftFileLock" and version.split(".")[:3] == (minimum.split(".") + ["0", "0"])[:3]

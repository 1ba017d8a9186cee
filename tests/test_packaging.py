"""`pip install .` (not editable): the wheel carries the ledger schema, and in a fresh virtualenv a
save and a grade work from any folder."""

import json
import subprocess
import sys
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
print(json.dumps({"labs": labs.__file__, "schema": str(state.SCHEMA_PATH), "exit": code}))
"""


def test_wheel_carries_the_schema_and_installs_into_a_fresh_virtualenv(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(wheels)], check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("parallelism_labs-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("labs/core/ledger.schema.json") == (ROOT / "assets" / "ledger.schema.json").read_bytes()
        assert "labs/grade.py" in archive.namelist()

    venv = tmp_path / "venv"  # fresh, but borrowing this interpreter's packages for the dependencies
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True, timeout=300)
    work = tmp_path / "elsewhere"
    work.mkdir()
    out = subprocess.run([str(python), "-c", SAVE_AND_GRADE, str(work)], cwd=work, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["labs"].startswith(str(venv)) and result["schema"].startswith(str(venv)) and result["exit"] == 0
    assert "wheel student" in (work / "grades.csv").read_text()

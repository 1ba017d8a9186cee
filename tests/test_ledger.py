"""DesignLedger: schema, replacement, concurrency, crash safety, recovery."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from labs.core.state import DesignLedger, LedgerRecovered, load_schema

ROOT = Path(__file__).resolve().parents[1]


def test_seed_notebook_call_still_works(tmp_path):
    ledger = DesignLedger("s1", tmp_path)
    ledger.save(chapter="v2_05", design={"context": "3d", "tp": 8, "pp": 4})
    ledger.save(chapter="v2_05", design={"tp": 8}, track="mobile")
    doc = ledger.load()
    assert doc["labs"]["v2_05"]["design"]["inputs"]["pp"] == 4
    assert doc["labs"]["v2_05"]["mobile"]["inputs"] == {"tp": 8}


def test_every_written_document_validates_and_same_step_replaces(tmp_path):
    ledger = DesignLedger("s2", tmp_path)
    for mfu in (0.1, 0.2, 0.3):
        ledger.save_step("05_parallelism", "act1", {"gpus": 64}, {"cause": "B"}, {"mfu": mfu})
        jsonschema.validate(json.loads(ledger.export()), load_schema())
    steps = ledger.load()["labs"]["05_parallelism"]
    assert list(steps) == ["act1"] and steps["act1"]["outcomes"]["mfu"] == 0.3


def test_student_and_directory_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LABS_LEDGER_DIR", str(tmp_path / "ledgers"))
    monkeypatch.setenv("LABS_STUDENT", "../../x")
    ledger = DesignLedger()
    ledger.save_step("lab", "step", {"a": 1})
    assert ledger.path.parent == tmp_path / "ledgers" and ledger.path.name == "x.ledger.json"


def test_nan_is_refused_before_writing(tmp_path):
    ledger = DesignLedger("s3", tmp_path)
    ledger.save_step("lab", "one", {"a": 1})
    with pytest.raises(ValueError, match="finite"):
        ledger.save_step("lab", "two", {"a": float("nan")})
    assert list(ledger.load()["labs"]["lab"]) == ["one"]


def test_corrupt_file_is_moved_aside_and_reported(tmp_path):
    ledger = DesignLedger("s4", tmp_path)
    ledger.save_step("lab", "one", {"a": 1})
    ledger.path.write_text('{"schema_version": 1, "labs": ')
    with pytest.raises(LedgerRecovered) as info:
        ledger.load()
    assert info.value.moved_to.exists() and "labs" in info.value.moved_to.read_text()
    ledger.save_step("lab", "two", {"a": 2})
    assert list(ledger.load()["labs"]["lab"]) == ["two"]


WRITER = """
import sys
from labs.core.state import DesignLedger
ledger = DesignLedger("shared", sys.argv[1])
for i in range(int(sys.argv[3])):
    ledger.save_step("lab", f"{sys.argv[2]}-{i}", {"i": i})
    print(i, flush=True)
"""


def test_two_processes_200_steps_each_lose_nothing(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), name, "200"], cwd=ROOT, stdout=subprocess.DEVNULL) for name in ("a", "b")]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    steps = DesignLedger("shared", tmp_path).load()["labs"]["lab"]
    assert len(steps) == 400


def test_sigkill_mid_save_leaves_a_valid_file_with_every_returned_step(tmp_path):
    """Kill the writer with SIGKILL while it saves: not after a sleep (that would depend on how
    fast the machine is) but as soon as it has confirmed a given number of steps, so the kill
    lands in the middle of the writes that follow, whatever the machine's speed."""
    confirmed = 0
    for round_ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), f"r{round_}", "100000"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        seen = [proc.stdout.readline() for _ in range(3 + 5 * round_)]
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        lines = [line for line in seen + out.split("\n") if line.strip()]
        steps = DesignLedger("shared", tmp_path).load()["labs"]["lab"]  # raises if the file is broken
        last_returned = int(lines[-1])
        for i in range(last_returned + 1):
            assert f"r{round_}-{i}" in steps
        confirmed += last_returned + 1
    assert confirmed >= 6 * 3

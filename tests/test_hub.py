"""The class JupyterHub of deploy/ (issue 27, rows H1-H8 of the reliability audit; issue 26 item 8).

The configuration refuses to start without what a class needs (root to start servers as their
students, an instructor, a signing key that is neither empty, short nor an example), and
deploy/check_hub.py starts it with two students and an instructor as real system users and
checks sign-in, separate uids, no terminal, kernel, file writes, `marimo edit` or /proxy/<port>,
private homes and ledgers, signed commits and the instructor's dashboard (about 100 s). .ci/run
installs JupyterHub and configurable-http-proxy and runs as root, so under CI a missing piece
fails instead of skipping."""

import importlib.util
import os
import runpy
import shutil
from pathlib import Path

import pytest
from conftest import missing_modules, need

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "deploy" / "jupyterhub_config.py"
NEEDED = ("jupyterhub", "configurable-http-proxy", "useradd", "runuser")
MODULES = ("jupyterhub", "jupyter_server_proxy", "pamela")
HUB_EXTRA = "pip install -e '.[hub]'"


def load_config(monkeypatch, **env):
    need(missing_modules("traitlets"), HUB_EXTRA)
    import traitlets.config

    for name in ("HUB_INSTRUCTOR", "LABS_SIGNING_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(CONFIG), init_globals={"get_config": traitlets.config.Config})


def test_the_hub_refuses_to_start_without_root_an_instructor_or_a_real_key(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("HUB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("LABS_LECTURE_DIR", str(tmp_path / "lecture"))
    if os.geteuid() != 0:
        with pytest.raises(SystemExit):
            load_config(monkeypatch, HUB_INSTRUCTOR="teach", LABS_SIGNING_KEY="k" * 32)
        assert "run the hub as root" in capsys.readouterr().err
        return
    cases = {
        "HUB_INSTRUCTOR is not set": {"LABS_SIGNING_KEY": "k" * 32},
        "LABS_SIGNING_KEY is not set": {"HUB_INSTRUCTOR": "teach"},
        "at least 16 characters": {"HUB_INSTRUCTOR": "teach", "LABS_SIGNING_KEY": "change-me"},
    }
    for message, env in cases.items():
        with pytest.raises(SystemExit) as stop:
            load_config(monkeypatch, **env)
        assert stop.value.code == 2 and message in capsys.readouterr().err, message


def test_a_student_server_allows_reads_only():
    spec = importlib.util.spec_from_file_location("labs_singleuser", ROOT / "deploy" / "singleuser" / "labs_singleuser.py")
    need(missing_modules("jupyter_server_proxy"), HUB_EXTRA)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    authorizer = module.ReadOnlyAuthorizer()
    allowed = {(a, r) for a in ("read", "write", "execute") for r in ("contents", "kernels", "terminals", "sessions", "files", "api") if authorizer.is_authorized(None, None, a, r)}
    assert allowed == {("read", "contents"), ("read", "files"), ("read", "api")}


@pytest.mark.browser
def test_the_hub_keeps_students_apart(need_chromium, capsys):
    missing = [c for c in NEEDED if shutil.which(c) is None] + missing_modules(*MODULES)
    if os.geteuid() != 0:
        missing.append("root (the check creates system users)")
    need(missing, HUB_EXTRA + "; npm install -g configurable-http-proxy")
    spec = importlib.util.spec_from_file_location("check_hub", ROOT / "deploy" / "check_hub.py")
    check_hub = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_hub)
    code = check_hub.main()
    print(capsys.readouterr().out)
    assert code == 0

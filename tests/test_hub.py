"""The class JupyterHub of deploy/ (issue 14): started on 127.0.0.1 with two users, each opens
Lab 07 through marimo's Jupyter proxy in Chromium, commits and submits, and each ledger lands in
that user's own home and nowhere else. The check itself is deploy/check_hub.py (also run by
hand after changing the deployment); .ci/run installs JupyterHub, the proxies and
configurable-http-proxy, so under CI a missing piece fails instead of skipping."""

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NEEDED = ("jupyterhub", "configurable-http-proxy")
MODULES = ("jupyterhub", "jupyter_server_proxy", "jupyter_marimo_proxy")


@pytest.mark.browser
def test_two_hub_users_keep_their_ledgers_apart(need_chromium, capsys):
    missing = [c for c in NEEDED if shutil.which(c) is None] + [m for m in MODULES if importlib.util.find_spec(m) is None]
    if missing:
        message = f"the class hub needs {', '.join(missing)} (pip install -e '.[hub]'; npm install -g configurable-http-proxy)"
        if os.environ.get("CI"):
            pytest.fail(message + "; CI must run the hub check")
        pytest.skip(message)
    spec = importlib.util.spec_from_file_location("check_hub", ROOT / "deploy" / "check_hub.py")
    check_hub = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_hub)
    code = check_hub.main()
    print(capsys.readouterr().out)
    assert code == 0

"""Start the class JupyterHub of deploy/jupyterhub_config.py on 127.0.0.1 with two users, open
Lab 07 for each through marimo's Jupyter proxy in a real browser, submit, and check that each
ledger lands in its own home and nowhere else: `python deploy/check_hub.py`.

Needs: pip install -e ".[hub]"; npm install -g configurable-http-proxy; Debian's chromium
(.ci/run installs them all). tests/test_hub.py runs it in the suite; run it by hand after
changing the deployment. Exits 0 when every check passes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser import CHROMIUM_ARGS, chromium_path, free_port, wait_until_serving  # noqa: E402

USERS = ("alice", "bob")


def run_lab_as(browser, base: str, user: str, password: str) -> None:
    from labs.core.scenarios.lab07 import UTILISATION_OPTIONS

    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{base}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", password)
    page.click("#login_submit")
    page.wait_for_url(f"**/user/{user}/**")
    page.goto(f"{base}/user/{user}/marimo/?file=parallelism-labs/07_pipeline_visualizer.py")
    page.get_by_text("import marimo as mo").first.wait_for()
    page.locator('[data-testid="run-button"]').last.click()  # marimo edit opens a notebook without running it: run all
    try:
        page.get_by_label("Your name or student id (goes into your design ledger)").wait_for(timeout=90_000)
    except Exception:
        page.screenshot(path=f"/tmp/hub-{user}.png")
        raise
    page.get_by_label("Your name or student id (goes into your design ledger)").fill(user)
    page.keyboard.press("Tab")
    page.get_by_text(f"C) {UTILISATION_OPTIONS[2].label}", exact=False).first.click()
    page.get_by_role("button", name="Commit my prediction").first.click()  # a commitment is saved at once
    page.get_by_role("button", name="Submit to the ledger").click()
    page.get_by_text(re.compile(r"Saved .*to")).first.wait_for()
    context.close()


SOURCE_DIGEST = """import hashlib, pathlib, labs
root = pathlib.Path(labs.__file__).parent
print(hashlib.sha256(b"".join(p.relative_to(root).as_posix().encode() + p.read_bytes() for p in sorted(root.rglob("*.py")))).hexdigest())"""


def labs_digest(python: str, cwd: str) -> str | None:
    """A digest of the labs package's Python sources as `python` imports it from `cwd`, or None
    when it cannot import labs."""
    found = subprocess.run([python, "-c", SOURCE_DIGEST], cwd=cwd, capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else None


def main() -> int:
    from playwright.sync_api import sync_playwright

    from labs.core.state import ledger_filename

    # The hub's notebooks import the installed package (editable or not): one installed from
    # another clone, or none, makes every lab fail to start, seen as a page that never renders.
    served, here = labs_digest(sys.executable, tempfile.gettempdir()), labs_digest(sys.executable, str(ROOT))
    if served != here:
        print(f"FAIL: the labs package the hub would serve is {'not installed' if served is None else 'not the code of ' + str(ROOT)}: run pip install -e '.[hub]' in {ROOT}")
        return 1

    homes = Path(tempfile.mkdtemp(prefix="labs-hub-"))
    port, password = free_port(), "check-hub-password"
    env = {**os.environ, "HUB_PORT": str(port), "HUB_HOMES": str(homes), "HUB_PASSWORD": password}
    env.pop("LABS_LEDGER_DIR", None)
    log = (homes / "hub.log").open("w")
    hub = subprocess.Popen(["jupyterhub", "-f", str(ROOT / "deploy" / "jupyterhub_config.py")], cwd=homes, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    start = time.time()
    try:
        wait_until_serving(f"{base}/hub/login", hub, 90)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
            try:
                for user in USERS:
                    run_lab_as(browser, base, user, password)
            finally:
                browser.close()
        found = {user: sorted(str(p.relative_to(homes)) for p in homes.rglob("*.ledger.json") if p.parts[len(homes.parts)] == user) for user in USERS}
        every = sorted(str(p.relative_to(homes)) for p in homes.rglob("*.ledger.json"))
        expected = {user: [f"{user}/.parallelism_labs/{ledger_filename(user)}"] for user in USERS}
        for user in USERS:
            doc = json.loads((homes / expected[user][0]).read_text())
            assert doc["student"] == user and "07_pipeline_visualizer" in doc["labs"], doc
        ok = found == expected and every == sorted(sum(expected.values(), []))
        print(json.dumps({"ok": ok, "seconds": round(time.time() - start, 1), "ledgers": every}, indent=2))
        return 0 if ok else 1
    finally:
        hub.terminate()
        try:
            hub.wait(timeout=20)
        except subprocess.TimeoutExpired:
            hub.kill()
        log.close()
        print(f"hub log: {homes / 'hub.log'}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())

import json
import os
import re
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

SESSION_LEDGERS = pytest.StashKey[tuple[Path, "str | None"]]()


def pytest_configure(config):
    """One ledger folder for the session, made here and removed at its end: a lab run headless, a
    `marimo run` or an export that names no folder of its own writes there, never in the
    developer's ~/.parallelism_labs (labs.core.state's default), which a test could then read.
    Set before collection, so the background runs begun when it ends (marimo_cli, hub_check)
    inherit it; deploy/check_hub.py drops it and gives each student's server its own folder."""
    import tempfile

    config.addinivalue_line("markers", "serves(notebook): the test serves this notebook with served_ledgers alone (its server is started while the test before runs)")
    folder = Path(tempfile.mkdtemp(prefix="labs-ledgers-"))
    config.stash[SESSION_LEDGERS] = folder, os.environ.get("LABS_LEDGER_DIR")
    os.environ["LABS_LEDGER_DIR"] = str(folder)


def pytest_unconfigure(config):
    if SESSION_LEDGERS not in config.stash:
        return
    import shutil

    folder, before = config.stash[SESSION_LEDGERS]
    if before is None:
        os.environ.pop("LABS_LEDGER_DIR", None)
    else:
        os.environ["LABS_LEDGER_DIR"] = before
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def published():
    rows = json.loads((DATA / "published_numbers.json").read_text())
    return {row["id"]: row for row in rows}


@pytest.fixture(scope="session")
def synthetic_class(tmp_path_factory):
    """scripts/make_class.py's class, built once for the session (about a minute of CPU a build,
    which three tests each paid): 16 students, seed 5, the class salt "demo-salt", hostile files,
    and a quarter late and 15% edited so a small class has both. `.make` the module (its
    NEVER_SUBMITTED...), `.folder`, `.roster`, `.env` the class.env lines (signing key, salt).
    Read only: a test writes its outputs under its own tmp_path."""
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location("make_class", Path(__file__).resolve().parents[1] / "scripts" / "make_class.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    make.LATE, make.EDITED = 0.25, 0.15  # this module object only: enough late and edited students in a small class
    folder = tmp_path_factory.mktemp("synthetic") / "class"
    roster = make.make_class(folder, students=16, seed=5, salt="demo-salt")
    env = {}
    for line in (folder / "class.env").read_text().splitlines():
        name, _, value = line.partition("=")
        env[name.strip()] = value.strip()
    return SimpleNamespace(make=make, folder=folder, roster=roster, env=env)


@pytest.fixture
def ledger_dir(tmp_path, monkeypatch):
    """Point every DesignLedger of the test at a fresh folder."""
    monkeypatch.setenv("LABS_LEDGER_DIR", str(tmp_path))
    return tmp_path


def report(label: str, predicted: float, expected: float) -> float:
    """Print one comparison line (pytest -s shows them) and return the relative error."""
    error = predicted / expected - 1 if expected else predicted
    print(f"{label:50s} engine {predicted:12.4g}  reference {expected:12.4g}  error {error:+.2%}")
    return error


def need(missing: list[str], install: str) -> None:
    """Skip a test whose extra pieces are missing, naming them and how to install them; under
    CI=true fail instead, since CI installs everything and must run every test."""
    if not missing:
        return
    message = f"needs {', '.join(missing)} ({install})"
    if os.environ.get("CI"):
        pytest.fail(message + "; CI must run this test")
    pytest.skip(message)


def missing_modules(*modules: str) -> list[str]:
    import importlib.util

    return [m for m in modules if importlib.util.find_spec(m) is None]


@pytest.fixture(scope="module")
def need_chromium():
    """Browser tests need Debian's chromium: skipped without it locally, failed under CI."""
    from browser import chromium_path

    if chromium_path() is None:
        message = "Debian's chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message + "; CI must run the browser tests")
        pytest.skip(message)


def served_ledgers_of(item) -> Path:
    """The ledger folder of a test marked `serves`: its own, under the session's, known before the
    test starts (its server is started then)."""
    return Path(os.environ["LABS_LEDGER_DIR"]) / "served" / re.sub(r"[^\w.-]", "_", item.nodeid)


@pytest.fixture
def served_ledgers(request) -> Path:
    """A test marked `serves`: the ledger folder its notebook is served with (marimo_run's
    LABS_LEDGER_DIR), so the server conftest starts ahead for it is the one it asks for."""
    return served_ledgers_of(request.node)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """While a test runs, the next test's server starts, when that test is marked `serves` (the
    notebook it serves with only served_ledgers in its environment)."""
    serves = nextitem.get_closest_marker("serves") if nextitem is not None else None
    if serves is not None:
        from browser import chromium_path, start_ahead

        if chromium_path() is not None:  # else the test skips (or fails under CI) before serving
            start_ahead(serves.args[0], served_ledgers_of(nextitem))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """One Chromium for the browser tests that run one after another (their files sort together),
    a window each; closed before any other test, whose asyncio.run() its Playwright would refuse."""
    wanted = item.get_closest_marker("browser") is not None
    if wanted or "browser" in sys.modules:
        from browser import keep_chromium

        keep_chromium(wanted)


# The tests that await tests/marimo_cli.py's runs: the labs' exports, the problem sets' check and
# export, the labs' and the dashboard's checks.
EXPORTS_FOLDER = pytest.StashKey[Path]()
EXPORTS_LABS, EXPORTS_PROBLEM_SETS, CHECKS = {"test_export_html_exits_0"}, {"test_marimo_check_and_export"}, {"test_marimo_check_strict", "test_marimo_check_and_export"}


# tests/test_hub.py's test that awaits deploy/check_hub.py (tests/hub_check.py)
HUB_CHECK = "test_the_hub_keeps_students_apart"


def pytest_collection_finish(session):
    """Begin in the background the marimo runs the selected tests will await (tests/marimo_cli.py)
    and the hub check (tests/hub_check.py), so they run beside the tests before them instead of
    while a test waits."""
    names = {item.originalname for item in session.items if isinstance(item, pytest.Function)}
    if session.config.option.collectonly:
        return
    if HUB_CHECK in names:
        import hub_check

        if not hub_check.missing():
            hub_check.start()
    if not names & (EXPORTS_LABS | EXPORTS_PROBLEM_SETS | CHECKS):
        return
    import tempfile

    import marimo_cli

    exports = (marimo_cli.LABS if names & EXPORTS_LABS else ()) + (marimo_cli.PROBLEM_SETS if names & EXPORTS_PROBLEM_SETS else ())
    session.config.stash[EXPORTS_FOLDER] = folder = Path(tempfile.mkdtemp(prefix="marimo-exports-"))
    marimo_cli.start_in_background(exports, bool(names & CHECKS), folder)


def pytest_sessionfinish(session):
    if "hub_check" in sys.modules:
        sys.modules["hub_check"].stop()  # a session stopped before its test awaited it
    if "browser" in sys.modules:
        sys.modules["browser"].keep_chromium(False)
        sys.modules["browser"].stop_ahead()  # a test that did not run, or failed before its server
    if "marimo_cli" in sys.modules:
        sys.modules["marimo_cli"].shutdown()  # a session stopped early starts no more exports
    if EXPORTS_FOLDER in session.config.stash:
        import shutil

        shutil.rmtree(session.config.stash[EXPORTS_FOLDER], ignore_errors=True)

"""The session's own ledger folder (tests/conftest.py's pytest_configure): a ledger made with no
folder named, as a lab run headless or served makes it, lands there, never in the developer's
~/.parallelism_labs, which a later test could read."""

import os
from pathlib import Path

from labs.core.state import DEFAULT_DIR, DesignLedger


def test_a_ledger_without_a_folder_lands_in_the_sessions_folder():
    folder = Path(os.environ["LABS_LEDGER_DIR"])
    assert folder.is_dir() and folder.name.startswith("labs-ledgers-")
    assert folder != DEFAULT_DIR and DEFAULT_DIR not in folder.parents
    assert DesignLedger("session student").directory == folder


def test_a_tests_own_folder_replaces_it_for_that_test(ledger_dir):
    assert DesignLedger("session student").directory == ledger_dir
    assert not ledger_dir.name.startswith("labs-ledgers-")

"""The class salt (issue 34 item 2, issue 38 item 3, audit N1): every lab, the grader, the grade
book and the dashboard read it through one function, labs.variants.class_salt (LABS_CLASS_SALT,
or a salt given); `python -m labs.variants` prints a variant, keys included, only with a salt
given (--no-salt prints the unsalted one and says so); a lab run without a salt says so on its
first screen. The hub's side (it refuses to start without one and passes it to every student's
server) is in tests/test_hub.py and deploy/check_hub.py."""

import json
import subprocess
import sys

import pytest

from labs import variants
from labs.variants import class_salt, salt_fingerprint, variant

SALT = "a-class-salt-of-24-chars"


@pytest.fixture
def no_salt(monkeypatch):
    monkeypatch.delenv("LABS_CLASS_SALT", raising=False)
    for name in ("JUPYTERHUB_USER", "LABS_SHARED", "LABS_ROSTER"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_cli_prints_no_variant_without_a_salt(no_salt, capsys):
    for argv in (["05", "bob"], ["05", "bob", "--salt", ""]):
        assert variants.main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and "no class salt" in err and "--no-salt" in err


def test_the_cli_prints_the_salted_variant_from_salt_or_environment(no_salt, capsys):
    assert variants.main(["05", "bob", "--salt", SALT]) == 0
    given = json.loads(capsys.readouterr().out)
    no_salt.setenv("LABS_CLASS_SALT", SALT)
    assert variants.main(["05", "bob"]) == 0
    from_env = json.loads(capsys.readouterr().out)
    v = variant("05", "bob", salt=SALT)
    assert given == from_env and given["variant"] == v.seed and given["salt"] == salt_fingerprint(SALT)
    assert {q: d.get("key") for q, d in given["questions"].items()} == {q: v.questions[q].key for q in v.questions}


def test_no_salt_prints_the_unsalted_variant_and_says_so(no_salt, capsys):
    no_salt.setenv("LABS_CLASS_SALT", SALT)  # --no-salt wins over the environment, loudly
    assert variants.main(["05", "bob", "--no-salt"]) == 0
    out, err = capsys.readouterr()
    printed = json.loads(out)
    assert "UNSALTED" in err and printed["variant"] == variant("05", "bob", salt="").seed != variant("05", "bob", salt=SALT).seed
    assert printed["salt"] == salt_fingerprint("") == "b3c5dfe1368d"  # the fingerprint audit N1 found in hub ledgers
    with pytest.raises(SystemExit):
        variants.main(["05", "bob", "--no-salt", "--salt", SALT])  # one or the other


def test_python_m_labs_variants_refuses_without_a_salt(no_salt):
    import os

    env = {k: v for k, v in os.environ.items() if k != "LABS_CLASS_SALT"}
    done = subprocess.run([sys.executable, "-m", "labs.variants", "05", "bob"], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == "" and "no class salt" in done.stderr


def test_one_function_reads_the_salt(no_salt):
    assert class_salt() == "" and class_salt("given") == "given"
    no_salt.setenv("LABS_CLASS_SALT", SALT)
    assert class_salt() == SALT and class_salt("given") == "given"
    # the labs, the grader and the grade book draw through it: no salt passed means the environment's
    assert variant("07", "ada").seed == variant("07", "ada", salt=SALT).seed != variant("07", "ada", salt="").seed


def test_a_lab_without_a_salt_says_so_on_its_first_screen(no_salt):
    from labs.core import ui

    local = ui.salt_notice()
    assert local is not None and "unsalted" in local.text
    no_salt.setenv("LABS_SHARED", "1")
    served = ui.salt_notice()
    assert served is not None and "served without a class salt" in served.text
    no_salt.setenv("JUPYTERHUB_USER", "bob")
    assert "served without a class salt" in ui.salt_notice().text
    no_salt.setenv("LABS_CLASS_SALT", SALT)
    assert ui.salt_notice() is None


def test_the_dashboards_cache_is_kept_per_class_salt_from_the_environment(no_salt, tmp_path):
    """The dashboard passes no --salt when the salt is in LABS_CLASS_SALT: its stored grades must
    still be kept per salt, or a restart with another salt reads rows graded with the first."""
    from labs.gradebook.cache import ClassCache

    no_salt.setenv("LABS_CLASS_SALT", SALT)
    first = ClassCache(None, tmp_path)
    no_salt.setenv("LABS_CLASS_SALT", "another-class-salt-0123")
    second = ClassCache(None, tmp_path)
    assert first.salt == SALT and second.salt == "another-class-salt-0123"
    assert first._store_file(tmp_path) != second._store_file(tmp_path)
    assert ClassCache(SALT, tmp_path)._store_file(tmp_path) == first._store_file(tmp_path)


def test_every_lab_shows_the_notice_above_its_questions(no_salt):
    """lab_variant(), which every lab calls right after its identity cell, puts the notice in
    that cell's output (checked in a real kernel by `marimo export html`: the page says
    "unsalted"), and nothing with a salt."""
    import marimo as mo

    from labs.core import ui

    appended = []
    no_salt.setattr(mo.output, "append", appended.append)
    assert ui.lab_variant("05_parallelism", "bob").lab == "05_parallelism"
    assert len(appended) == 1 and "unsalted" in appended[0].text
    no_salt.setenv("LABS_CLASS_SALT", SALT)
    appended.clear()
    assert ui.lab_variant("05_parallelism", "bob").salt == salt_fingerprint(SALT) and appended == []

"""Who owns a ledger: PINs, roster codes, a shared server's limits, and what the lab shows when a
save cannot happen. The browser test serves one lab to two browser contexts: B cannot read or
overwrite A's ledger."""

import errno
import json
from pathlib import Path

import pytest

from labs.core import state, ui
from labs.core.state import DesignLedger, LedgerLocked, LedgerUnavailable, Roster


class Button:
    def __init__(self, pressed):
        self.value = pressed

    def _mime_(self):
        return "text/plain", "button"


STEP = [("07_pipeline_visualizer", "pipeline", {"p": 4}, {"utilisation": "C"}, {})]


@pytest.fixture(autouse=True)
def fresh_attempts():
    state.ATTEMPTS.clear()  # wrong tries and new-ledger counts live in the process, as on a server
    yield
    state.ATTEMPTS.clear()


def submit(identity, pressed=True, steps=STEP):
    view, saved = ui.submit_to_ledger(identity, Button(pressed), lambda: steps)
    return view.text, saved


def test_a_pin_set_at_the_first_save_guards_every_later_read_and_save(tmp_path):
    alice = DesignLedger("alice", tmp_path, secret="4821")
    alice.save_step("lab", "one", {"a": 1})
    before = alice.path.read_bytes()
    owner = alice.owner_path.read_text()
    record = json.loads(owner)  # the PIN is kept only as its salted hash (whose hex may hold the digits 4821 by chance: 1 run in ~700)
    assert record["scheme"] == "pbkdf2_sha256" and "4821" not in {str(v) for v in record.values()}
    for secret in (None, "0000"):
        intruder = DesignLedger("alice", tmp_path, secret=secret)
        for call in (intruder.load, intruder.export, lambda: intruder.save_step("lab", "one", {"a": 666}), lambda: intruder.commit_prediction("lab", "q", "A")):
            with pytest.raises(LedgerLocked, match="PIN"):
                call()
    assert alice.path.read_bytes() == before
    assert DesignLedger("alice", tmp_path, secret="4821").load()["labs"]["lab"]["one"]["inputs"] == {"a": 1}


def test_a_shared_server_requires_a_pin_and_bounds_the_number_of_ledgers(tmp_path, monkeypatch):
    with pytest.raises(LedgerLocked, match="choose a PIN"):
        DesignLedger("bo", tmp_path, shared=True).save_step("lab", "one", {})
    with pytest.raises(LedgerLocked, match="at least 4"):
        DesignLedger("bo", tmp_path, secret="12", shared=True).save_step("lab", "one", {})
    assert not list(tmp_path.glob("*.ledger.json"))
    DesignLedger("bo", tmp_path, secret="1234", shared=True).save_step("lab", "one", {})
    DesignLedger("unclaimed", tmp_path).save_step("lab", "one", {})  # written before the server was shared
    with pytest.raises(LedgerLocked, match="no owner"):
        DesignLedger("unclaimed", tmp_path, secret="1234", shared=True).load()
    monkeypatch.setenv("LABS_MAX_LEDGERS", "2")
    with pytest.raises(LedgerUnavailable, match="as many ledgers"):
        DesignLedger("cy", tmp_path, secret="1234", shared=True).save_step("lab", "one", {})
    DesignLedger("bo", tmp_path, secret="1234", shared=True).save_step("lab", "two", {})  # existing students go on


def test_a_roster_admits_only_its_students_with_their_codes(tmp_path):
    roster_file = tmp_path / "roster.csv"
    roster_file.write_text("student,code\nJosé,7f3k-22\nli na,9q8w-11\n")
    roster = Roster.load(roster_file)
    folder = tmp_path / "ledgers"
    DesignLedger("Jose\u0301", folder, secret="7f3k-22", roster=roster).save_step("lab", "one", {})  # NFC: the same José
    with pytest.raises(LedgerLocked, match="not on the class roster"):
        DesignLedger("mallory", folder, secret="7f3k-22", roster=roster).save_step("lab", "one", {})
    with pytest.raises(LedgerLocked, match="code for 'li na' is wrong"):
        DesignLedger("li na", folder, secret="7f3k-22", roster=roster).load()
    assert [p.name for p in folder.glob("*.ledger.json")] == [state.ledger_filename("José")]
    roster_file.write_text("student,code\nann,12\n")
    with pytest.raises(ValueError, match="shorter than 4"):
        Roster.load(roster_file)


def test_the_lab_shows_locked_and_failed_saves_as_messages(tmp_path, monkeypatch):
    monkeypatch.setenv("LABS_LEDGER_DIR", str(tmp_path))
    monkeypatch.setenv("LABS_SHARED", "1")
    text, saved = submit({"student": "alice", "pin": "4821"})
    assert "Saved pipeline to" in text and "Download ledger" in text and saved["student"] == "alice"
    before = DesignLedger("alice", tmp_path, secret="4821").path.read_bytes()
    for pin in ("", "0000"):
        text, saved = submit({"student": "alice", "pin": pin}, steps=[("07_pipeline_visualizer", "pipeline", {"p": 666}, {}, {})])
        assert "🔒" in text and "Download ledger" not in text and saved is None
    assert DesignLedger("alice", tmp_path, secret="4821").path.read_bytes() == before
    text, _ = submit({"student": "", "pin": "4821"})
    assert "type your name" in text

    monkeypatch.delenv("LABS_SHARED")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(state.os, "fsync", full)
    text, saved = submit({"student": "bob", "pin": ""})
    assert "Not saved" in text and "the disk is full" in text and saved is None
    monkeypatch.undo()
    monkeypatch.setenv("LABS_LEDGER_DIR", str(tmp_path / "afile"))
    (tmp_path / "afile").write_text("")
    text, _ = submit("bob")
    assert "is a file, not a folder" in text


def test_the_lab_reports_a_ledger_it_moved_aside(tmp_path, monkeypatch):
    monkeypatch.setenv("LABS_LEDGER_DIR", str(tmp_path))
    DesignLedger("cy", tmp_path).path.write_text("{broken")
    text, saved = submit("cy", pressed=False)
    assert "moved to" in text and saved is None
    DesignLedger("cy", tmp_path).path.write_text("{broken again")
    with pytest.warns(state.LedgerRecovered):
        DesignLedger("cy", tmp_path).save_step("lab", "x", {})  # outside the lab the caller hears it as a warning


# ---- the PIN is read only where a commit or a save needs it ------------------------------------
LABS_WITH_IDENTITY = sorted(Path(__file__).resolve().parents[1].glob("labs/[01][0-9]_*.py"))


@pytest.mark.parametrize("lab", [p for p in LABS_WITH_IDENTITY if "ui.student_identity()" in p.read_text()], ids=lambda p: p.stem[:2])
def test_no_question_depends_on_the_pin(lab):
    """marimo re-runs every cell downstream of a widget whose value changes: a question widget
    downstream of the PIN would be re-created (its choice cleared) by each keystroke of the PIN.
    The questions depend on the name (the variant); the PIN reaches only commit and submit."""
    from test_notebooks import shared_app

    app = shared_app(lab)
    app._maybe_initialize()
    cells = list(app._cell_manager.cells())
    by_def = {name: c for c in cells for name in c.defs}
    assert "pin_input" in by_def and "pin_input" not in by_def["student_input"].defs, "the PIN needs a widget and a cell of its own"
    downstream, frontier = set(), ["pin_input"]
    while frontier:
        name = frontier.pop()
        for c in cells:
            if name in c.refs and id(c) not in downstream:
                downstream.add(id(c))
                frontier.extend(c.defs)
    questions = [name for name in by_def if name.endswith("_question")]
    assert len(questions) >= 1, "a lab without a question widget"
    assert not [q for q in questions if id(by_def[q]) in downstream]
    assert id(by_def["variant"]) not in downstream
    readers = [sorted(c.defs) for c in cells if "identity" in c.refs]  # who reads the PIN, through identity
    assert readers and all(d == ["submitted"] or (len(d) == 1 and d[0].endswith("_committed")) for d in readers), readers


# ---- one server, two browsers ------------------------------------------------------------------
@pytest.mark.browser
class TestSharedServers:
    """Labs 07 and 05 on shared servers (LABS_SHARED), served side by side before the first test
    drives them; a class, so its servers and windows close before the next test, which is not a
    browser test (conftest closes the kept Chromium then)."""

    @pytest.fixture(scope="class")
    @classmethod
    def served(cls, need_chromium, tmp_path_factory):
        """lab: (its server's URL, its ledger folder, a window); Lab 07's test opens a second."""
        from browser import browser_pages, marimo_run_many

        labs = ["07_pipeline_visualizer.py", "05_parallelism.py"]
        folders = [tmp_path_factory.mktemp(f"ledgers_{lab[:2]}") for lab in labs]
        with marimo_run_many(labs, [{"LABS_LEDGER_DIR": str(f), "LABS_SHARED": "1"} for f in folders]) as urls, browser_pages(3) as pages:
            pages[2].goto(urls[1], wait_until="commit")  # Lab 05 loads while Lab 07's test runs
            yield {lab: (url, folder) for lab, url, folder in zip(labs, urls, folders, strict=True)}, pages

    def test_on_one_server_b_cannot_read_or_overwrite_as_ledger(self, served, tmp_path):
        from browser import answer, sign_in
        from labs.variants import variant

        (url, ledgers), (a, b, _) = served[0]["07_pipeline_visualizer.py"], served[1]

        def visit(page, url, pin, expect):
            page.goto(url)
            sign_in(page, "alice", pin)
            answer(page, variant("07_pipeline_visualizer", "alice").questions["utilisation"], commit=0)  # committing writes the ledger too
            if expect == "Saved":
                page.get_by_text("Committed").first.wait_for()
                page.get_by_role("button", name="Submit to the ledger").click()
            page.get_by_text(expect).first.wait_for()
            return page

        # two windows (a context each, as two browsers: no shared cookies or storage), in conftest's kept Chromium or one of their own
        page_a = visit(a, url, "4821", "Saved")
        with page_a.expect_download() as info:
            page_a.get_by_text("Download ledger").first.click()
        info.value.save_as(tmp_path / "a.json")
        path = DesignLedger("alice", ledgers).path
        saved = path.read_bytes()
        assert json.loads((tmp_path / "a.json").read_text())["student"] == "alice"

        page_b = visit(b, url, "", "'alice' is taken on this server: if it is yours, type its PIN")  # another browser: its own marimo session
        assert page_b.get_by_text("Download ledger").count() == 0
        page_b.get_by_label("A PIN of at least 4 characters", exact=False).fill("0000")
        page_b.keyboard.press("Tab")
        page_b.get_by_role("button", name="Commit my prediction").first.click()
        page_b.get_by_text("that is not its PIN").first.wait_for()
        assert page_b.get_by_text("Download ledger").count() == 0
        assert path.read_bytes() == saved

    def test_typing_a_pin_keeps_a_choice_not_yet_committed(self, served):
        """The name and the PIN are separate widgets: the questions are drawn from the name only, so
        a PIN typed after choosing an option (and before committing) leaves the choice selected, and
        the commit then records it under that PIN."""
        from browser import NAME_FIELD, kernel_runs, pin_field, type_text
        from labs.variants import variant

        (_, ledgers), page = served[0]["05_parallelism.py"], served[1][2]
        question = variant("05_parallelism", "carol").questions["cause"]
        wrong = next(o for o in question.options if o.key != question.key)  # any option: the choice, not its merit
        type_text(page, page.get_by_label(NAME_FIELD), "carol")
        radio = page.get_by_role("radio", name=f"{wrong.key}) {wrong.label}")
        before = kernel_runs(page)
        radio.click()
        page.wait_for_function(f"() => (window.__kernelRuns || 0) > {before}")
        assert radio.is_checked()
        type_text(page, pin_field(page), "4821")
        page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")  # the run's redraws painted
        assert radio.is_checked(), "typing the PIN cleared the uncommitted choice"
        page.get_by_role("button", name="Commit my prediction").first.click()
        page.get_by_text(f"Committed {wrong.key} at").first.wait_for()
        record = DesignLedger("carol", ledgers, secret="4821").committed("05_parallelism", "cause")
        assert record["answer"] == wrong.key


# ---- the hub's identity comes from the server, never from the page (audit N2) -------------------
def test_on_the_hub_a_crafted_identity_value_draws_and_records_only_the_signed_in_user(tmp_path, monkeypatch):
    """N2: a crafted set_ui_element_value can give the disabled identity field any value; the lab
    still draws the signed-in user's variant and records everything under that user alone."""
    import marimo as mo
    from test_notebooks import FLAGSHIP, committed, load_app

    from labs.variants import variant

    lab = "05_parallelism"
    monkeypatch.setenv("LABS_LEDGER_DIR", str(tmp_path))
    monkeypatch.setenv("JUPYTERHUB_USER", "carol")
    carol, alice = variant(lab, "carol"), variant(lab, "t4-alice")
    assert carol.settings != alice.settings  # else the test could not tell them apart
    question = carol.questions["cause"]
    _, defs = load_app(FLAGSHIP).run(defs={"student_input": mo.ui.text(value="t4-alice"), **committed("act1", question, question.key)})
    assert defs["variant"].student == "carol" and defs["variant"].settings == carol.settings
    assert defs["identity"]["student"] == "carol"
    doc = DesignLedger("carol", tmp_path).load()
    assert doc["predictions"][lab]["cause"]["answer"] == question.key
    assert doc["variants"][lab]["student"] == "carol" and doc["variants"][lab]["settings"] == carol.settings
    assert [p.name for p in tmp_path.glob("*.ledger.json")] == [DesignLedger("carol", tmp_path).path.name]

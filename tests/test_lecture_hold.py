"""A hold that holds (issue 34 item 3; newcomer review M1): while the instructor holds a question
(labs.core.lecture), a student who has committed to it sees nothing more than one who has not:
no stat cards, charts, tables, reveal, math, reflection or takeaways that bear on it; after the
release they all open. Every question of every lab (05-13 and any later one), headless. Also: the notebooks gate
with ui.gate only (no half gates), no widget is created below a commit; the drop box's reader
counts only answer files toward its cap and says when one is reached (reliability N10); Lab 09's
map marks the spoken check's bottleneck only after the submit (newcomer review, Lab 09 worksheet).

Each held-question test failed before ui.gate (on 80af046) for every question whose page had
cells gated by `mo.stop(not x.made)`: all but Lab 12's recompute and fp8 and Lab 13's scaling
and tp_best, whose sections were already behind ui.commitment_gate."""

from __future__ import annotations

import getpass
import html
import os
import re
from pathlib import Path

import marimo as mo
import pytest

from labs.core import lecture, ui
from labs.variants import variant
from test_notebooks import LABS, Pressed, committed, shared_app, right, text_of

pytestmark = pytest.mark.usefixtures("ledger_dir")

HELD_NOTE = "Your instructor is holding this question"


def questions_of(path: Path) -> dict[str, str]:
    """{question key: the widgets' prefix} from a lab's commit cells, in page order."""
    return dict(re.findall(r'commit_prediction\(identity, LAB, "([a-z0-9_]+)", ([a-z0-9_]+)_question,', path.read_text()))


CASES = [(path, key) for path in LABS for key in questions_of(path)]
_APPS: dict[Path, object] = {}


def app_of(path: Path):
    if path not in _APPS:
        _APPS[path] = shared_app(path)
    return _APPS[path]


class Unpressed:
    """A lab's [commit, skip] buttons, neither pressed (the page after a reload or a tick)."""

    value = [False, False]

    def _mime_(self):
        return "text/plain", "not pressed"


def visible(outputs) -> str:
    """The page's text: every output, HTML and the JSON inside marimo's attributes decoded, tags,
    ids, styles and commit times removed."""
    s = text_of(outputs)
    for _ in range(4):
        s = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), html.unescape(s)).replace('\\"', '"').replace("\\n", "\n")
    s = re.sub(r"<style>.*?</style>", " ", s, flags=re.S)
    s = re.sub(r"<[^>]*>", " ", s)
    s = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", " ", s)  # element ids (Plotly's are random)
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", " ", s)  # a commit's time


def tokens(text: str) -> set[str]:
    """Words of three letters or more and numbers (with their %), as sets to compare pages by."""
    return {t.rstrip(",.") for t in re.findall(r"\d[\d,.]*%?|[A-Za-z][A-Za-z'’-]{2,}", text)}


def numbers(found: set[str]) -> set[str]:
    return {t for t in found if t[0].isdigit()}


def page(path: Path, key_of: dict, ledgers: Path, monkeypatch, skip: str | None = None, press: bool = True, submit: bool = True) -> str:
    """The lab's page for the headless student with every question committed (the engine's
    answer) but `skip`, in the ledger folder `ledgers`; `press`: the commit buttons pressed
    (else the page as it reloads the commits from the ledger); `submit`: the submit pressed."""
    monkeypatch.setenv("LABS_LEDGER_DIR", str(ledgers))
    v = variant(path.stem, "student")
    defs = {}
    for key, prefix in key_of.items():
        if key == skip:
            continue
        answered = committed(prefix, v.questions[key], right(v.questions[key]))
        if not press:
            answered[f"{prefix}_commit_buttons"] = Unpressed()
        defs.update(answered)
    if submit:
        defs["submit_button"] = Pressed()
    outputs, _ = app_of(path).run(defs=defs)
    return visible(outputs)


def reveal_line(question) -> str:
    """The reveal's explanation of the engine's answer, as the page prints it (its first 60
    characters of text, white space aside: markdown's ** and ` are tags on the page)."""
    line = question.spec.explanation if question.numeric else question.explanations[question.key]
    return squeeze(re.sub(r"\*\*|`", "", line))[:60] if line else ""


def squeeze(text: str) -> str:
    """Text without its white space (the page puts spaces where tags were)."""
    return re.sub(r"\s+", "", text)


def typed(question) -> set[str]:
    """What the commit row shows of the student's own answer."""
    answer = right(question)
    return tokens(answer if isinstance(answer, str) else f"{answer:g}")


@pytest.fixture
def lecture_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("LABS_STUDENT", raising=False)
    monkeypatch.setenv(lecture.ENV, str(tmp_path / "lecture"))
    lecture.prepare()
    return tmp_path / "lecture"


def test_every_question_of_every_lab_is_covered():
    """The cases below are every question of every lab, as the variants draw them."""
    for path in LABS:
        assert list(questions_of(path)) == list(variant(path.stem, "student").questions), path.name
    assert {p.stem[:2] for p, _ in CASES} >= {f"{n:02d}" for n in range(5, 14)} and len(CASES) >= 19  # 19 questions in Labs 05-13, and every later lab's


@pytest.mark.parametrize("path,key", CASES, ids=[f"{p.stem[:2]}-{k}" for p, k in CASES])
def test_a_held_question_shows_nothing_an_uncommitted_one_does_not(path, key, lecture_dir, tmp_path, monkeypatch):
    """Committed while held, the page shows no word or number more than the same page with the
    question not committed (but the commit row and the hold's note); released, the reveal and
    everything below it open on the next run, from the ledger."""
    key_of, lab = questions_of(path), path.stem
    q = variant(lab, "student").questions[key]
    allowed = {"Committed", "committed", "info"} | tokens(visible([ui._HELD])) | typed(q)  # the commit row and the hold's note

    locked = tokens(page(path, key_of, tmp_path / "u", monkeypatch, skip=key))
    lecture.hold(lab, key)
    held_text = page(path, key_of, tmp_path / "h", monkeypatch)
    lecture.release(lab, key)
    released_text = page(path, key_of, tmp_path / "h", monkeypatch, press=False)
    held, released = tokens(held_text), tokens(released_text)

    assert HELD_NOTE in held_text and HELD_NOTE not in released_text
    assert held - locked - allowed == set(), f"{lab} · {key} held shows: {sorted(held - locked - allowed)[:30]}"
    answer_bearing = released - locked - allowed
    assert len(answer_bearing) >= 40 and len(numbers(answer_bearing)) >= 3, sorted(answer_bearing)  # measured: 57 to 1,480 tokens, 4 to 400+ numbers
    assert not held & answer_bearing
    line = reveal_line(q)
    if line:  # Lab 11's fit reveal explains with the lab's own lines: there its ✔ stands for them
        assert len(line) >= 20 and line in squeeze(released_text) and line not in squeeze(held_text)
    else:
        assert released_text.count("✔") > held_text.count("✔")
    assert released_text.count("Right") > held_text.count("Right")  # the verdict on the engine's answer


def test_lab05_cause_held_hides_the_cards_charts_and_reflection(lecture_dir, tmp_path, monkeypatch):
    """The review's case (newcomer M1): Act I held and committed showed the stat cards (MFU,
    compute against exposed all-reduce), three charts and the whole Reflection."""
    from labs.core.scenarios.lab05 import act1_story, dp_wall_estimate
    from labs.core.scenarios.lab05 import DP_WALL_GPUS

    path = next(p for p in LABS if p.stem == "05_parallelism")
    v = variant(path.stem, "student")
    story = act1_story(v.settings)
    at64 = dp_wall_estimate(64, **story)
    last = DP_WALL_GPUS[-1]
    specific = [
        f"{at64.mfu:.1%}", "exposed all-reduce", f"{at64.time.compute * 1e3:.0f} ms",
        "Reflection: what walls data parallelism", f"{dp_wall_estimate(last, **story).mfu:.1%}", f"{dp_wall_estimate(last, **story, overlap=True).mfu:.1%}",
        "The equations behind Act I", "Where each step", "Right.",
    ]
    key_of = {"cause": "act1"}
    lecture.hold(path.stem, "cause")
    monkeypatch.setenv("LABS_LEDGER_DIR", str(tmp_path / "l"))
    outputs, defs = app_of(path).run(defs=committed("act1", v.questions["cause"], v.questions["cause"].key))
    held_text = visible(outputs)
    assert "act1_current" not in defs and "act1_curve" not in defs
    assert not [s for s in specific if s in held_text]
    assert "js-plotly-plot" not in text_of(outputs) and "plotly" not in text_of(outputs).lower()
    lecture.release(path.stem, "cause")
    released_text = page(path, key_of, tmp_path / "l", monkeypatch, press=False)
    assert [s for s in specific if s not in released_text] == []


def test_a_submit_waits_while_another_question_is_held(lecture_dir, tmp_path, monkeypatch):
    """A submit records every prediction of the lab judged (fit_correct, zero2_correct), and the
    download carries it: it stays closed while any question of the lab is held."""
    path = next(p for p in LABS if p.stem == "06_zero_sweep")
    key_of = questions_of(path)
    v = variant(path.stem, "student")
    monkeypatch.setenv("LABS_LEDGER_DIR", str(tmp_path / "l"))
    defs = {**committed("fit", v.questions["fit"], right(v.questions["fit"])), **committed("zero2", v.questions["zero2"], right(v.questions["zero2"])), "submit_button": Pressed()}
    lecture.hold(path.stem, "zero2")
    _, out = app_of(path).run(defs=defs)
    assert "submitted" not in out
    lecture.release(path.stem, "zero2")
    _, out = app_of(path).run(defs=defs)
    assert out["submitted"]["labs"][path.stem]["sweep"]["outcomes"]["zero2_correct"] is True
    assert key_of == {"fit": "fit", "zero2": "zero2"}


# ---- the kit's gate and the notebooks' use of it ---------------------------------------------------
def _stopped(call) -> bool:
    from marimo._runtime.control_flow import MarimoStopError

    try:
        call()
    except MarimoStopError:
        return True
    return False


def test_the_gate_is_open_only_when_committed_and_not_held():
    record = {"answer": "A", "committed": "2026-01-01T00:00:00+00:00", "changes": []}
    made, held, none, skipped = ui.Commitment(record), ui.Commitment(record, held=True), ui.Commitment(None), ui.Commitment({**record, "answer": None})
    assert ui.gate(made, stop=False) and ui.gate(skipped, stop=False)
    assert not ui.gate(held, stop=False) and not ui.gate(none, stop=False)
    assert not ui.gate(made, skipped, held, stop=False) and ui.gate(made, skipped, stop=False)
    assert not ui.gate(made, held=(none, held), stop=False) and ui.gate(made, held=(none,), stop=False)  # `held=` need not be committed
    assert _stopped(lambda: ui.gate(held)) and _stopped(lambda: ui.gate(none, what="x")) and not _stopped(lambda: ui.gate(made))


@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_no_notebook_gates_half(path):
    """Every gate in a lab is ui.gate: no `mo.stop(not x.made)` (which ignores a hold), no
    `.made` or `.held` read in a notebook; outside a ui.gate(...) call a commitment is read only
    for the student's own answer (`.answer`, `.describe()`, in the submit and the HUD)."""
    source = path.read_text()
    assert ".made" not in source and ".held" not in source and "commitment_gate" not in source
    app = app_of(path)
    app._maybe_initialize()
    for cell in (c._cell for c in app._cell_manager.cells()):
        names = [r for r in cell.refs if r.endswith("_committed")]
        if not names or any(d.endswith("_committed") for d in cell.defs):
            continue
        outside = re.sub(r"ui\.gate\([^()]*(\([^()]*\))?[^()]*\)", "", cell.code)
        outside = re.sub(r"ui\.variant_reveal\(\s*\w+_committed", "ui.variant_reveal(", outside)  # it shows the hold's note itself
        for use in re.findall(r"\b(?:%s)\b(\.\w+)?" % "|".join(names), outside):
            assert use in (".answer", ".describe"), (path.name, use, cell.code[:200])
        if any(f"{n}." in outside for n in names) and "ui.hud(" not in cell.code:
            assert "ui.gate(" in cell.code, (path.name, cell.code[:200])


@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_no_widget_is_created_below_a_commit(path):
    """A hold or a release re-runs everything below a commit: a widget created there would reset
    (the student's slider jumps back). Widgets are created in cells of their own; below the
    gate only their display. (mo.ui.table here only displays rows.)"""
    app = app_of(path)
    app._maybe_initialize()
    cells = [c._cell for c in app._cell_manager.cells()]
    below, todo = set(), [c for c in cells if any(d.endswith("_committed") for d in c.defs)]
    while todo:
        cell = todo.pop()
        for other in cells:
            if id(other) not in below and other.refs & cell.defs:
                below.add(id(other))
                todo.append(other)
    made_below = [(sorted(c.defs), w) for c in cells if id(c) in below for w in re.findall(r"mo\.ui\.(\w+)\(", c.code) if w != "table"]
    assert made_below == []


# ---- the drop box's reader (reliability N10) -------------------------------------------------------
def _junk(folder: Path, n: int, name: str = "junk-{:06d}") -> None:
    for i in range(n):
        os.close(os.open(folder / name.format(i), os.O_CREAT | os.O_WRONLY, 0o644))


def test_junk_in_the_drop_box_counts_toward_no_cap(tmp_path, monkeypatch):
    """60,000 junk files (other names, other questions' answer names) no longer empty the
    histogram: only this question's answer files count, and the junk is reported."""
    folder = lecture.prepare(tmp_path / "lecture")
    me = getpass.getuser()
    answers = folder / lecture.ANSWERS
    _junk(answers, 40_000)
    _junk(answers, 20_000, "05_parallelism--design--{:032x}.json")  # another question's names
    assert lecture.record_answer("05_parallelism", "cause", me, {"answer": "B"}, path=folder)
    assert lecture.record_answer("05_parallelism", "cause", "amy", {"answer": "A"}, path=folder)
    found = lecture.read_answers("05_parallelism", "cause", path=folder)
    assert dict(found) == {me: "B"}  # amy's file is owned by this user, not amy
    assert dict(lecture.read_answers("05_parallelism", "cause", path=folder, check_owner=False)) == {me: "B", "amy": "A"}
    assert [n for n in found.notes if "40,000 entries that are not answer files" in n]
    with pytest.warns(lecture.AnswersCapped, match="not answer files"):
        assert lecture.histogram("05_parallelism", "cause", path=folder) == {"B": 1}


def test_the_cap_counts_answer_files_only_and_says_when_it_is_reached(tmp_path, monkeypatch):
    folder = lecture.prepare(tmp_path / "lecture")
    monkeypatch.setattr(lecture, "MAX_ANSWER_FILES", 5)
    _junk(folder / lecture.ANSWERS, 100)  # junk counts toward no cap
    for i in range(8):
        lecture.record_answer("05_parallelism", "cause", f"s{i}", {"answer": "C"}, path=folder)
    found = lecture.read_answers("05_parallelism", "cause", path=folder, check_owner=False)
    assert len(found) == 5 and found.notes[0] == (
        "05_parallelism · cause: the drop box holds 8 answer files for this question; the first 5 read are counted, 3 are not (the histogram may be incomplete).")
    assert "100 entries that are not answer files" in found.notes[1]
    with pytest.warns(lecture.AnswersCapped) as caught:
        assert len(lecture.committed_answers("05_parallelism", "cause", path=folder, check_owner=False)) == 5
    assert [str(w.message) for w in caught] == found.notes  # the same sentences, for a dashboard that reads warnings
    # On a hub a file counts only when it is its owner's: a squatter's answer-named files count toward nothing.
    assert lecture.record_answer("05_parallelism", "cause", getpass.getuser(), {"answer": "D"}, path=folder)
    mine = lecture.read_answers("05_parallelism", "cause", path=folder)
    assert dict(mine) == {getpass.getuser(): "D"} and not [n for n in mine.notes if "answer files for this question" in n]


# ---- Lab 09's map (newcomer review, Lab 09 worksheet) -------------------------------------------------
def test_lab09_map_marks_the_bottleneck_only_after_submit(tmp_path, monkeypatch):
    """The ★ line stated the spoken check's three fields (collective, link, exposed ms) word for
    word before the submit; now the map lists every collective unmarked, and after the submit it
    marks the submitted design's dominant one."""
    from labs.core.scenarios.lab09 import map_rows

    path = next(p for p in LABS if p.stem == "09_64gpu_design")
    q = variant(path.stem, "student").questions["dp64"]
    monkeypatch.setenv("LABS_LEDGER_DIR", str(tmp_path))
    outputs, defs = app_of(path).run(defs=committed("dp64", q, q.key))
    before = visible(outputs)
    dominant = next(r for r in map_rows(defs["design"]) if r["dominant"])
    assert "The communication map" in before and f"{dominant['exposed ms']:,.1f} ms" in before  # the map is there, to be read
    assert "★" not in before and "waits for longest:" not in before
    pp = variant(path.stem, "student").questions["pp_free"]  # the submit waits for both of the lab's predictions
    outputs, _ = app_of(path).run(defs={**committed("dp64", q, q.key), **committed("pp_free", pp, pp.key), "submit_button": Pressed()})
    after = visible(outputs)
    assert f"★ marks the collective the step waits for longest: {dominant['collective']} on {dominant['link']}, {dominant['exposed ms']:,.1f} ms exposed" in re.sub(r"\s+", " ", after)
    assert re.search(r"★\s+" + re.escape(dominant["collective"]) + r"\s", after)  # the star on the dominant row
    assert after.count("★") == 2  # that row and the note

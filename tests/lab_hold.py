"""The live-lecture hold checked on one question of a lab, as tests/test_lecture_hold.py checks
every question of Labs 05-13 (its helpers, reused): committed while the instructor holds it, the
page shows no word or number more than the same page with the question not committed (but the
commit row and the hold's note); released, the reveal and everything below it open, from the
ledger, on the next run."""

from __future__ import annotations

from pathlib import Path

from test_lecture_hold import (
    HELD_NOTE,
    numbers,
    page,
    questions_of,
    reveal_line,
    squeeze,
    tokens,
    typed,
    visible,
)

from labs.core import lecture, ui
from labs.variants import variant


def check_held_question(path: Path, key: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("LABS_STUDENT", raising=False)
    monkeypatch.setenv(lecture.ENV, str(tmp_path / "lecture"))
    lecture.prepare()
    key_of, lab = questions_of(path), path.stem
    assert key in key_of, (lab, key, key_of)
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
    assert len(answer_bearing) >= 40 and len(numbers(answer_bearing)) >= 3, sorted(answer_bearing)
    assert not held & answer_bearing
    line = reveal_line(q)
    assert len(line) >= 20 and line in squeeze(released_text) and line not in squeeze(held_text), line
    assert released_text.count("Right") > held_text.count("Right")  # the verdict on the engine's answer

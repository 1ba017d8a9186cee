"""A hold that holds, in Chromium (issue 34 item 3; newcomer review M1): `marimo run` with a live
lecture folder, every question of Labs 05, 06 and 12 held by the instructor before the page opens.
The student commits each question in turn: while it is held the page (its text, through marimo's
shadow roots, and the data-* attributes where charts and callouts keep their data) holds none of the
numbers the release opens and not the reveal; the instructor releases it and, without a reload,
the reveal and the numbers come. The numbers are the engine's: what the same page shows headless
with the question committed, less what it shows without (tests/test_lecture_hold.py's pages).
Failed on 80af046 at Lab 05's first question (the Act I cards, charts and Reflection)."""

from __future__ import annotations

import re
import time

import marimo as mo
import pytest

from browser import answer, browser_page, marimo_run, sign_in, wait_drawn
from labs.core import lecture
from labs.variants import variant
from test_lecture_hold import HELD_NOTE, LABS, app_of, numbers, questions_of, reveal_line, squeeze, tokens, typed, visible
from test_notebooks import committed, right

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

STUDENT = "held student"

# Everything the page holds: text and data-* attributes (where marimo keeps callouts, widgets and figures),
# through open shadow roots; no scripts' or styles' text, no drawing attributes (SVG paths, KaTeX's styles).
DEEP_PAGE = """() => {
  const out = [];
  const walk = (node) => {
    if (node.nodeType === 3) { out.push(node.textContent); return; }
    if (node.nodeType === 1) {
      if (node.tagName === 'SCRIPT' || node.tagName === 'STYLE') return;
      for (const a of node.attributes) if (a.name.startsWith('data-')) out.push(a.value);  // marimo's outputs and widgets, Plotly's figures
      if (node.shadowRoot) walk(node.shadowRoot);
    }
    for (const child of node.childNodes) walk(child);
  };
  walk(document.body);
  return out.join(' ');
}"""


def deep_page(page) -> str:
    return visible([page.evaluate(DEEP_PAGE)])


def distinctive(found: set[str]) -> set[str]:
    """Numbers no chart axis or chrome prints by chance: a percentage with decimals, thousands
    with commas, or two decimals and more."""
    return {t for t in numbers(found) if re.fullmatch(r"\d+\.\d+%|\d{1,3}(,\d{3})+(\.\d+)?|\d+\.\d{2,}", t)}


def released_numbers(path, keys, monkeypatch, tmp_path) -> list[set[str]]:
    """For each question in page order: the numbers the page shows once it is committed (the
    earlier ones committed too) and not before, headless, for STUDENT."""
    v = variant(path.stem, STUDENT)
    monkeypatch.delenv(lecture.ENV, raising=False)
    pages = []
    for n in range(len(keys) + 1):
        monkeypatch.setenv("LABS_LEDGER_DIR", str(tmp_path / f"headless{n}"))
        defs = {"student_input": mo.ui.text(value=STUDENT)}
        for key in list(keys)[:n]:
            defs.update(committed(keys[key], v.questions[key], right(v.questions[key])))
        outputs, _ = app_of(path).run(defs=defs)
        pages.append(distinctive(tokens(visible(outputs))))
    return [pages[i + 1] - pages[i] - typed(v.questions[key]) for i, key in enumerate(keys)]


def wait_until(page, test, what: str, timeout: float = 45.0) -> str:
    deadline = time.time() + timeout
    while True:
        text = deep_page(page)
        if test(text):
            return text
        if time.time() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        page.wait_for_timeout(200)


@pytest.mark.parametrize("lab", ["05_parallelism", "06_zero_sweep", "12_precision_and_memory"])
def test_every_question_held_in_turn_shows_nothing_until_released(lab, tmp_path, monkeypatch):
    path = next(p for p in LABS if p.stem == lab)
    keys = questions_of(path)
    v = variant(lab, STUDENT)
    folder = lecture.prepare(tmp_path / "lecture")
    for key in keys:
        lecture.hold(lab, key, path=folder)
    env = {"LABS_LEDGER_DIR": str(tmp_path / "ledgers"), lecture.ENV: str(folder)}
    seen = {}
    with marimo_run(path.name, env=env) as url, browser_page() as page:
        page.goto(url)  # the server draws the page while this process runs the headless pages
        opened = released_numbers(path, keys, monkeypatch, tmp_path)
        sign_in(page, STUDENT)
        numeric = 0
        for i, key in enumerate(keys):
            q = v.questions[key]
            assert len(opened[i]) >= 3, (key, opened[i])  # the engine's numbers this question opens
            if q.numeric:
                page.locator("input[aria-label*='Your prediction']").nth(numeric).wait_for()
                answer(page, q, box=numeric)
                numeric += 1
            else:
                answer(page, q)
            page.get_by_role("button", name="Commit my prediction").nth(i).click()
            wait_until(page, lambda t: HELD_NOTE in t and "Committed" in t, f"{key}'s hold note")  # the commit's run has begun
            wait_drawn(page)  # and the page has drawn every cell it reaches
            held = deep_page(page)
            assert HELD_NOTE in held
            leaked = sorted(opened[i] & tokens(held))
            assert leaked == [], f"{lab} · {key} held shows its numbers: " + " | ".join(held[max(0, m.start() - 150): m.end() + 60] for t in leaked for m in [re.search(re.escape(t), held)])
            assert reveal_line(q) == "" or reveal_line(q) not in squeeze(held)

            lecture.release(lab, key, path=folder)  # the lab polls every 3 s: no reload
            line = reveal_line(q)
            wait_until(page, lambda t: HELD_NOTE not in t and (line in squeeze(t) if line else "✔" in t), f"{key}'s reveal after the release")
            wait_drawn(page)  # every cell the release opens drawn
            released = deep_page(page)
            seen[key] = sorted(opened[i] & tokens(released))
            assert len(seen[key]) >= 2, (key, seen[key], sorted(opened[i])[:20])
    print({k: len(s) for k, s in seen.items()})

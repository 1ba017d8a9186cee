"""A problem set's page, the marimo side of labs.core.problemset: a problem's widget (its
statement as the label), and after the commit its reveal: the verdict against the engine, the
worked back-of-envelope, the engine's answer beside it, the refined answer and why it differs,
and a public text's wrong answer where one resembles the problem. Every number comes from the
problem's engine calls at the student's variant."""

from __future__ import annotations

import marimo as mo

from labs.core import ui
from labs.core.problemset import ProblemSet, fmt


def widget(question) -> mo.ui.number | mo.ui.radio:
    """The problem's answer field (a number, no bounds) or its options; create it in the problem's
    first cell, with answer_of(it) and its commit buttons (no other cell names it)."""
    if question.numeric:
        return mo.ui.number(label=question.prompt, full_width=True)
    return mo.ui.radio(options={f"{o.key}) {o.label}": o.key for o in question.options}, label=question.prompt)


def header(pset: ProblemSet) -> mo.Html:
    """The page's title and reading, the first output (its cell reads nothing else), so it carries the
    page's one copy of the labs' stylesheet (ui.with_stylesheet)."""
    problems = "\n".join(f"{i}. {p.title}" for i, p in enumerate(pset.problems, 1))
    return ui.with_stylesheet(mo.md(f"# {pset.title}\n\n{pset.reading}\n\nEach problem: type your answer, **commit**, then read the worked "
                                    f"solution, the engine's answer and why they differ. Your numbers are drawn from your id.\n\n{problems}"))


def heading(pset: ProblemSet, pid: str) -> mo.Html:
    return mo.md(f"## Problem {pset.ids.index(pid) + 1} · {pset.problem(pid).title}")


def asked(pset: ProblemSet, pid: str, field, buttons) -> mo.Html:
    """The problem's first cell's output: its heading, its answer field, its commit buttons (shown
    here, not by the commit cell, whose output a commit redraws)."""
    return mo.vstack([heading(pset, pid), field, mo.hstack(list(buttons), justify="start")])


class Answer:
    """A problem's answer as its commit cell reads it: `value` is the widget's value when read. marimo
    re-runs every cell that names a widget when its value changes; the commit cell names this
    instead, so it runs on a commit or a skip (its buttons), not on each click or keystroke of an
    answer, which recorded nothing and showed nothing new (ps02: a click re-ran the commit cell
    and its solution's, two cells and 18 kernel messages, Nov 2026)."""

    def __init__(self, widget):
        self._widget = widget

    @property
    def value(self):
        return self._widget.value


def answer_of(widget) -> Answer:
    return Answer(widget)


def solution(pset: ProblemSet, variant, pid: str, made) -> mo.Html:
    """The reveal of problem `pid`, once committed and not held (committed() shows it)."""
    p = pset.problem(pid)
    r = pset.report(variant.settings, pid)
    s = variant.settings[pid]
    verdict = ui.variant_reveal(made, variant.questions[pid])
    parts = [f"**Worked back-of-envelope.** {p.solution(s)}",
             (f"**The engine:** {fmt(r['answer'])} {p.unit}; the formula above: {fmt(r['envelope'])} {p.unit} "
              f"({_gap_text(r['gap'])}).")]
    if r["refined"] is not None:
        parts.append(f"**{p.refined_label}:** {fmt(r['refined'])} {p.unit} ({_gap_text(r['refined_gap'])} of the answer). {p.why}")
    elif p.why:
        parts.append(p.why)
    if p.texts:
        parts.append(f"**A printed answer to avoid.** {p.texts}")
    return mo.vstack([verdict, mo.md("\n\n".join(parts))])


def committed(pset: ProblemSet, variant, pid: str, row: mo.Html, made) -> mo.Html:
    """A problem's commit cell's output: its row (what the ledger holds: commit_prediction's, given
    the buttons' values, so without the buttons), and below it, once committed, the solution, or
    while the instructor holds the problem, only the hold's note (ui.variant_reveal's): what
    ui.gate(made, held_note=True) closes. In the commit cell, not a cell of its own: a commit
    redraws two cells (this one and the submit's), not four."""
    if not made.made:
        return row
    return mo.vstack([row, ui.variant_reveal(made, variant.questions[pid]) if made.held else solution(pset, variant, pid, made)])


def _gap_text(gap: float) -> str:
    return "the same" if abs(gap) < 5e-4 else f"{gap:+.1%}"


def publisher(set_commitments):
    """A problem's commit cell calls the returned publish(pid, made) with what it found in the
    ledger; it sets the page's commitments state (`set_commitments`, from mo.state({})), which
    re-runs the submit (and the HUD it draws), only when that changed (a commit, a skip, a
    hold), not on a commit cell's run that changed nothing (a page's first run, a hold of
    another problem). One per session: create it in the cell that creates the state."""
    last: dict[str, tuple] = {}

    def publish(pid: str, made) -> None:
        seen = (made.record, made.held)
        if pid in last and last[pid] == seen:
            return
        last[pid] = seen
        set_commitments(lambda old: {**old, pid: made})

    return publish


def progress(pset: ProblemSet, committed: dict) -> dict[str, str]:
    """The HUD's line: how many problems are committed (a skip counts as committed)."""
    done = sum(1 for m in committed.values() if m.made)
    return {"problems committed": f"{done} of {len(pset.problems)}"}

"""The lab kit: small functions returning marimo objects, so every lab has the same arc.

    question = prediction_question("Why does MFU fall?", OPTIONS)     # its own cell
    prediction_gate(question)                                            # mo.stop until answered
    reveal(question.value, correct="B", explanations={...})              # judged by the engine
"""

from __future__ import annotations

import marimo as mo

from labs.core.state import DesignLedger, LedgerRecovered
from labs.core.style import LAB_CSS


def stakeholder_message(sender: str, text: str) -> mo.Html:
    """A message from a colleague that poses the lab's problem with real numbers.

    >>> stakeholder_message("Training lead", "MFU fell from 54% to 13%.")
    """
    return mo.Html(f'{LAB_CSS}<div class="lab-message"><b>{sender}</b><br>{mo.md(text).text}</div>')


def prediction_question(question: str, options, key: str = "prediction") -> mo.ui.radio:
    """A radio of lettered options; create it in a cell of its own.

    >>> prediction_question("Which design?", [Option("A", "TP=16"), Option("B", "TP=8")])
    """
    return mo.ui.radio(options={f"{o.key}) {o.label}": o.key for o in options}, label=f"**Your prediction.** {question}")


def prediction_gate(question: mo.ui.radio, what: str = "the instruments") -> None:
    """Stop the calling cell (and everything downstream) until the question has an answer."""
    mo.stop(question.value is None, mo.callout(mo.md(f"Commit to a prediction above to unlock {what}."), kind="warn"))


def reveal(choice: str | None, correct: str | None, explanations: dict[str, str]) -> mo.Html:
    """Judge the student's option by the engine's outcome and explain every option.

    >>> reveal("A", correct="B", explanations={"A": "...", "B": "..."})
    """
    if choice is None:
        return mo.callout(mo.md("Answer the prediction to see the reveal."), kind="info")
    verdict = "**Right.**" if choice == correct else f"**Not quite: the engine says {correct}.**"
    lines = [verdict, ""]
    for key, text in explanations.items():
        mark = "✔" if key == correct else ("✘ (yours)" if key == choice else "✘")
        lines.append(f"- **{key}** {mark}: {text}")
    return mo.callout(mo.md("\n".join(lines)), kind="success" if choice == correct else "warn")


def math_peek(title: str, body: str) -> mo.Html:
    """An accordion with the governing equations."""
    return mo.accordion({title: mo.md(body)})


def failure_banner(messages) -> mo.Html | None:
    """OOM, invalid layout, TP across nodes: one red callout listing the numbers that caused it."""
    messages = [m for m in messages if m]
    if not messages:
        return None
    return mo.callout(mo.md("\n".join(f"- {m}" for m in messages)), kind="danger")


def metric_cards(cards: dict[str, str]) -> mo.Html:
    """{"MFU": "41.7%", ...} as a row of cards."""
    body = "".join(f'<div class="lab-card"><div class="value">{v}</div><div class="label">{k}</div></div>' for k, v in cards.items())
    return mo.Html(f"{LAB_CSS}<div>{body}</div>")


def hud(items: dict[str, str]) -> mo.Html:
    """One status line: predictions, design, MFU, fit."""
    body = " · ".join(f"<b>{k}</b> {v}" for k, v in items.items())
    return mo.Html(f'{LAB_CSS}<div class="lab-hud">{body}</div>')


def submit_to_ledger(student: str, button, steps) -> tuple[mo.Html, dict | None]:
    """The explicit submit button beside a download of the student's ledger.

    `steps()` returns (lab, step, inputs, predictions, outcomes) tuples; it runs only when the
    button was pressed, so nothing is saved (or recomputed) on a slider move. Returns the row
    to show and the saved document (None when nothing was submitted). A ledger that could not be
    read is moved aside by DesignLedger and reported here.

    >>> view, saved = submit_to_ledger("ada", submit_button, lambda: [("05_parallelism", "act1", {...}, {...}, {...})])
    """
    ledger = DesignLedger(student.strip() or None)
    note, saved = "", None
    try:
        ledger.load()
    except LedgerRecovered as err:
        note = f"⚠ {err}"
    if button.value:
        for lab, step, inputs, predictions, outcomes in steps():
            ledger.save_step(lab, step, inputs, predictions, outcomes)
        saved = ledger.load()
        note = note or f"Saved to `{ledger.path}` at {saved['updated']}."
    download = mo.download(data=ledger.export(), filename=f"{ledger.path.stem}.json", mimetype="application/json", label="Download ledger")
    return mo.hstack([button, download, mo.md(note)], justify="start", align="center"), saved

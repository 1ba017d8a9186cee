"""The lab kit: small functions returning marimo objects, so every lab has the same arc.

    question = prediction_question("Why does MFU fall?", OPTIONS)     # its own cell
    prediction_gate(question)                                            # mo.stop until answered
    reveal(question.value, correct="B", explanations={...})              # judged by the engine
"""

from __future__ import annotations

import html
import os
import secrets
import warnings

import marimo as mo

from labs.core import lecture
from labs.core.engine.beside import published_beside as closest
from labs.core.engine.beside import runs_gpus
from labs.core.engine.hardware import GB
from labs.core.engine.perf import Estimate
from labs.core.state import DesignLedger, LedgerError, LedgerLocked, LedgerRecovered
from labs.core.style import LAB_CSS, TERM_COLORS


def with_stylesheet(content) -> mo.Html:
    """A page's first shown output (its title, in a cell that reads nothing, so neither a move nor a
    new name re-runs it) with the labs' stylesheet in front: the page's one copy, above anything
    styled. The components below (cards, tables, bars, the HUD, messages) carry none: each copy a
    re-run output re-sent was a <style> mounted again, and with it the whole page's styles
    recalculated (Lab 10: 16.5 -> 11.2 ms a move)."""
    return mo.Html(f"{LAB_CSS}{content.text}")


def stakeholder_message(sender: str, text: str) -> mo.Html:
    """A message from a colleague that poses the lab's problem with real numbers.

    >>> stakeholder_message("Training lead", "MFU fell from 54% to 13%.")
    """
    return mo.Html(f'<div class="lab-message"><b>{sender}</b><br>{mo.md(text).text}</div>')


def prediction_question(question: str, options, key: str = "prediction") -> mo.ui.radio:
    """A radio of lettered options; create it in a cell of its own.

    >>> prediction_question("Which design?", [Option("A", "TP=16"), Option("B", "TP=8")])
    """
    return mo.ui.radio(options={f"{o.key}) {o.label}": o.key for o in options}, label=f"**Your prediction.** {question}")


def lab_variant(lab: str, identity):
    """The student's variant of `lab` (labs.variants), from the identity the lab reads
    (student_identity()'s value: a name): on a class hub the signed-in user whatever the page
    sent, else the typed id, else LABS_STUDENT, else "student", the id the ledger would use. On a
    shared server nothing shows until an id is typed. Call it in a cell of its own, after the
    identity cell: every question is built from what it returns."""
    from labs.core.scenarios import variant

    if (notice := salt_notice()) is not None:  # the first screen says when no class salt is set
        mo.output.append(notice)
    student = signed_in_user() or (identity.get("student") if isinstance(identity, dict) else identity) or ""
    if not student.strip() and shared_server():
        mo.stop(True, mo.callout(mo.md("Type your name or student id above: your lab's numbers are drawn for you."), kind="warn"))
    try:
        return variant(lab, student.strip() or os.environ.get("LABS_STUDENT") or "student")
    except ValueError as err:
        mo.stop(True, mo.callout(mo.md(f"⚠ {html.escape(str(err))}"), kind="danger"))


def variant_question(question) -> mo.ui.radio | mo.ui.number:
    """A variant's question (labs.variants.Question) as its widget: a radio of its options in
    the student's order, or a number field for a quantity (no bounds: nothing is clamped)."""
    if question.numeric:  # the prompt names the unit and the tolerance
        return mo.ui.number(label=f"**Your prediction.** {question.prompt}", full_width=False)
    return prediction_question(question.prompt, question.options)


def variant_reveal(made: Commitment, question, explanations: dict[str, str] | None = None) -> mo.Html:
    """The reveal of a variant's question: options judged at the student's variant (each
    explained by `explanations`, keyed by the options' internal ids, else the question's own),
    or the typed number against the engine's, with the tolerance that grades it. Nothing but a
    waiting note while the instructor holds the question."""
    if made.held:
        return _HELD
    if not question.numeric:
        lines = question.explanations if explanations is None else {o.key: explanations.get(question.option_id(o.key), "") for o in question.options}
        return reveal(made.answer, question.key, {o.key: f"{o.label}: {lines[o.key]}" for o in question.options})
    spec = question.spec
    shown = f"{spec.answer:,.1f}{spec.unit}" if spec.unit == "%" else f"{spec.answer:,.3g} {spec.unit}"
    if made.answer is None:
        verdict, kind = f"**You skipped this prediction.** The engine says {shown}.", "info"
    elif question.judge(made.answer):
        verdict, kind = f"**Right:** you said {made.answer}, the engine says {shown} (graded within ±{spec.tolerance:.2g}).", "success"
    else:
        verdict, kind = f"**Not quite:** you said {made.answer}, the engine says {shown} (graded within ±{spec.tolerance:.2g}).", "warn"
    return mo.callout(mo.md(f"{verdict}\n\n{spec.explanation}"), kind=kind)


def prediction_gate(question: mo.ui.radio, what: str = "the instruments") -> None:
    """Stop the calling cell (and everything downstream) until the question has an answer."""
    mo.stop(question.value is None, mo.callout(mo.md(f"Commit to a prediction above to unlock {what}."), kind="warn"))


def reveal(choice: str | None, correct: str | None, explanations: dict[str, str]) -> mo.Html:
    """Judge the student's option by the engine's outcome and explain every option.

    >>> reveal("A", correct="B", explanations={"A": "...", "B": "..."})
    """
    if choice is None:
        verdict = f"**You skipped this prediction.** The engine says {correct}."
    else:
        verdict = "**Right.**" if choice == correct else f"**Not quite: the engine says {correct}.**"
    lines = [verdict, ""]
    for key, text in explanations.items():
        mark = "✔" if key == correct else ("✘ (yours)" if key == choice else "✘")
        lines.append(f"- **{key}** {mark}: {text}")
    return mo.callout(mo.md("\n".join(lines)), kind="success" if choice == correct else ("info" if choice is None else "warn"))


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
    return mo.Html(f"<div>{body}</div>")


def published_beside(est: Estimate) -> mo.Html:
    """Beside a lab's first MFU: the closest published run in the reference file, what its paper
    reports and what the engine says on it (labs.core.engine.beside), so the lab's number is read
    with the engine's error on a run it can be checked against."""
    b = closest(est.model, est.plan)
    lean = "too fast" if b.error > 0 else "too slow"
    convention = "" if b.convention == "MFU" else " (Compare the engine with the paper on that run, in the paper's convention; this page's MFU counts model FLOPs only.)"
    unchecked = "" if est.cluster.gpu.name in runs_gpus() else (
        f" The reference file holds no published run on {est.cluster.gpu.name}: there, the engine's lean is not checked by one.")
    return mo.callout(mo.md(
        f"**Beside a published run.** The engine's MFU here: {est.mfu:.1%}. The closest run in the project's reference file: "
        f"{b.params_b:.1f}B parameters on {b.gpus:,} {b.row.cluster.gpu.name}, {b.layout} ({b.paper}): {b.published:.1%} "
        f"{b.convention}. This engine on that same run: {b.engine:.1%} ({b.error:+.1%}, {lean}).{convention}{unchecked}"), kind="neutral")


def data_table(rows: list[dict]) -> mo.ui.table:
    """Rows as marimo's interactive table (sortable; no selection, column summaries or types).
    pandas is imported at the first table a page draws, every one of them behind a commit: as a
    cell of its own it ran while the page's first question was still loading, 0.23-0.26 s of CPU."""
    import pandas as pd

    return mo.ui.table(pd.DataFrame(rows), selection=None, show_column_summaries=False, show_data_types=False)


def static_table(rows: list[dict[str, str]]) -> mo.Html:
    """Rows of text as a plain table: for small tables that redraw with a slider, where
    mo.ui.table's interactive grid costs the browser far more to rebuild."""
    head = "".join(f"<th>{html.escape(str(k))}</th>" for k in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row.values()) + "</tr>" for row in rows)
    return mo.Html(f'<table class="lab-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def _amount(value: float) -> str:
    """One decimal, two significant digits below 1 (a 0.03 s term is not "0.0 s"), "< 0.001"
    below that, and "0" for nothing."""
    if value >= 1:
        return f"{value:,.1f}"
    if value >= 1e-3:
        return f"{value:.2g}"
    return "< 0.001" if value > 0 else "0"


def stacked_bar(parts: dict[str, tuple[float, str]], unit: str, limit: tuple[float, str] | None = None) -> mo.Html:
    """One horizontal bar of parts {name: (value, colour)} with a legend, and an optional limit
    line (value, label). Plain HTML, not a Plotly figure: it redraws with a slider at no cost.
    A part worth zero has no segment but keeps its legend entry (offloaded optimizer: 0 GB).

    >>> stacked_bar({"weights": (17.5, "#0072B2"), "activations": (30.1, "#E69F00")}, "GB", (80.0, "80 GB HBM"))
    """
    total = sum(v for v, _ in parts.values())
    scale = max(total, limit[0] if limit else 0.0) * 1.08 or 1.0
    track = "".join(
        f'<div class="part" style="width:{100 * v / scale:.3f}%;background:{c}" title="{html.escape(name)}: {_amount(v)} {unit}"></div>'
        for name, (v, c) in parts.items() if v > 0
    )
    if limit:
        track += f'<div class="limit" style="left:{100 * limit[0] / scale:.3f}%"><span>{html.escape(limit[1])}</span></div>'
    legend = "".join(f'<span><i style="background:{c}"></i>{html.escape(name)} {_amount(v)} {unit}</span>' for name, (v, c) in parts.items())
    return mo.Html(f'<div class="lab-bar"><div class="track">{track}</div><div class="legend">{legend} · <b>total {_amount(total)} {unit}</b></div></div>')


def memory_bar(est: Estimate) -> mo.Html:
    """Per-GPU memory, stacked by term, against the GPU's HBM."""
    hbm = est.cluster.gpu.hbm_bytes / GB
    parts = {term: (value / GB, TERM_COLORS[term]) for term, value in est.memory.as_dict().items()}
    return stacked_bar(parts, "GB", (hbm, f"{hbm:.1f} GB HBM"))


TIME_TERMS = {"compute": "compute", "bubble": "pipeline bubble", "tp_comm": "TP communication", "pp_comm": "PP send/recv", "dp_comm": "exposed DP/ZeRO",
              "optimizer": "optimizer step", "offload": "offload (PCIe + CPU Adam)", "ep_comm": "expert all-to-all"}
ONLY_WHEN_USED = ("offload", "ep_comm")  # terms of features most plans do not have: no "0 s" entry for them


def time_bar(est: Estimate) -> mo.Html:
    """Where one step's time goes, in seconds."""
    parts = {
        TIME_TERMS[key]: (value, TERM_COLORS["optimizer_step" if key == "optimizer" else key])
        for key, value in est.time.as_dict().items() if value or key not in ONLY_WHEN_USED
    }
    return stacked_bar(parts, "s")


def hud(items: dict[str, str]) -> mo.Html:
    """One status line: predictions, design, MFU, fit."""
    body = " · ".join(f"<b>{k}</b> {v}" for k, v in items.items())
    return mo.Html(f'<div class="lab-hud">{body}</div>')


def shared_server() -> bool:
    """True when the instructor serves one lab process to the whole class (LABS_SHARED=1 or a
    roster in LABS_ROSTER): every ledger then needs its owner's PIN or roster code."""
    return os.environ.get("LABS_SHARED", "").strip().lower() in ("1", "true", "yes", "on") or bool(os.environ.get("LABS_ROSTER"))


def signed_in_user() -> str | None:
    """The class hub's signed-in user (JUPYTERHUB_USER, set by the hub in each student's own
    server), or None away from a hub. On a hub it is the student's identity, fixed before any
    question shows: read from the server's environment, never from the page, so neither a typed
    name nor a crafted value for the (disabled) identity field can draw another student's
    variant, commit or see a reveal under another name (audit N2)."""
    return os.environ.get("JUPYTERHUB_USER", "").strip() or None


def class_server() -> bool:
    """A class hub, or one shared `marimo run` (LABS_SHARED or LABS_ROSTER)."""
    return signed_in_user() is not None or shared_server()


def salt_notice() -> mo.Html | None:
    """What the first screen says when no class salt (LABS_CLASS_SALT, read by
    labs.variants.class_salt) is set, None when one is: on a class server, that anyone can print
    every student's numbers and keys; elsewhere, that these are the unsalted numbers, which a
    class with a salt does not grade. lab_variant() shows it above the lab."""
    from labs.core.variants import class_salt

    if class_salt():
        return None
    if class_server():
        return mo.callout(mo.md("**This lab is served without a class salt** (`LABS_CLASS_SALT`): anyone can print every student's numbers and answers with `python -m labs.variants --no-salt`. Instructor: set one and restart the server."), kind="danger")
    return mo.callout(mo.md("No class salt here: these are the **unsalted** numbers for your id. If your class runs its labs on a server with a salt, do your graded work there: a ledger from this page will not match your variant."), kind="neutral")


def client_id() -> str:
    """Who is asking, for the shared server's PIN limits: the marimo session (session_key()), or
    its address as the nearest proxy saw it when the instructor says a proxy sets X-Forwarded-For
    (LABS_TRUST_PROXY=1)."""
    if os.environ.get("LABS_TRUST_PROXY", "").strip().lower() in ("1", "true", "yes", "on"):
        request = mo.app_meta().request
        forwarded = (request.headers.get("x-forwarded-for", "") if request is not None else "").split(",")[-1].strip()
        if forwarded:
            return f"addr-{forwarded}"
    return session_key()


def session_key() -> str:
    """A key for this marimo session, never given to another: drawn at random the first time the
    session asks, and kept on the session's runtime context (the object marimo 0.25 installs for
    one session, on its kernel thread and the threads it starts), so it ends with the session.
    Not the thread's id, which CPython hands to the next session (audit N6); not marimo's session
    id, which reaches a cell only on the first run (the websocket's `session_id` query) and is
    stripped from later requests' headers. "local" outside marimo (one process, one person)."""
    from marimo._runtime.context import ContextNotInitializedError, get_context

    try:
        context = get_context()
    except ContextNotInitializedError:
        return "local"
    while getattr(context, "parent", None) is not None:  # an embedded app belongs to its host's session
        context = context.parent
    return vars(context).setdefault("_labs_session_key", f"session-{secrets.token_hex(16)}")


def student_identity() -> mo.ui.text:
    """The name (or student id) field; `.value` is the typed name. Create it in its own cell: the
    variant, and so every question, is drawn from it. On a class hub it is fixed to the signed-in
    user. The PIN is a widget of its own (student_pin), so typing it re-runs only what commits or
    saves, never a question: a choice not yet committed stays chosen.

    >>> student_input = student_identity()
    """
    user = signed_in_user()
    if user is not None:
        return mo.ui.text(value=user, label="Signed in to the class hub as (your design ledger's name)", full_width=True, disabled=True)
    return mo.ui.text(label="Your name or student id (goes into your design ledger)", full_width=True, max_length=100)


def student_pin() -> mo.ui.text:
    """The PIN (or roster code) field, in a cell of its own; read only by identity(), which the
    commit and submit cells take. Disabled on a class hub (the hub's sign-in is the identity).

    >>> pin_input = student_pin()
    """
    if signed_in_user() is not None:
        return mo.ui.text(kind="password", label="No PIN here: you signed in to the hub", disabled=True)
    if os.environ.get("LABS_ROSTER"):
        label = "Your code from the class roster (needed before your first commit, and to save and download)"
    elif shared_server():
        label = "A PIN of at least 4 characters: set at your first commit, needed to commit again, save or download"
    else:
        label = "PIN (optional here: set one at your first commit and it protects your ledger)"
    return mo.ui.text(kind="password", label=label, max_length=200)


def identity(student: str, pin: str) -> dict:
    """{"student", "pin"} as commit_prediction, submit_to_ledger and open_ledger take it, from the
    two fields' values; on a class hub the student is the signed-in user, whatever the field says.

    >>> identity = ui.identity(student_input.value, pin_input.value)
    """
    return {"student": signed_in_user() or student or "", "pin": pin or ""}


def open_ledger(identity) -> DesignLedger:
    """The DesignLedger of a name (str) or of identity()'s value; ValueError for a bad name."""
    user = signed_in_user()
    if user is not None:
        return DesignLedger(user, client=client_id())  # the hub's sign-in, whatever was typed
    if isinstance(identity, dict):
        student, pin = identity.get("student") or "", identity.get("pin") or ""
    else:
        student, pin = identity or "", ""
    if shared_server() and not student.strip():
        raise ValueError("type your name or student id above")
    return DesignLedger(student.strip() or None, secret=pin.strip() or None, client=client_id())


class NotSaved:
    """A step `steps()` cannot save, and why (an invalid setting): shown beside the submit."""

    def __init__(self, step: str, reason: str):
        self.step, self.reason = step, reason


def ledger_step(lab: str, step: str, inputs: dict, predictions: dict, outcomes, what: str, variant=None):
    """One step for submit_to_ledger's `steps()`: its outcomes recomputed by `outcomes(inputs,
    predictions)` (with `variant=` the student's variant, recorded beside the step), or NotSaved
    naming `what` when they refuse the setting.

    >>> ledger_step("07_pipeline_visualizer", "pipeline", inputs, preds, pipeline_outcomes, "the pipeline design", variant)
    """
    try:
        if variant is None:
            return lab, step, inputs, predictions, outcomes(inputs, predictions)
        return lab, step, inputs, predictions, outcomes(inputs, predictions, variant=variant), variant
    except ValueError as err:
        return NotSaved(what, f"its setting is invalid ({err})")


def submit_to_ledger(student, button, steps) -> tuple[mo.Html, dict | None]:
    """The explicit submit button beside a download of the student's ledger.

    `student` is a name or identity()'s value ({"student", "pin"}). `steps()` returns
    (lab, step, inputs, predictions, outcomes) tuples; it runs only when the button was pressed,
    so nothing is saved (or recomputed) on a slider move. Returns the row to show and the saved
    document (None when nothing was submitted). Every ledger problem (a ledger moved aside, one
    that belongs to another session, a read-only folder, a full disk) is shown as a message;
    the download is offered only to a session allowed to read the ledger.

    >>> view, saved = submit_to_ledger(identity, submit_button, lambda: [("05_parallelism", "act1", {...}, {...}, {...})])
    """
    note, saved, download, doc = "", None, None, None
    try:
        ledger = open_ledger(student)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LedgerRecovered)
            try:
                doc = ledger.load()
            except LedgerRecovered as err:
                note = f"⚠ {err}"
            if button.value:
                stored, refused = [], []
                for item in steps():
                    if isinstance(item, NotSaved):
                        refused.append(f"⚠ {item.step} not saved: {item.reason}")
                        continue
                    lab, step, inputs, predictions, outcomes, *variant = item
                    ledger.save_step(lab, step, inputs, predictions, outcomes, variant=variant[0].record() if variant else None)
                    stored.append(step)
                saved = ledger.load() if stored else None
                doc = saved or doc
                done = [f"Saved {', '.join(stored)} to `{ledger.path.name}` at {saved['updated']}."] if stored else ["Nothing saved."]
                note = " ".join([f"⚠ {r}" for r in ledger.recoveries] + done + refused)
            if ledger.path.exists() and doc is not None:
                exported = ledger.export(doc)
                # data as a callable: sent over this session's connection when clicked, never as
                # a URL another browser could fetch (audit I6)
                download = mo.download(data=lambda: exported, filename=f"{ledger.path.stem}.json", mimetype="application/json", label="Download ledger")
            else:
                note = note or "Nothing to download yet: commit a prediction or submit your design first."
    except LedgerLocked as err:
        note = f"🔒 {err}"
    except (LedgerError, ValueError, OSError) as err:
        note = f"⚠ Not saved: {err}"
    items = [button, download, mo.md(note)] if download is not None else [button, mo.md(note)]
    return mo.hstack(items, justify="start", align="center"), saved


# ---- committed predictions ---------------------------------------------------------------------
class Commitment:
    """What the ledger holds for one prediction: the first committed answer (None: skipped), when,
    and the answers the student moved to afterwards (recorded, never replacing the first)."""

    def __init__(self, record: dict | None, held: bool = False):
        self.record = record
        self.held = held  # the instructor holds this question's answer in a live lecture (labs.core.lecture)

    @property
    def made(self) -> bool:
        return self.record is not None

    @property
    def answer(self) -> str | None:
        return self.record["answer"] if self.record else None

    @property
    def skipped(self) -> bool:
        return self.made and self.answer is None

    @property
    def changes(self) -> list[dict]:
        return self.record["changes"] if self.record else []

    def describe(self) -> str:
        if not self.made:
            return "not committed"
        first = "skipped" if self.skipped else self.answer
        return first + (f" (then {', '.join(c['answer'] or 'skipped' for c in self.changes)})" if self.changes else "")


def commit_buttons() -> mo.ui.array:
    """[commit, skip] run buttons for one prediction; create them in a cell of their own."""
    return mo.ui.array([mo.ui.run_button(label="Commit my prediction"), mo.ui.run_button(label="Skip this prediction", kind="neutral")])


def _typed(value) -> str | None:
    """A widget's answer as the ledger keeps it: an option's letter, or a typed number as text."""
    if value is None or isinstance(value, str):
        return value
    return f"{value:g}" if isinstance(value, float) and abs(value) < 1e15 else str(value)


def commit_prediction(identity, lab: str, question_key: str, question, buttons, variant=None, held=None) -> tuple[mo.Html, Commitment]:
    """Record the widget's answer (an option's letter, or a typed number) in the ledger when the
    commit button is pressed (or a skip when skip is), with its time; a later different answer is
    recorded as a change. `variant`: the student's variant (labs.variants), recorded with the
    commit. `held`: the questions of this lab the instructor holds now (live_lecture's state).
    Returns the row to show and the Commitment as the ledger holds it, so a page reload keeps it."""
    commit, skip = buttons.value if hasattr(buttons, "value") else buttons
    note, record = "", None
    try:
        ledger = open_ledger(identity)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LedgerRecovered)
            if commit and question.value is None:
                note = "Choose an option (or type a number) first, or skip."
            elif commit or skip:
                ledger.commit_prediction(lab, question_key, None if skip and not commit else _typed(question.value),
                                         variant=variant.record() if variant is not None else None)
            record = ledger.committed(lab, question_key)
            if (commit or skip) and record is not None:
                lecture.record_answer(lab, question_key, ledger.student, record)  # the instructor's histogram, in a live lecture
    except LedgerLocked as err:
        note = f"🔒 {err}"
    except (LedgerError, ValueError, OSError) as err:
        note = f"⚠ Not recorded: {err}"
    made = Commitment(record, held=question_key in (held or ()))
    if made.made:
        when = record["committed"].replace("T", " ").replace("+00:00", " UTC")
        note = note or ((f"Skipped at {when}." if made.skipped else f"Committed **{made.answer}** at {when}.")
                        + (f" Later answers are recorded as changes: {', '.join(c['answer'] or 'skipped' for c in made.changes)}; the first commitment is graded." if made.changes else ""))
    widgets = list(buttons) if isinstance(buttons, mo.ui.array) else ([buttons] if hasattr(buttons, "value") else [])
    return mo.hstack([*widgets, mo.md(note)], justify="start", align="center"), made


def commitment_gate(made: Commitment, what: str = "the instruments") -> None:
    """Stop the calling cell (and everything downstream) until the prediction is committed or
    skipped, and, in a live lecture, while the instructor holds the question."""
    if not made.made:  # the callout is built only when shown: this runs in every gated cell on every move
        mo.stop(True, mo.callout(mo.md(f"Commit to a prediction above (or skip it) to unlock {what}."), kind="warn"))
    mo.stop(made.held, _HELD)


_HELD = mo.callout(mo.md("Committed. **Your instructor is holding this question's answer**: it opens here, for everyone, when they release it."), kind="info")


def gate(*made: Commitment, what: str | None = None, stop: bool = True, held: tuple = (), held_note: bool = False) -> bool:
    """The one gate for everything that bears on a prediction (instruments, cards, charts,
    tables, reveal, math, reflection, takeaways): open only when every one of `made` is
    committed (or skipped) and none is held by the instructor in a live lecture, so a hold hides
    exactly what the lock hides. `held`: more predictions that need not be committed but must
    not be held (a submit that records every prediction of the lab, judged). Closed, it stops
    the calling cell and everything downstream: with `what`, showing why (commitment_gate's
    note, or the hold's), else quietly; `held_note`: quietly while not committed, the hold's
    note while held (the reveal's place, in a section whose first cell says nothing). With
    stop=False it returns False instead of stopping (a HUD line that shows "—").

    >>> ui.gate(act1_committed, what="the Act I instruments")   # the first cell of a section
    >>> ui.gate(act1_committed)                                  # every other cell below it
    >>> ui.gate(act1_committed, held_note=True)                  # the reveal, below a quiet section
    >>> ui.gate(act2_committed, held=(act1_committed,))          # the submit
    """
    shut = any(not m.made or m.held for m in made) or any(m.held for m in held)
    if shut and stop:
        for m in made if what is not None else ():
            commitment_gate(m, what)
        on_hold = all(m.made for m in made) and any(m.held for m in (*made, *held))
        mo.stop(True, _HELD if on_hold and (what is not None or held_note) else None)
    return not shut


# ---- live lecture ------------------------------------------------------------------------------
def _held_keys(lab: str) -> frozenset:
    return frozenset(question for held_lab, question in lecture.held() if held_lab == lab)


def live_lecture(lab: str):
    """(clock, held_now, set_held) for a lab's live-lecture cells. With LABS_LECTURE_DIR (set by
    the class hub) the clock is a refresh widget that ticks every 3 s and held_now() is the set of
    this lab's questions the instructor holds; without it the clock is empty and nothing is held.
    Show the clock in its own cell; call poll_lecture in another that references it; pass
    held=held_now() to commit_prediction.

    >>> lecture_clock, held_now, set_held = ui.live_lecture(LAB)
    """
    held_now, set_held = mo.state(_held_keys(lab))
    if lecture.directory() is None:
        return mo.md(""), held_now, set_held
    return mo.ui.refresh(options=["3s"], default_interval="3s", label="Live lecture"), held_now, set_held


def poll_lecture(lab: str, clock, held_now, set_held) -> None:
    """On each tick of the clock, update the held set only when it changed, so the cells that
    read it re-run only when the instructor holds or releases a question."""
    del clock  # referenced so that marimo runs this cell on every tick
    now = _held_keys(lab)
    if now != held_now():
        set_held(now)

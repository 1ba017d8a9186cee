"""One self-contained HTML page per student (`--feedback DIR`): per lab, each question's
committed answer (its letter and its option's text, as the student's variant showed it; "skipped"
for a skip) and later changes, the engine's answer with its one-line why, the points and the
integrity label, all as the grade book has them; the designs handed in against the engine's best
plan; marks, lateness and the flags that concern the student (the grader's identity checks, such
as "same id in 2 other file(s)", are for the instructor: the grade book CSV has them). Every value
from a ledger is escaped; the page loads nothing (no script, no link), so it opens offline. Each
student gets a page of their own, even for ids that differ only by spaces."""

from __future__ import annotations

import hashlib
import html
import re
from functools import lru_cache
from pathlib import Path

import pandas as pd

from labs.core.scenarios import lab05, lab09
from labs.core.state import ledger_stem, normalise_student
from labs.gradebook.book import Book
from labs.gradebook.exports import (
    NO_ANSWER,
    SKIPPED,
    answer_text,
    committed_answer,
    lab_title,
    student_variant_of,
)

STYLE = """body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d2330}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1.2rem}th,td{border:1px solid #d5d9e0;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f2f4f7}.right{color:#17663a}.wrong{color:#a3261b}.flag{background:#fff4e0;padding:.4rem .6rem;border-left:4px solid #d08a00}
.total{font-size:1.2rem}small{color:#5b6475}"""


def e(value) -> str:
    """Any value as escaped text ('' for None/NaN)."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    text = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(value))
    return html.escape(text, quote=True)  # control characters shown as their escapes, markup as text


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # category Cc but newline and tab (a page's ~500,000 cells, one regex each, not a loop per character)


def _plan(row) -> dict:
    return {k: (float(row[k]) if k == "mfu" else int(row[k])) for k in ("tp", "pp", "dp", "micro_batch", "mfu")}


@lru_cache(maxsize=None)
def best_plans() -> dict[tuple, dict]:
    """(lab, step, scenario) -> the engine's best plan (TP, PP, DP, micro-batch, MFU) of the steps
    every student shares: Lab 09's jobs. Lab 05's Act II is the student's own (lab05_best)."""
    return {(lab09.LAB, "worksheet", key): _plan(lab09.recipe(key)["best"]) for key in lab09.JOBS}


@lru_cache(maxsize=64)
def lab05_best(model_key: str, global_batch: int, version: int) -> dict:
    """Lab 05 Act II's best plan as the student's edition asked it: from the third edition on, the
    fastest fitting layout of the variant's model under the settings the question states; before,
    the best plan of GPT-3 175B at the variant's batch with every setting free."""
    if version >= 3:
        return _plan(lab05.design_best_row(model_key, global_batch))
    return _plan(lab05.best_design(global_batch))


def _lab05_best_for(doc: dict) -> dict:
    record = (doc.get("variants") or {}).get("05_parallelism") or {}
    settings = record.get("settings") or {} if isinstance(record, dict) else {}
    model_key = lab05.design_model_of(settings)
    batch = settings.get("design_batch", lab05.DESIGN_GLOBAL_BATCH)
    return lab05_best(str(model_key), int(batch), int(record.get("version", 1)) if isinstance(record, dict) and "settings" in record else 1)


DESIGN_COLUMNS = ["student", "file", "lab", "step", "status", "input.tp", "input.pp", "input.dp", "input.scenario", "fits", "mfu"]


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _designs(rows: list[dict], doc: dict) -> str:
    """The student's submitted designs (the grader's rows) against the engine's best plans; Lab
    05's at the student's own variant (the grader has checked the recorded variant: a row whose
    variant differs is not "ok" and is left out)."""
    try:
        plans = {("05_parallelism", "act2", None): _lab05_best_for(doc), **best_plans()}
    except Exception:  # noqa: BLE001 - the page goes out without the comparison
        return ""
    lines = []
    for (lab, step, scenario), best in plans.items():
        for r in rows:
            if r.get("lab") != lab or r.get("step") != step or r.get("status") != "ok" or _missing(r.get("input.tp")):
                continue
            if scenario is not None and r.get("input.scenario") != scenario:
                continue
            where = e(lab_title(lab)) + (f" · {e(lab09.JOB_LABELS.get(scenario, scenario))}" if scenario else "")
            degrees = " × ".join(f"{k.upper()} {int(r[f'input.{k}'])}" for k in ("tp", "pp", "dp") if not _missing(r.get(f"input.{k}")))
            mfu = r.get("mfu")
            how = ("fits" if r.get("fits") else "does not fit in memory") + (f", MFU {float(mfu):.1%}" if not _missing(mfu) else "")
            engine = f"TP {best['tp']} × PP {best['pp']} × DP {best['dp']}, micro-batch {best['micro_batch']}: MFU {best['mfu']:.1%}"
            lines.append(f"<tr><td>{where}</td><td>{degrees}: {how}</td><td>{engine}</td></tr>")
    if not lines:
        return ""
    return "<h2>Your designs against the engine's best plan</h2><table><tr><th>step</th><th>yours</th><th>the engine's best</th></tr>" + "".join(lines) + "</table>"


def _changes(doc: dict, lab: str, item: str, variant=None) -> str:
    record = doc.get("predictions", {}).get(lab, {}).get(item)
    if not isinstance(record, dict):
        return ""
    first = f"committed {e(record.get('committed'))}"
    later = "; ".join(f"then {e(answer_text(lab, item, c.get('answer'), variant) if c.get('answer') is not None else SKIPPED)} at {e(c.get('at'))}"
                      for c in record.get("changes", []) if isinstance(c, dict))
    return f"<small>{first}{'; ' + later if later else ''}</small>"


def student_flags(flags: str, identity=()) -> str:
    """A lab's flags without the grader's identity checks (each of `identity` is one of the
    grader's identity texts, as the grade book wrote it into the flags)."""
    text = flags or ""
    for who in sorted({i for i in identity if i}, key=len, reverse=True):
        text = text.replace(who, "")
    return "; ".join(part for part in (p.strip() for p in text.split("; ")) if part)


def page(student: str, earned: float, possible: float, labs: list[dict], items: list[dict], rows: list[dict], doc: dict,
         salt: str | None = None, identity=()) -> str:
    """One student's page from their grade-book rows (labs, items), the grader's rows and their
    ledger; `salt` regenerates the variant the answers' option texts come from; `identity`: the
    grader's identity flags, left off the page."""
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Feedback: {e(student)}</title><style>{STYLE}</style></head><body>",
             f"<h1>Parallelism Labs: feedback for {e(student)}</h1>",
             f"<p class='total'><b>{earned:g}</b> of {possible:g} points</p>",
             "<p><small>Every outcome was recomputed by the engine from the inputs you recorded; each question is graded by the first answer you committed.</small></p>"]
    for lab_row in labs:
        lab = lab_row["lab"]
        parts.append(f"<h2>{e(lab_title(lab))}: {lab_row['earned']:g} of {lab_row['possible']:g}</h2>")
        if not lab_row["submitted"]:
            parts.append("<p>Nothing handed in for this lab.</p>")
            continue
        if lab_row["handed_in"]:
            parts.append(f"<p><small>Handed in {e(lab_row['handed_in'])} ({e(lab_row['time_source'])})</small></p>")
        parts.append("<table><tr><th>item</th><th>your answer</th><th>the engine's answer</th><th>points</th><th>integrity</th></tr>")
        variant = student_variant_of(lab, student, doc, salt)
        for it in (i for i in items if i["lab"] == lab):
            if it["kind"] == "marked":
                answer, engine = f"<blockquote>{e(it['answer']) or '<i>blank</i>'}</blockquote>", "<small>marked by your instructor</small>"
            else:
                mark = "" if it["right"] is None else ("<span class='right'>✓</span> " if it["right"] else "<span class='wrong'>✗</span> ")
                words = committed_answer(doc, lab, it["item"], it["answer"], variant)
                answer = mark + (f"<i>{e(words)}</i>" if words in (SKIPPED, NO_ANSWER) else e(words)) + "<br>" + _changes(doc, lab, it["item"], variant)
                engine = e(it["why"])
            note = f"<br><small>{e(it['note'])}</small>" if it["note"] else ""
            parts.append(f"<tr><td>{e(it['item'])}</td><td>{answer}</td><td>{engine}</td><td>{it['earned']:g} / {it['points']:g}{note}</td><td>{e(it['label'] or 'self-reported')}</td></tr>")
        parts.append("</table>")
        shown = student_flags(lab_row["flags"], identity)
        if shown:
            parts.append(f"<p class='flag'>{e(shown)}</p>")
    parts.append(_designs(rows, doc))
    parts.append("</body></html>")
    return "\n".join(parts)


def _by_student(frame: pd.DataFrame, columns=None) -> dict[str, list[dict]]:
    """A frame's rows as dicts, grouped by student (once, not filtered per student)."""
    out: dict[str, list[dict]] = {}
    if frame.empty:
        return out
    names = [c for c in columns if c in frame] if columns else list(frame.columns)
    # a column at a time as Python values (Series.tolist: the values to_dict("records") gives, types
    # included, without its per-cell boxing: ~3x faster over a class's 100,000 items)
    for values in zip(*[frame[c].tolist() for c in names]):
        r = dict(zip(names, values))
        out.setdefault(r["student"], []).append(r)
    return out


def write_all(book: Book, table: pd.DataFrame, documents: dict[str, dict], folder: str | Path, salt: str | None = None) -> list[Path]:
    """One page per student in the grade book, named like their ledger (`<slug>-<hash>.html`);
    never two students on one file (page_stem)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    items, labs, rows = _by_student(book.items), _by_student(book.labs), _by_student(table, DESIGN_COLUMNS)
    identity = _by_student(table, ["student", "identity"])
    written, taken = [], set()
    for total in book.totals.to_dict("records"):
        student = total["student"]
        mine = rows.get(student, [])
        file = next((r["file"] for r in mine if Path(r["file"]).name == total["file"]), None)
        mine = [r for r in mine if r["file"] == file]
        flags = {r.get("identity") for r in identity.get(student, []) if isinstance(r.get("identity"), str)} - {""}
        stem = page_stem(student)
        if stem.casefold() in taken:  # never on a case-blind disk either
            stem = f"{stem}-{_digest(student)}"
        taken.add(stem.casefold())
        path = folder / f"{stem}.html"
        path.write_text(page(student, float(total["total"]), book.course_possible, labs.get(student, []), items.get(student, []), mine,
                             documents.get(file, {}) if file else {}, salt, {*flags, "; ".join(sorted(flags))}),
                        encoding="utf-8", errors="backslashreplace")
        written.append(path)
    return written


def _digest(student: str) -> str:
    return hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def page_stem(student: str) -> str:
    """The page's file name: the ledger's own stem for an id as the labs write it; an id that
    differs from its normal form (two spaces, an NBSP or an ideographic space where the labs
    write one space: audit N13) keeps the slug but takes the digest of the id as handed in, so
    it never lands on another student's page; an id no lab would accept (a control character, a
    blank) gets `invalid-id-` and its digest."""
    try:
        normal = normalise_student(student)
    except ValueError:
        return "invalid-id-" + _digest(student)
    stem = ledger_stem(normal)
    return stem if normal == student else f"{stem.rsplit('-', 1)[0]}-{_digest(student)}"

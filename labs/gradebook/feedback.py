"""One self-contained HTML page per student (`--feedback DIR`): per lab, each question's
committed answer and later changes, the engine's answer with its one-line why, the points and
the integrity label; the designs handed in against the engine's best plan; marks, lateness and
flags. Every value from a ledger is escaped; the page loads nothing (no script, no link), so it
opens offline."""

from __future__ import annotations

import html
from functools import lru_cache
from pathlib import Path

import pandas as pd

from labs.core.scenarios import lab05, lab09
from labs.core.state import ledger_stem
from labs.gradebook.book import Book
from labs.gradebook.exports import lab_title
from labs.gradebook.questions import why

STYLE = """body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d2330}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1.2rem}th,td{border:1px solid #d5d9e0;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f2f4f7}.right{color:#17663a}.wrong{color:#a3261b}.flag{background:#fff4e0;padding:.4rem .6rem;border-left:4px solid #d08a00}
.total{font-size:1.2rem}small{color:#5b6475}"""


def e(value) -> str:
    """Any value as escaped text ('' for None/NaN)."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return html.escape(str(value), quote=True)


@lru_cache(maxsize=None)
def best_plans() -> dict[tuple, dict]:
    """(lab, step, scenario) -> the engine's best plan: TP, PP, DP, micro-batch, MFU."""
    def plan(row):
        return {k: (float(row[k]) if k == "mfu" else int(row[k])) for k in ("tp", "pp", "dp", "micro_batch", "mfu")}

    out = {("05_parallelism", "act2", None): plan(lab05.best_design())}
    for key in lab09.JOBS:
        out[(lab09.LAB, "worksheet", key)] = plan(lab09.recipe(key)["best"])
    return out


def _designs(rows: pd.DataFrame) -> str:
    try:
        plans = best_plans()
    except Exception:  # noqa: BLE001 - the page goes out without the comparison
        return ""
    lines = []
    for (lab, step, scenario), best in plans.items():
        mine = rows[rows["lab"].eq(lab) & rows["step"].eq(step) & rows["status"].eq("ok")] if not rows.empty else rows
        if scenario is not None:
            mine = mine[mine["input.scenario"].eq(scenario)] if "input.scenario" in mine else mine.iloc[0:0]
        for r in mine.to_dict("records"):
            if pd.isna(r.get("input.tp", float("nan"))):
                continue
            where = e(lab_title(lab)) + (f" · {e(lab09.JOB_LABELS.get(scenario, scenario))}" if scenario else "")
            degrees = " × ".join(f"{k.upper()} {int(r[f'input.{k}'])}" for k in ("tp", "pp", "dp") if not pd.isna(r.get(f"input.{k}", float("nan"))))
            mfu = r.get("mfu")
            how = ("fits" if r.get("fits") else "does not fit in memory") + (f", MFU {float(mfu):.1%}" if mfu is not None and not pd.isna(mfu) else "")
            engine = f"TP {best['tp']} × PP {best['pp']} × DP {best['dp']}, micro-batch {best['micro_batch']}: MFU {best['mfu']:.1%}"
            lines.append(f"<tr><td>{where}</td><td>{degrees}: {how}</td><td>{engine}</td></tr>")
    if not lines:
        return ""
    return "<h2>Your designs against the engine's best plan</h2><table><tr><th>step</th><th>yours</th><th>the engine's best</th></tr>" + "".join(lines) + "</table>"


def _changes(doc: dict, lab: str, item: str) -> str:
    record = doc.get("predictions", {}).get(lab, {}).get(item)
    if not record:
        return ""
    first = f"committed {e(record.get('committed'))}"
    later = "; ".join(f"then {e(c['answer'] if c['answer'] is not None else 'skipped')} at {e(c['at'])}" for c in record.get("changes", []))
    return f"<small>{first}{'; ' + later if later else ''}</small>"


def page(student: str, book: Book, rows: pd.DataFrame, doc: dict) -> str:
    total = book.totals[book.totals["student"].eq(student)]
    earned = float(total["total"].iloc[0]) if len(total) else 0.0
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Feedback: {e(student)}</title><style>{STYLE}</style></head><body>",
             f"<h1>Parallelism Labs: feedback for {e(student)}</h1>",
             f"<p class='total'><b>{earned:g}</b> of {book.course_possible:g} points</p>",
             "<p><small>Every outcome was recomputed by the engine from the inputs you recorded; each question is graded by the first answer you committed.</small></p>"]
    items = book.items[book.items["student"].eq(student)]
    for lab_row in book.labs[book.labs["student"].eq(student)].to_dict("records"):
        lab = lab_row["lab"]
        parts.append(f"<h2>{e(lab_title(lab))}: {lab_row['earned']:g} of {lab_row['possible']:g}</h2>")
        if not lab_row["submitted"]:
            parts.append("<p>Nothing handed in for this lab.</p>")
            continue
        if lab_row["handed_in"]:
            parts.append(f"<p><small>Handed in {e(lab_row['handed_in'])} ({e(lab_row['time_source'])})</small></p>")
        parts.append("<table><tr><th>item</th><th>your answer</th><th>the engine's answer</th><th>points</th><th>integrity</th></tr>")
        for it in items[items["lab"].eq(lab)].to_dict("records"):
            if it["kind"] == "marked":
                answer, engine = f"<blockquote>{e(it['answer']) or '<i>blank</i>'}</blockquote>", "<small>marked by your instructor</small>"
            else:
                mark = "" if it["right"] is None else ("<span class='right'>✓</span> " if it["right"] else "<span class='wrong'>✗</span> ")
                answer = mark + (e(it["answer"]) if it["answer"] is not None else "<i>skipped or not committed</i>") + "<br>" + _changes(doc, lab, it["item"])
                engine = e(why(lab, it["item"]))
            note = f"<br><small>{e(it['note'])}</small>" if it["note"] else ""
            parts.append(f"<tr><td>{e(it['item'])}</td><td>{answer}</td><td>{engine}</td><td>{it['earned']:g} / {it['points']:g}{note}</td><td>{e(it['label'] or 'self-reported')}</td></tr>")
        parts.append("</table>")
        if lab_row["flags"]:
            parts.append(f"<p class='flag'>{e(lab_row['flags'])}</p>")
    parts.append(_designs(rows))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_all(book: Book, table: pd.DataFrame, documents: dict[str, dict], folder: str | Path) -> list[Path]:
    """One page per student in the grade book, named like their ledger (`<slug>-<hash>.html`)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = book.totals.set_index("student")["file"].to_dict()
    by_student = dict(tuple(table.groupby("student"))) if not table.empty else {}
    written = []
    for student in book.totals["student"]:
        rows = by_student.get(student, pd.DataFrame(columns=["lab", "step", "status"]))
        file = next((f for f in rows.get("file", []) if Path(f).name == files.get(student)), None)
        rows = rows[rows["file"].eq(file)] if file is not None else rows.iloc[0:0]
        path = folder / f"{ledger_stem(student)}.html"
        path.write_text(page(student, book, rows, documents.get(file, {}) if file else {}), encoding="utf-8")
        written.append(path)
    return written

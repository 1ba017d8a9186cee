"""Markdown whose numbers change with a slider, converted once per template.

marimo's mo.md runs Python-Markdown with a dozen extensions on every call: 1-2.5 ms of CPU for a
section's paragraph, on every move that re-runs its cell. Here the template is converted once with
a plain word in each field's place, and each move puts its values (HTML-escaped, as the converter
escapes text) where those words came out: the same HTML as mo.md of the filled-in text, as long as
the values are plain text the converter would leave alone (letters, digits, spaces, . , % ( ) -),
and no field sits in a heading (its id is made from its text). Anything else is converted whole.
"""

from __future__ import annotations

import re
from functools import lru_cache
from html import escape

import marimo as mo

PLAIN = re.compile(r"[A-Za-z0-9.,%()\-]([A-Za-z0-9 .,%()\-]*[A-Za-z0-9.,%()\-])?\Z")  # text none of marimo's Markdown extensions rewrites


def _slot(i: int) -> str:
    return f"mdfieldslot{i}x"


@lru_cache(maxsize=64)
def _converted(template: str, names: tuple[str, ...]) -> str | None:
    """mo.md's HTML of `template` with each field a slot word; None when a field starts a line or
    is in a heading."""
    filled = template.format(**{name: _slot(i) for i, name in enumerate(names)})
    if any(line.lstrip().startswith(("#", "mdfieldslot")) and "mdfieldslot" in line for line in filled.splitlines()):
        return None
    return mo.md(filled).text


def filled_md(template: str, **values: str) -> mo.Html:
    """mo.md(template.format(**values)), the template converted once (str.format fields)."""
    texts = {name: str(value) for name, value in values.items()}
    plain = all(PLAIN.match(t) and "www" not in t.lower() for t in texts.values())
    html = _converted(template, tuple(texts)) if plain else None
    if html is None:
        return mo.md(template.format(**texts))
    for i, text in enumerate(texts.values()):
        html = html.replace(_slot(i), escape(text, quote=False))
    return mo.Html(html)

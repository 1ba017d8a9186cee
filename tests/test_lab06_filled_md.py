"""labs.core.filled_md, as Lab 06's myths use it: the same HTML as mo.md of the filled-in text, the
template converted once, and the whole text converted where a value or a field's place could change
the markdown."""

import marimo as mo
import pytest

from labs.core import filled_md as fm
from labs.core.engine.models import MODELS
from labs.core.scenarios.lab06 import SWEEP_MODELS

TEMPLATE = "## 4 · Myths\n\n- *\"said\"* **Engine:** {name}, ZeRO-3: {a} GB on 8 GPUs and {b} GB on {most}.\n- at {m} micro-batch(es), {r}x."


@pytest.mark.parametrize("name", [MODELS[k].name for k in SWEEP_MODELS])
@pytest.mark.parametrize("a, b", [("1,234.5", "0.0"), ("17", "-3.25"), ("12,345,678.9", "(1.5%)")])
def test_filled_equals_mo_md_of_the_filled_text(name, a, b):
    values = {"name": name, "a": a, "b": b, "most": "1024", "m": "4", "r": "2.00"}
    assert fm.filled_md(TEMPLATE, **values).text == mo.md(TEMPLATE.format(**values)).text


def test_the_template_is_converted_once(monkeypatch):
    fm._converted.cache_clear()
    calls = []
    real = mo.md
    monkeypatch.setattr(fm.mo, "md", lambda text: calls.append(text) or real(text))
    for a in ("1.0", "2.0", "3.0"):
        fm.filled_md(TEMPLATE, name="Llama 2 70B", a=a, b="1", most="1024", m="1", r="1.00")
    assert len(calls) == 1 and "mdfieldslot" in calls[0]


@pytest.mark.parametrize("template, value", [
    (TEMPLATE, "*bold*"), (TEMPLATE, "a_b_c"), (TEMPLATE, "<b>"), (TEMPLATE, " padded"), (TEMPLATE, ""),
    (TEMPLATE, "$x$"), (TEMPLATE, "www.example.com"), ("## {name} heading", "Llama 2 70B"), ("{name}. starts a line", "1"),
])
def test_values_or_places_markdown_could_change_are_converted_whole(template, value, monkeypatch):
    values = {"name": value, "a": "1", "b": "2", "most": "3", "m": "4", "r": "5"}
    whole = []
    real = mo.md
    monkeypatch.setattr(fm.mo, "md", lambda text: whole.append("mdfieldslot" not in text) or real(text))
    out = fm.filled_md(template, **{k: v for k, v in values.items() if "{" + k + "}" in template})
    assert out.text == real(template.format(**values)).text and whole[-1]

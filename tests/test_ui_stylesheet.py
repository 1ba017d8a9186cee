"""The labs' stylesheet (style.LAB_CSS) is on every page once, in the page's first output (its title,
a cell that reads nothing, so no move or new name re-runs it), and ui's components carry none:
each copy a re-run output re-sent was a <style> mounted again, the page's styles recalculated."""

from pathlib import Path

import pytest
from test_notebooks import shared_app

from labs.core import problem_ui, ui
from labs.core.scenarios.problems_memory import CHAPTER
from labs.core.style import LAB_CSS

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "labs").glob("[0-9][0-9]_*.py")) + sorted((ROOT / "labs" / "problems").glob("ps[0-9][0-9]_*.py"))
STYLED = ("lab-card", "lab-table", "lab-hud", "lab-bar", "lab-message")

pytestmark = pytest.mark.usefixtures("ledger_dir")


def test_the_components_carry_no_stylesheet():
    drawn = [
        ui.stakeholder_message("Lead", "MFU fell from 54% to 13%."),
        ui.metric_cards({"MFU": "41.7%"}),
        ui.static_table([{"GPUs": "8", "MFU": "41.7%"}]),
        ui.stacked_bar({"weights": (17.5, "#0072B2")}, "GB", (80.0, "80 GB HBM")),
        ui.hud({"engine": "1"}),
    ]
    for html, cls in zip(drawn, ("lab-message", "lab-card", "lab-table", "lab-bar", "lab-hud"), strict=True):
        assert f'class="{cls}"' in html.text
        assert "<style" not in html.text


def test_with_stylesheet_puts_one_copy_in_front():
    page = ui.with_stylesheet(ui.mo.md("# Title"))
    assert page.text.startswith(LAB_CSS) and page.text.count("<style") == 1
    assert page.text[len(LAB_CSS):] == ui.mo.md("# Title").text


def test_a_problem_sets_header_carries_the_stylesheet():
    assert problem_ui.header(CHAPTER).text.startswith(LAB_CSS)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_the_stylesheet_is_on_the_page_once_in_its_first_output(page):
    outputs, _ = shared_app(page).run()
    texts = [getattr(o, "text", "") or "" for o in outputs]
    assert sum(t.count("<style") for t in texts) == 1
    assert sum(t.count(LAB_CSS) for t in texts) == 1
    first = next(k for k, t in enumerate(texts) if t)
    assert texts[first].startswith(LAB_CSS)
    styled = [k for k, t in enumerate(texts) if any(f'class="{c}"' in t for c in STYLED)]
    assert styled and min(styled) > first

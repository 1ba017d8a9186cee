"""Lab 15 in a real browser (Debian's Chromium, `marimo run`): commit the three predictions, see
the reveal, move the capacity slider and watch the drops chart and card follow the router, submit,
download a ledger that validates against assets/ledger.schema.json, and grade it."""

import json

import jsonschema
import pytest
from browser import (
    answer,
    browser_page,
    marimo_run,
    metric,
    sign_in,
    submit_and_download,
)

from labs.core.scenarios import lab15
from labs.core.state import load_schema
from labs.variants import variant

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

# The charts are plain SVG (labs.core.routing_svg): each line point's hover text, by line name.
CHART = ("el => JSON.stringify({title: el.querySelector('text') && el.querySelector('text').textContent, lines: Object.fromEntries("
         "[...el.querySelectorAll('g.line')].map(g => [g.dataset.name, [...g.querySelectorAll('circle > title')].map(t => t.textContent)]))})")


def _chart(page, title: str, tries: int = 300) -> dict | None:
    """The drawn chart titled `title` (its title and lines' hover texts), once on the page."""
    for _ in range(tries):
        for plot in page.locator("svg[role=img]").all():
            chart = json.loads(plot.evaluate(CHART))
            if (chart["title"] or "").startswith(title):
                return chart
        page.wait_for_timeout(200)
    return None


def _drops_hover(run, capacity: float) -> str:
    label = lab15.SCHEME_LABELS[run.setting.scheme]
    return f"{label}, c = {capacity:g}: {100 * run.dropped_share(capacity, lab15.WINDOW):.2f}% dropped"


@pytest.mark.serves("15_moe_routing.py")
def test_lab15_end_to_end(tmp_path, served_ledgers):
    student = "router student"
    with marimo_run("15_moe_routing.py", env={"LABS_LEDGER_DIR": str(served_ledgers)}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the router's instruments").wait_for()
        sign_in(page, student)
        mine = variant(lab15.LAB, student).questions
        answer(page, mine["balance"], commit=0, box=0)
        answer(page, mine["drops"], commit=1)
        answer(page, mine["cost"], commit=2, box=1)
        page.get_by_text("Right").first.wait_for()
        run = lab15.router_run(**{k: lab15.DEFAULT_INPUTS[k] for k in ("scheme", "aux_coeff", "gamma", "max_nodes", "skew", "drift")})
        chart = _chart(page, "dropped tokens by capacity factor (yours: 1.25)")
        assert chart and _drops_hover(run, 1.25) in chart["lines"][lab15.SCHEME_LABELS[run.setting.scheme]]
        assert _chart(page, f"{lab15.SCHEME_LABELS[run.setting.scheme]}: tokens per expert, and the busiest GPU")
        assert metric(page, "dropped at c = 1.25") == f"{run.dropped_share(1.25, lab15.WINDOW):.2%}"

        slider = page.get_by_role("slider").nth(3)  # node limit, skew, drift, capacity: 1.25 -> 1.5
        slider.focus()
        slider.press("ArrowRight")
        assert _chart(page, "dropped tokens by capacity factor (yours: 1.5)")
        assert not page.locator(".js-plotly-plot").count()  # no Plotly figure left to redraw on a move
        page.locator(".lab-card .value", has_text=f"{run.dropped_share(1.5, lab15.WINDOW):.2%}").first.wait_for()
        path = submit_and_download(page, "Submit my router to the ledger", tmp_path / "downloaded.json")

    doc = json.loads(path.read_text())
    jsonschema.validate(doc, load_schema())
    step = doc["labs"][lab15.LAB][lab15.STEP]
    assert doc["student"] == student and step["inputs"]["capacity"] == 1.5
    assert step["outcomes"]["dropped_share"] == pytest.approx(run.dropped_share(1.5, lab15.WINDOW))
    assert doc["predictions"][lab15.LAB]["drops"]["answer"] == mine["drops"].key

    from labs.grade import grade

    table, problems = grade([str(served_ledgers)])
    row = table[(table.lab == lab15.LAB)].iloc[0]
    assert not problems and row["status"] == "ok" and bool(row["drops_correct"]) and bool(row["balance_correct"]) and bool(row["cost_correct"])

"""Lab 07 at its largest setting in a real browser (Debian's Chromium, `marimo run`): after the
lock is answered, p = 64 and m = 256 draw as raster images, and a play-slider step moves the marker
on the page. Before issue 13 one step redrew ~115k SVG boxes and took 45-52 s here."""

import json

import pytest

from browser import answer, browser_page, marimo_run
from labs.variants import variant
from labs.core.engine.pipeline import timeline

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

STEP_BOUND_MS = 30_000  # generous for a loaded 2-core machine; the old drawing needed 45 s and more

SHAPES = "el => JSON.stringify(((el.layout || {}).shapes || []).map(s => [s.type, s.x0, s.xref]))"
TRACES = "el => (el.data || []).map(t => t.type)"




def test_lab07_at_p64_m256_answers_a_play_step(tmp_path):
    with marimo_run("07_pipeline_visualizer.py", env={"LABS_LEDGER_DIR": str(tmp_path)}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the timelines").wait_for()
        answer(page, variant("07_pipeline_visualizer", "student").questions["utilisation"], commit=0)
        page.get_by_text("1F1B: p=4, m=8, v=1").first.wait_for()
        stages = page.get_by_role("slider").nth(0)
        stages.focus()
        stages.press("End")
        page.get_by_text("1F1B: p=64, m=8, v=1").first.wait_for(timeout=120_000)
        page.get_by_text("must lie in [p=64, m=8]").first.wait_for(timeout=120_000)  # interleaved refused: a banner above the chart
        page.locator(".js-plotly-plot").first.evaluate("el => { window.__drawn = el; }")
        micro = page.get_by_role("slider").nth(1)
        micro.focus()
        micro.press("End")
        page.get_by_text("1F1B: p=64, m=256, v=1").first.wait_for(timeout=120_000)
        page.get_by_text("interleaved 1F1B: p=64, m=256, v=2").first.wait_for(timeout=120_000)
        plot = page.locator(".js-plotly-plot").first  # both schedules, one subplot each (charts.timelines_figure)
        # the banner went and the chart kept its place: the same plot element, updated, not drawn anew
        assert plot.evaluate("el => el === window.__drawn") and page.get_by_text("must lie in [p=64").count() == 0
        assert plot.evaluate(TRACES).count("image") == 2  # one raster image per schedule, not one shape per op
        assert plot.evaluate(TRACES)[0] == "image" and "heatmap" not in plot.evaluate(TRACES)
        assert plot.evaluate(SHAPES) == "[]"  # played to 100%: no marker
        assert plot.evaluate("el => [...el.querySelectorAll('image')].filter(i => (i.getAttribute('href') || '').startsWith('data:image/png')).length") == 2

        play = page.get_by_role("slider").nth(5)
        play.focus()
        play.press("ArrowLeft")  # 100% -> 95%
        page.wait_for_function(
            "() => { const f = (root) => { for (const el of root.querySelectorAll('*')) {"
            " if (el.classList && el.classList.contains('js-plotly-plot')) return el;"
            " if (el.shadowRoot) { const x = f(el.shadowRoot); if (x) return x; } } return null; };"
            " const el = f(document); return !!(el && el.layout && (el.layout.shapes || []).length === 4); }",
            timeout=STEP_BOUND_MS,
        )
        shapes = json.loads(page.locator(".js-plotly-plot").first.evaluate(SHAPES))
    one, interleaved = timeline(64, 256, "1f1b").makespan, timeline(64, 256, "interleaved", 2).makespan
    # the veil and the line at 95% of each schedule's step, on its own subplot
    assert [(s[0], s[2]) for s in shapes] == [("rect", "x2"), ("line", "x2"), ("rect", "x3"), ("line", "x3")]
    assert [s[1] for s in shapes] == [pytest.approx(0.95 * one)] * 2 + [pytest.approx(0.95 * interleaved)] * 2


FILLS = "el => (el.data || []).map(t => t.type + ':' + (t.fill || '') + ':' + (t.xaxis || 'x'))"


def test_lab07_draws_a_middle_timeline_as_filled_boxes(tmp_path):
    """p = 16, m = 32: 1F1B's 1,024 ops (above charts.BAR_OPS) as filled paths on the first
    subplot, one trace per op kind and shade (no bar), interleaved's 2,048 (above RASTER_OPS)
    as the raster image on the second."""
    from labs.core import charts

    t = timeline(16, 32, "1f1b")
    assert charts.BAR_OPS < len(t.op) <= charts.RASTER_OPS < len(timeline(16, 32, "interleaved", 2).op)
    with marimo_run("07_pipeline_visualizer.py", env={"LABS_LEDGER_DIR": str(tmp_path)}) as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the timelines").wait_for()
        answer(page, variant("07_pipeline_visualizer", "student").questions["utilisation"], commit=0)
        page.get_by_text("1F1B: p=4, m=8, v=1").first.wait_for()
        for index, presses in ((0, 2), (1, 2)):  # stages 4 -> 16, micro-batches 8 -> 32
            slider = page.get_by_role("slider").nth(index)
            slider.focus()
            for _ in range(presses):
                slider.press("ArrowRight")
        page.get_by_text("1F1B: p=16, m=32, v=1").first.wait_for(timeout=120_000)
        page.get_by_text("interleaved 1F1B: p=16, m=32, v=2").first.wait_for(timeout=120_000)
        traces = page.locator(".js-plotly-plot").first.evaluate(FILLS)
    boxes = [tr for tr in traces if tr.endswith(":x2")]
    assert boxes and all(tr.startswith("scatter:toself") for tr in boxes)
    assert len(boxes) == len(charts._timeline_boxes(t))  # 2 kinds x 8 shades
    assert "image::x3" in traces and not any(tr.startswith("bar") for tr in traces)

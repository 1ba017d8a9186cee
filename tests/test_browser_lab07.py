"""Lab 07 at its largest setting in a real browser (Debian's Chromium, `marimo run`): after the
lock is answered, p = 64 and m = 256 draw as raster images, and a play-slider step moves the marker
on the page. Before issue 13 one step redrew ~115k SVG boxes and took 45-52 s here."""

import pytest

from browser import answer, served_pages
from labs.variants import variant
from labs.core.engine.pipeline import timeline

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

STEP_BOUND_MS = 30_000  # generous for a loaded 2-core machine; the old drawing needed 45 s and more

CHART = "svg[aria-label^='1F1B: p=64, m=256']"  # both schedules in one SVG (labs.core.timeline_svg)
MARKER_X1 = "el => [...el.querySelectorAll('line[stroke-width=\"2\"]')].map(l => parseFloat(l.getAttribute('x1')))"


@pytest.fixture(scope="module")
def pages(need_chromium, tmp_path_factory):
    """Two servers of Lab 07 side by side (a ledger folder each), one page for each test, both
    loading in their own windows before the first test drives its page."""
    envs = [{"LABS_LEDGER_DIR": str(tmp_path_factory.mktemp("ledgers"))} for _ in range(2)]
    with served_pages(["07_pipeline_visualizer.py"] * 2, envs) as opened:
        yield opened


def test_lab07_at_p64_m256_answers_a_play_step(pages):
    from labs.core import timeline_svg

    page = pages[0]
    page.get_by_text("Commit to a prediction above (or skip it) to unlock the timelines").wait_for()
    answer(page, variant("07_pipeline_visualizer", "student").questions["utilisation"], commit=0)
    page.get_by_text("1F1B: p=4, m=8, v=1").first.wait_for()
    stages = page.get_by_role("slider").nth(0)
    stages.focus()
    stages.press("End")
    page.get_by_text("1F1B: p=64, m=8, v=1").first.wait_for(timeout=120_000)
    page.get_by_text("must lie in [p=64, m=8]").first.wait_for(timeout=120_000)  # interleaved refused: a banner above the chart
    micro = page.get_by_role("slider").nth(1)
    micro.focus()
    micro.press("End")
    page.get_by_text("1F1B: p=64, m=256, v=1").first.wait_for(timeout=120_000)
    page.get_by_text("interleaved 1F1B: p=64, m=256, v=2").first.wait_for(timeout=120_000)
    chart = page.locator(CHART).first
    assert page.get_by_text("must lie in [p=64").count() == 0  # the banner went
    # one raster image per schedule, not one shape per op
    assert chart.evaluate("el => [...el.querySelectorAll('image')].filter(i => (i.getAttribute('href') || '').startsWith('data:image/png')).length") == 2
    assert chart.evaluate("el => el.querySelectorAll('path').length") == 0
    assert chart.evaluate(MARKER_X1) == []  # played to 100%: no marker

    play = page.get_by_role("slider").nth(5)
    play.focus()
    play.press("ArrowLeft")  # 100% -> 95%
    page.wait_for_function(f"() => document.querySelector(\"{CHART}\").querySelectorAll('line[stroke-width=\"2\"]').length === 2", timeout=STEP_BOUND_MS)
    marks = page.locator(CHART).first.evaluate(MARKER_X1)
    # the line at 95% of each schedule's own step: each time axis spans 1.01 of its step
    plot = timeline_svg.WIDTH - timeline_svg.LEFT - timeline_svg.RIGHT
    assert marks == [pytest.approx(0.95 * plot / 1.01, abs=0.01)] * 2


def test_lab07_draws_a_middle_timeline_as_paths_and_a_large_one_as_an_image(pages):
    """p = 16, m = 32: 1F1B's 1,024 ops as boxes, one path per micro-batch and chunk of each kind
    (64), interleaved's 2,048 (above RASTER_OPS) as the raster image below it."""
    from labs.core import charts

    t = timeline(16, 32, "1f1b")
    assert len(t.op) <= charts.RASTER_OPS < len(timeline(16, 32, "interleaved", 2).op)
    page = pages[1]
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
    panels = page.locator("svg[aria-label^='1F1B: p=16, m=32']").first.evaluate(
        "el => [...el.children].filter(g => g.tagName === 'g').map(g => [g.querySelectorAll('path').length, g.querySelectorAll('image').length])")
    assert panels == [[len(t.op) // 16, 0], [0, 1]]

"""Take the README's screenshots: `python scripts/screenshots.py`.

Serves labs/05_parallelism.py, labs/06_zero_sweep.py and labs/07_pipeline_visualizer.py with
`marimo run`, commits their predictions in Chromium and saves assets/lab05_act1.png,
assets/lab05_act2.png, assets/lab06.png and assets/lab07.png."""

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser import browser_page, choose, marimo_run  # noqa: E402

from labs.core.scenarios.lab05 import ACT1_OPTIONS, ACT2_OPTIONS
from labs.core.scenarios.lab06 import FIT_OPTIONS  # noqa: E402


def zero_sweep() -> None:
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("06_zero_sweep.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1500) as page:
        page.goto(url)
        choose(page, f"B) {FIT_OPTIONS[1].label}", commit=0)
        page.get_by_text("The sweep: per-GPU memory").first.wait_for()
        slider = page.get_by_role("slider").nth(2)  # data-parallel GPUs: 8 -> 32
        slider.focus()
        slider.press("ArrowRight")
        slider.press("ArrowRight")
        page.wait_for_timeout(2500)
        page.get_by_text("2 · The sweep").first.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(800)
        page.screenshot(path=str(ROOT / "assets" / "lab06.png"))


def pipeline() -> None:
    from labs.core.scenarios.lab07 import MICROBATCH_OPTIONS, UTILISATION_OPTIONS

    with tempfile.TemporaryDirectory() as ledgers, marimo_run("07_pipeline_visualizer.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1500) as page:
        page.goto(url)
        choose(page, f"C) {UTILISATION_OPTIONS[2].label}", commit=0)
        choose(page, f"C) {MICROBATCH_OPTIONS[2].label}", commit=1)
        page.locator(".js-plotly-plot").first.wait_for()
        page.wait_for_timeout(2500)
        page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
        page.evaluate("window.scrollBy(0, -220)")
        page.wait_for_timeout(800)
        page.screenshot(path=str(ROOT / "assets" / "lab07.png"))


def main() -> None:
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("05_parallelism.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1500) as page:
        page.goto(url)
        choose(page, f"B) {ACT1_OPTIONS[1].label[:40]}", commit=0)
        page.get_by_text("exposed all-reduce").first.wait_for()
        page.wait_for_timeout(1500)
        page.get_by_text("Instruments").first.scroll_into_view_if_needed()
        page.get_by_text("Act I · The data-parallel wall").first.scroll_into_view_if_needed()
        page.screenshot(path=str(ROOT / "assets" / "lab05_act1.png"))
        choose(page, f"C) {ACT2_OPTIONS[2].label[:40]}", commit=1)
        page.get_by_text("memory per GPU").first.wait_for()
        page.wait_for_timeout(1500)
        page.get_by_text("Act II · Designing the 3D layout").first.scroll_into_view_if_needed()
        page.evaluate("window.scrollBy(0, -20)")
        page.screenshot(path=str(ROOT / "assets" / "lab05_act2.png"))
    zero_sweep()
    pipeline()
    print("wrote assets/lab05_act1.png, assets/lab05_act2.png, assets/lab06.png and assets/lab07.png")


if __name__ == "__main__":
    main()

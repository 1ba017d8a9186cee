"""Take the README's screenshots of the flagship lab: `python scripts/screenshots.py`.

Serves labs/05_parallelism.py with `marimo run`, answers both predictions in Chromium and
saves assets/lab05_act1.png and assets/lab05_act2.png."""

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser import browser_page, choose, marimo_run  # noqa: E402

from labs.core.outcomes import ACT1_OPTIONS, ACT2_OPTIONS  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("05_parallelism.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1500) as page:
        page.goto(url)
        choose(page, f"B) {ACT1_OPTIONS[1].label[:40]}")
        page.get_by_text("exposed all-reduce").first.wait_for()
        page.wait_for_timeout(1500)
        page.get_by_text("Instruments").first.scroll_into_view_if_needed()
        page.get_by_text("Act I · The data-parallel wall").first.scroll_into_view_if_needed()
        page.screenshot(path=str(ROOT / "assets" / "lab05_act1.png"))
        choose(page, f"C) {ACT2_OPTIONS[2].label[:40]}")
        page.get_by_text("memory per GPU").first.wait_for()
        page.wait_for_timeout(1500)
        page.get_by_text("Act II · Designing the 3D layout").first.scroll_into_view_if_needed()
        page.evaluate("window.scrollBy(0, -20)")
        page.screenshot(path=str(ROOT / "assets" / "lab05_act2.png"))
    print("wrote assets/lab05_act1.png and assets/lab05_act2.png")


if __name__ == "__main__":
    main()

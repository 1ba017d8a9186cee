"""Take the README's screenshots: `python scripts/screenshots.py [05 06 ... 15]` (default: all).

Serves each lab with `marimo run`, commits its first prediction in Chromium, moves a widget the
README's picture shows, and saves assets/lab05_act1.png, lab05_act2.png, lab06.png ... lab15.png."""

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser import answer, browser_page, choose, marimo_run, sign_in  # noqa: E402

from labs.variants import variant  # noqa: E402

# No name is typed: each lab draws the variant of its default student id, "student", as the
# browser tests do. answer() clicks that variant's option by letter or types its number.
STUDENT = "student"


def questions(lab: str) -> dict:
    return variant(lab, STUDENT).questions


def commit_first(page, question, lock: str, value=None) -> None:
    """Wait for the lab's lock, answer its first question and commit it, as the browser tests do."""
    page.get_by_text(f"Commit to a prediction above (or skip it) to unlock the {lock}").first.wait_for()
    answer(page, question, value)
    page.wait_for_timeout(500)
    page.get_by_role("button", name="Commit my prediction").nth(0).click()


def zero_sweep() -> None:
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("06_zero_sweep.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1500) as page:
        page.goto(url)
        commit_first(page, questions("06_zero_sweep")["fit"], "memory instruments")
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
    q = questions("07_pipeline_visualizer")
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("07_pipeline_visualizer.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1500) as page:
        page.goto(url)
        commit_first(page, q["utilisation"], "timelines", round(q["utilisation"].spec.answer))  # a whole percent, as a student types it
        answer(page, q["microbatches"], commit=1)
        page.locator(".js-plotly-plot").first.wait_for()
        page.wait_for_timeout(2500)
        page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
        page.evaluate("window.scrollBy(0, -220)")
        page.wait_for_timeout(800)
        page.screenshot(path=str(ROOT / "assets" / "lab07.png"))


def collectives() -> None:
    """Lab 08: both predictions committed, the ring stepper three steps into its reduce-scatter."""
    q = questions("08_collectives")
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("08_collectives.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1500) as page:
        page.goto(url)
        commit_first(page, q["ring"], "ring stepper")
        answer(page, q["bucket"], commit=1)
        page.get_by_text("Ring all-reduce, N = 4: step 0 of 6").first.wait_for()
        slider = page.get_by_role("slider").nth(1)  # the step slider: 0 -> 3
        slider.focus()
        for _ in range(3):
            slider.press("ArrowRight")
        page.get_by_text("step 3 of 6").first.wait_for()
        slider.blur()
        page.wait_for_timeout(2000)
        page.get_by_text("2 · Ring all-reduce, step by step").first.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(800)
        page.screenshot(path=str(ROOT / "assets" / "lab08.png"))


def failures() -> None:
    """Lab 10: both predictions committed, the cadence section with its chart."""
    q = questions("10_failures_at_scale")
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("10_failures_at_scale.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1500) as page:
        page.goto(url)
        commit_first(page, q["mtbf"], "failure model")
        page.get_by_text("Checkpoint every (minutes of training)").first.wait_for()
        answer(page, q["cadence"], commit=1)
        page.get_by_text("goodput peaks at").first.wait_for()
        page.wait_for_timeout(2500)
        page.get_by_text("B1 · Cadence: how often to checkpoint").first.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(800)
        page.screenshot(path=str(ROOT / "assets" / "lab10.png"))


def design_worksheet() -> None:
    """Lab 09 with the prediction committed and DP innermost: the map and the grid whose TP groups
    straddle nodes."""
    from labs.core.engine.layout import RANK_ORDER_NOTES

    with tempfile.TemporaryDirectory() as ledgers, marimo_run("09_64gpu_design.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1700) as page:
        page.goto(url)
        commit_first(page, questions("09_64gpu_design")["dp64"], "worksheet")
        page.get_by_text("The communication map, filled by the engine").first.wait_for()
        page.get_by_text(f"cp-dp-tp-pp: {RANK_ORDER_NOTES['cp-dp-tp-pp']}").first.click()
        page.get_by_text("places the 8 GPUs of each TP group").first.wait_for()
        page.wait_for_timeout(3000)
        page.get_by_text("Your design").first.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(800)
        page.screenshot(path=str(ROOT / "assets" / "lab09.png"))


def flagship() -> None:
    """Lab 05 as "browser student" (the 7B variant the browser test types: the default student's
    13B does not fit on Act I's 64 GPUs, so it shows no MFU): Act I's wall, then Act II's layout."""
    name = "browser student"
    q = variant("05_parallelism", name).questions
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("05_parallelism.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1500) as page:
        page.goto(url)
        sign_in(page, name)  # waits for the kernel's run with the name, so the commit reads its variant
        commit_first(page, q["cause"], "Act I instruments")
        page.get_by_text("exposed all-reduce").first.wait_for()
        page.wait_for_timeout(1500)
        page.get_by_text("Instruments").first.scroll_into_view_if_needed()
        page.get_by_text("Act I · The data-parallel wall").first.scroll_into_view_if_needed()
        page.screenshot(path=str(ROOT / "assets" / "lab05_act1.png"))
        answer(page, q["design"], commit=1)
        page.get_by_text("memory per GPU").first.wait_for()
        page.wait_for_timeout(1500)
        page.get_by_text("I want the highest MFU. Which layout").first.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(800)
        page.screenshot(path=str(ROOT / "assets" / "lab05_act2.png"))


def long_context() -> None:
    """Lab 11 with the first prediction committed and CP at 8: the instruments, the step-time
    chart of the four CP algorithms and the chosen point's cards."""
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("11_long_context_moe.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1300) as page:
        page.goto(url)
        commit_first(page, questions("11_long_context_moe")["fit"], "context-parallel instruments")
        slider = page.get_by_role("slider").nth(1)  # the CP degree: 16 -> 8
        slider.focus()
        slider.press("ArrowLeft")
        slider.blur()
        page.locator(".js-plotly-plot").first.wait_for()
        page.wait_for_timeout(3000)
        page.get_by_text("3 · Context parallelism: ring against Ulysses").first.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.evaluate("window.scrollBy(0, 330)")
        page.wait_for_timeout(800)
        page.screenshot(path=str(ROOT / "assets" / "lab11.png"))


def precision_lab() -> None:
    """Lab 12 with the underflow prediction committed and the loss scale at 2^16: the formats,
    the table of what each keeps and the flushed/overflowed curves."""
    from labs.variants import variant

    answer = variant("12_precision_and_memory", "student").questions["underflow"].spec.answer
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("12_precision_and_memory.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1400) as page:
        page.goto(url)
        number = page.locator("input[aria-label*='Your prediction']").first
        number.fill(f"{answer:.0f}")
        number.press("Tab")
        page.get_by_role("button", name="Commit my prediction").nth(0).click()
        slider = page.get_by_role("slider").nth(0)  # the loss scale: 2^0 -> 2^16
        slider.focus()
        for _ in range(16):
            slider.press("ArrowRight")
        slider.blur()
        page.get_by_text("S = 2^16").first.wait_for()
        page.locator(".js-plotly-plot").first.wait_for()
        page.wait_for_timeout(2500)
        page.get_by_text("1 · What a cast keeps").first.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.evaluate("window.scrollBy(0, -330)")
        page.wait_for_timeout(800)
        page.screenshot(path=str(ROOT / "assets" / "lab12.png"))


def tensor_parallel_lab() -> None:
    """Lab 13 with all three predictions committed: where TP stops, in 8-GPU nodes and in one
    NVLink domain, beside the scaling book's threshold."""
    from labs.variants import variant

    q = variant("13_tensor_parallel", "student").questions
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("13_tensor_parallel.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1400) as page:
        page.goto(url)
        number = page.locator("input[aria-label*='Your prediction']").first
        number.fill(f"{q['ring'].spec.answer:.2f}")
        number.press("Tab")
        page.get_by_role("button", name="Commit my prediction").nth(0).click()
        for index, name in ((1, "scaling"), (2, "tp_best")):
            key = q[name].key
            choose(page, f"{key}) {next(o.label for o in q[name].options if o.key == key)[:40]}", commit=index)
        page.get_by_text("The scaling book's threshold").first.wait_for()
        page.wait_for_timeout(2500)
        page.get_by_text("4 · Where TP stops").first.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(800)
        page.screenshot(path=str(ROOT / "assets" / "lab13.png"))


def debugging_lab() -> None:
    """Lab 14 with the culprit prediction committed: every rank's last completed collective in
    the TP groups, one heatmap over the 4,096 ranks of the hung job."""
    q = questions("14_debugging_at_scale")
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("14_debugging_at_scale.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1300) as page:
        page.goto(url)
        commit_first(page, q["culprit"], "flight recorder")
        page.wait_for_function(HEATMAP_SHOWN)
        page.wait_for_timeout(2500)
        page.get_by_text("A2 · Every rank's last completed collective").first.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(800)
        page.screenshot(path=str(ROOT / "assets" / "lab14.png"))


def routing_lab() -> None:
    """Lab 15 with the three predictions committed: the router's instruments and its tokens per
    expert over 500 steps under DeepSeek-V3's bias update, node-limited to 4 of 8 nodes."""
    q = questions("15_moe_routing")
    with tempfile.TemporaryDirectory() as ledgers, marimo_run("15_moe_routing.py", env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page(width=1300, height=1100) as page:
        page.goto(url)
        page.get_by_text("Commit to a prediction above (or skip it) to unlock the router's instruments").first.wait_for()
        answer(page, q["balance"], commit=0, box=0)
        answer(page, q["drops"], commit=1)
        answer(page, q["cost"], commit=2, box=1)
        page.wait_for_function(HEATMAP_SHOWN)
        page.wait_for_timeout(2500)
        page.get_by_text("Instruments", exact=True).first.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(800)
        page.screenshot(path=str(ROOT / "assets" / "lab15.png"))


# A Plotly heatmap (or a heatmap drawn as an image: Lab 15) on the page (marimo's outputs sit in shadow roots): true once one is.
HEATMAP_SHOWN = """() => { const f = (root) => { for (const el of root.querySelectorAll('*')) {
  if (el.classList && el.classList.contains('js-plotly-plot') && (el.data || []).some(d => d.type === 'heatmap' || d.type === 'image')) return true;
  if (el.shadowRoot && f(el.shadowRoot)) return true; } return false; }; return f(document); }"""


SHOTS = {"05": flagship, "06": zero_sweep, "07": pipeline, "08": collectives, "09": design_worksheet, "10": failures, "11": long_context,
         "12": precision_lab, "13": tensor_parallel_lab, "14": debugging_lab, "15": routing_lab}


def main(labs: list[str]) -> None:
    unknown = sorted(set(labs) - set(SHOTS))
    if unknown:
        raise SystemExit(f"no screenshot for lab(s) {unknown}; known: {sorted(SHOTS)}")
    for lab in labs or SHOTS:
        SHOTS[lab]()
        print(f"lab {lab}: screenshot written to assets/", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Each lab's heaviest instrument in a real browser, as a ratio to the floor page's move measured
in the same run: each lab and the floor served by `marimo run` on 127.0.0.1, driven in Debian's
Chromium through Playwright (tests/browser.py). A benchmark, not a test.

    python benchmarks/bench_browser.py                   # every lab
    python benchmarks/bench_browser.py --lab 09 --lab 10 --moves 12

The floor (benchmarks/floor_notebook.py: one slider, one small chart) is the least any marimo
page costs on this machine: server start, Chromium, marimo's frontend and Plotly.js, one round
trip per move. The machine is shared, so every lab number is read against the floor measured
beside it, interleaved:

- First prediction: the floor is started (time to its first chart), then the lab (time to its
  first prediction's widget: the student's variant, labs.variants, with the default id), then the
  floor again; printed is the lab's time minus the mean of the two floor starts.
- Moves: the lab's first prediction is committed (which unlocks its instruments), then a floor
  move and a lab move alternate, `--moves` of each; a move counts from the key press (or click)
  until the kernel has reported the run complete (marimo's "completed-run" message) and the page's
  outputs (the page's text, and each Plotly chart's data and layout objects) have changed and held still
  for two animation frames. Printed: each side's median and spread, and the ratio of the medians.
  A slider alternates right and left, so after the first two moves every position has been shown
  before (what a student moving back and forth sees, and what a lab's caches serve); with
  `--fresh` a slider moves one way only, every move to a position not shown before, so no page
  output can come from a cache (keep --moves within the slider's room: Lab 10's interval has 9
  steps right of its start, Lab 08's ring step 6; a move that changes nothing waits --timeout).

Targets (issue 25): every lab's heaviest instrument within 2x the floor's move; the first
prediction within 0.5 s of the floor's first chart.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from browser import answer, chromium_path, marimo_run, open_page  # noqa: E402
from labs.core.engine.layout import RANK_ORDER_NOTES, RANK_ORDERS  # noqa: E402
from labs.variants import variant  # noqa: E402


# A fingerprint of the page's outputs: per Plotly chart, the identity of its data and layout
# objects (numbered once per object: Plotly.react gives a redrawn chart new ones; 'drawing' while a
# chart has no layout yet), and a hash of the text of the page outside the charts. marimo draws
# each chart inside the shadow root of a <marimo-plotly> element. It is evaluated on every
# animation frame while a move settles, so it reads no chart's data: hashing every trace of a
# page with several charts took milliseconds a frame on this CPU, inside the measured window.
FINGERPRINT = """() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  document.querySelectorAll('marimo-plotly').forEach(host => {
    if (host.shadowRoot) plots.push(...host.shadowRoot.querySelectorAll('.js-plotly-plot'));
  });
  const ids = window.__benchIds || (window.__benchIds = new WeakMap());
  const id = o => { if (!o || typeof o !== 'object') return 0; if (!ids.has(o)) ids.set(o, (window.__benchNext = (window.__benchNext || 0) + 1)); return ids.get(o); };
  const hash = s => { let h = 0; for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0; return h; };
  const charts = plots.map(el =>
    el._fullLayout && el.querySelector('.main-svg') ? id(el.data) + '/' + id(el.layout) : 'drawing').join('|');
  return charts + '|text:' + hash(document.body.textContent || '');
}"""

SETTLED = """([fp, before, runs]) => {
  if (window.__kernelRuns < runs) return false;
  const now = (new Function('return ' + fp))()();
  if (now === before || now.includes('drawing')) { window.__benchLast = null; return false; }
  if (window.__benchLast === now) { window.__benchStill = (window.__benchStill || 0) + 1; } else { window.__benchStill = 0; }
  window.__benchLast = now;
  return window.__benchStill >= 2;
}"""


@dataclass
class Instrument:
    what: str
    slider: int | None = None  # index among the page's sliders once the first prediction is committed
    keys: tuple = ("ArrowRight", "ArrowLeft")
    radio: tuple = ()  # or: option texts of a radio, clicked in turn

    def target(self, page, i: int):
        """The element move i acts on, found before the clock starts (a role or text query walks
        the whole page: on a long lab page it took milliseconds, a cost of the bench, not of the lab)."""
        if self.slider is not None:
            handle = page.get_by_role("slider").nth(self.slider).element_handle()
            handle.focus()
            return handle
        return page.get_by_text(self.radio[i % len(self.radio)], exact=False).first.element_handle()

    def act(self, handle, i: int) -> None:
        if self.slider is not None:
            handle.press(self.keys[0] if FRESH else self.keys[i % len(self.keys)])
        else:
            handle.click()


@dataclass
class Lab:
    file: str
    module: str = ""  # labs.variants name; "" for the floor
    question: str = ""  # the first prediction's id
    instruments: list = field(default_factory=list)


FLOOR = Lab("../benchmarks/floor_notebook.py", instruments=[Instrument("the floor's slider", 0)])
LABS = {
    "05": Lab("05_parallelism.py", "05_parallelism", "cause", [Instrument("Act I GPU slider", 0)]),
    "06": Lab("06_zero_sweep.py", "06_zero_sweep", "fit", [Instrument("data-parallel GPUs slider", 2)]),
    "07": Lab("07_pipeline_visualizer.py", "07_pipeline_visualizer", "utilisation", [Instrument("play slider (1F1B beside interleaved)", 5, ("ArrowLeft", "ArrowRight"))]),
    "08": Lab("08_collectives.py", "08_collectives", "ring", [Instrument("ring step slider", 1)]),
    "09": Lab("09_64gpu_design.py", "09_64gpu_design", "dp64", [Instrument("rank-order radio", radio=tuple(f"{o}: {RANK_ORDER_NOTES[o]}" for o in (RANK_ORDERS[1], RANK_ORDERS[0])))]),
    "10": Lab("10_failures_at_scale.py", "10_failures_at_scale", "mtbf", [Instrument("checkpoint-interval slider", 2)]),
    "11": Lab("11_long_context_moe.py", "11_long_context_moe", "fit", [Instrument("CP-degree slider", 1, ("ArrowLeft", "ArrowRight"))]),
    "12": Lab("12_precision_and_memory.py", "12_precision_and_memory", "underflow",
              [Instrument("loss-scale slider", 0), Instrument("outlier slider", 1, ("ArrowLeft", "ArrowRight")),
               Instrument("dot-product length slider", 2, ("ArrowLeft", "ArrowRight")), Instrument("accumulation-steps slider", 3)]),
    "13": Lab("13_tensor_parallel.py", "13_tensor_parallel", "ring", [Instrument("ranks slider", 0)]),
}


def fingerprint(page) -> str:
    return page.evaluate(FINGERPRINT)


def settle(page, quiet_s: float = 1.0, timeout_s: float = 120.0) -> None:
    """Until no chart is drawing and the outputs have not changed for `quiet_s`: a page that has
    just unlocked draws its cells one by one, and a move timed before it is done measures both."""
    deadline, last, since = time.perf_counter() + timeout_s, None, time.perf_counter()
    while time.perf_counter() < deadline:
        now = fingerprint(page)
        if now != last or "drawing" in now:
            last, since = now, time.perf_counter()
        elif time.perf_counter() - since >= quiet_s:
            return
        time.sleep(0.1)
    raise TimeoutError(f"the page did not settle within {timeout_s:.0f} s")


def move(page, instrument: Instrument, i: int, timeout_s: float) -> float:
    """Move the instrument once; seconds until the run is complete and the outputs redrawn."""
    page.bring_to_front()
    handle = instrument.target(page, i)
    before = fingerprint(page)
    runs = page.evaluate("() => { window.__benchLast = null; window.__benchStill = 0; window.__kernelCells = 0; window.__benchT0 = performance.now(); return window.__kernelRuns; }")
    start = time.perf_counter()
    instrument.act(handle, i)
    page.wait_for_function(SETTLED, arg=[FINGERPRINT, before, runs + 1], polling="raf", timeout=timeout_s * 1000)
    took = time.perf_counter() - start
    kernel, cells = page.evaluate("() => [(window.__kernelRunAt - window.__benchT0) / 1e3, window.__kernelCells]")
    SPLIT.append((kernel, took - kernel, cells))
    return took


FRESH = False  # --fresh: sliders move one way only (set by main)
SPLIT: list = []  # per move: (seconds until the run's completion reached the page, seconds after, cells run)


@contextlib.contextmanager
def served(pw, lab: Lab, timeout_s: float):
    """(page, seconds from `marimo run` to the first prediction's widget, or for the floor its
    first chart)."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as ledgers, marimo_run(lab.file, env={"LABS_LEDGER_DIR": ledgers}) as url, open_page(pw) as page:  # counts the kernel's completed runs and running cells
        page.goto(url)
        if lab.module:
            question = variant(lab.module, "student").questions[lab.question]
            if question.numeric:
                page.locator("marimo-number input").first.wait_for(timeout=timeout_s * 1000)
            else:
                label = next(o.label for o in question.options if o.key == question.key)
                page.get_by_text(f"{question.key}) {label[:40]}", exact=False).first.wait_for(timeout=timeout_s * 1000)
        else:
            page.wait_for_function(f"() => {{ const f = ({FINGERPRINT})(); return f.split('|text:')[0] !== '' && !f.includes('drawing'); }}",
                                   polling="raf", timeout=timeout_s * 1000)
        yield page, time.perf_counter() - start


def unlock(page, lab: Lab, timeout_s: float) -> None:
    """Commit the first prediction (the engine's answer at the default student's variant) and
    wait for the unlocked instruments to draw."""
    answer(page, variant(lab.module, "student").questions[lab.question], commit=0)
    first = lab.instruments[0]
    if first.slider is not None:
        page.get_by_role("slider").nth(first.slider).wait_for(timeout=timeout_s * 1000)
    else:
        page.get_by_text(first.radio[0], exact=False).first.wait_for(timeout=timeout_s * 1000)
    settle(page)


def spread(times: list[float]) -> str:
    return f"median {statistics.median(times) * 1e3:.0f} ms (min {min(times) * 1e3:.0f}, max {max(times) * 1e3:.0f})"


def bench(pw, key: str, n: int, timeout_s: float) -> list[tuple]:
    lab = LABS[key]
    print(f"Lab {key} ({lab.file})", flush=True)
    with served(pw, FLOOR, timeout_s) as (_, floor_first_a):
        pass
    with served(pw, lab, timeout_s) as (page, lab_first), served(pw, FLOOR, timeout_s) as (floor_page, floor_first_b):
        floor_first = (floor_first_a + floor_first_b) / 2
        print(f"  first prediction {lab_first:.2f} s; floor's first chart {floor_first_a:.2f} / {floor_first_b:.2f} s; "
              f"lab - floor {lab_first - floor_first:+.2f} s (target +0.5 s)", flush=True)
        unlock(page, lab, timeout_s)
        settle(floor_page)
        rows = []
        for inst in lab.instruments:
            floor_t, lab_t, split = [], [], []
            for i in range(n):
                floor_t.append(move(floor_page, FLOOR.instruments[0], i, timeout_s))
                lab_t.append(move(page, inst, i, timeout_s))
                split.append(SPLIT[-1])
            ratio = statistics.median(lab_t) / statistics.median(floor_t)
            print(f"  {inst.what}: {spread(lab_t)}; floor {spread(floor_t)}; ratio {ratio:.2f}x (target 2x)", flush=True)
            print(f"    lab moves ms: {' '.join(f'{t * 1e3:.0f}' for t in lab_t)}", flush=True)
            print(f"    floor moves ms: {' '.join(f'{t * 1e3:.0f}' for t in floor_t)}", flush=True)
            print(f"    lab: until the run's completion reached the page, median {statistics.median(k for k, _, _ in split) * 1e3:.0f} ms; drawing after it "
                  f"{statistics.median(d for _, d, _ in split) * 1e3:.0f} ms; cells run per move {statistics.median(c for _, _, c in split):.0f}", flush=True)
            rows.append((key, inst.what, statistics.median(lab_t), statistics.median(floor_t), ratio, lab_first - floor_first))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab", action="append", choices=sorted(LABS), help="lab number (repeatable); default: every lab")
    parser.add_argument("--moves", type=int, default=10, help="moves of the lab's instrument, and as many of the floor's")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for one move")
    parser.add_argument("--fresh", action="store_true", help="sliders move one way only: every move to a position not shown before")
    args = parser.parse_args()
    global FRESH
    FRESH = args.fresh
    if chromium_path() is None:
        sys.exit("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        rows = [row for key in (args.lab or sorted(LABS)) for row in bench(pw, key, args.moves, args.timeout)]
    print("\nlab  instrument                              lab ms  floor ms  ratio  first prediction - floor")
    for key, what, lab_ms, floor_ms, ratio, first in rows:
        print(f"{key:>3}  {what:<38} {lab_ms * 1e3:6.0f}  {floor_ms * 1e3:8.0f}  {ratio:4.2f}x  {first:+.2f} s")


if __name__ == "__main__":
    main()

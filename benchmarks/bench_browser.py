"""Slider to updated chart in a real browser: each lab served by `marimo run` on 127.0.0.1,
driven in Debian's Chromium through Playwright (tests/browser.py). A benchmark, not a test.

    python benchmarks/bench_browser.py                 # every lab
    python benchmarks/bench_browser.py --lab 07 --moves 10

For each lab: the time from starting `marimo run` to an interactive page (the first prediction
shown), then the prediction is answered and the lab's heaviest widget is moved `--moves` times
(one arrow key each); a move counts until every Plotly chart on the page has its new data
drawn (its data or shapes differ from before and stay put for two frames). Printed: the median
and the spread of the moves, at the lab's default setting and, where the lab has one, at the
top of its slider ranges, with their ratio measured in the same run.

The floor (benchmarks/floor_notebook.py: one slider, one small chart) runs first: the least any
marimo page costs on this machine, so each lab's times can be read against it.

Targets (issue 13): slider to updated chart under 300 ms median; the top of every slider range
within 3x the default's time; `marimo run` to an interactive page under 3 s.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser import browser_page, chromium_path, marimo_run  # noqa: E402

# A fingerprint of every chart on the page: per trace its type, name and a hash of each data
# array (a few ms for a raster of 64 x 4096 cells), plus the layout shapes.
FINGERPRINT = """() => {
  // marimo draws each chart inside the shadow root of a <marimo-plotly> element. Only those are
  // looked at: walking every element of a long page on every animation frame would itself slow
  // the page being timed.
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  document.querySelectorAll('marimo-plotly').forEach(host => {
    if (host.shadowRoot) plots.push(...host.shadowRoot.querySelectorAll('.js-plotly-plot'));
  });
  const flat = v => (v && typeof v === 'object')
    ? (typeof v.bdata === 'string' ? [v.dtype, v.shape, v.bdata]  // base64 arrays
       : (Array.isArray(v) || ArrayBuffer.isView(v)) ? Array.from(v).flat(3) : [JSON.stringify(v)])
    : [v];
  const hash = s => { let h = 0; for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0; return h; };
  const cut = v => { const a = flat(v).map(String); return a.length + ':' + hash(a.join(',')); };
  const trace = t => [t.type, t.name, ...['x', 'y', 'z', 'base', 'source'].map(k => k in t ? cut(t[k]) : '')].join(';');
  const shape = s => [s.type, s.x0, s.x1, s.y0, s.y1].join(',');
  return plots.map(el =>
    el._fullLayout && el.querySelector('.main-svg')
      ? (el.data || []).map(trace).join('/') + '#' + ((el.layout || {}).shapes || []).map(shape).join('/')
      : 'drawing').join('|');
}"""


@dataclass
class Lab:
    file: str
    lock: str  # text shown before the prediction is answered
    answer: str  # the option to click
    widget: int  # index of the heaviest slider among the page's sliders, once unlocked
    keys: tuple = ("ArrowRight", "ArrowLeft")
    top: list = field(default_factory=list)  # (slider index, key) to reach the top of the ranges
    what: str = ""


LABS = {
    "floor": Lab("../benchmarks/floor_notebook.py", "Floor page", "A) ready", 0, what="one slider, one chart: the least any page costs here"),
    "05": Lab("05_parallelism.py", "Commit to a prediction above (or skip it) to unlock the Act I instruments", "B) Each GPU's share", 0, what="Act I GPU slider"),
    "06": Lab("06_zero_sweep.py", "Commit to a prediction above (or skip it) to unlock the memory instruments", "B) 9 to 24", 2, what="data-parallel GPUs slider"),
    "07": Lab("07_pipeline_visualizer.py", "Commit to a prediction above (or skip it) to unlock the timelines", "C) 80%", 5, ("ArrowLeft", "ArrowRight"),
              top=[(0, "End"), (1, "End"), (2, "End")], what="play slider (1F1B beside interleaved)"),
}


def fingerprint(page) -> str:
    return page.evaluate(FINGERPRINT)


def wait_changed(page, before: str, timeout_s: float) -> None:
    """Until the charts differ from `before` and hold still for two animation frames."""
    page.wait_for_function(
        """([fp, before]) => {
             const now = (new Function('return ' + fp))()();
             if (now === before || now.includes('drawing') || now === '') { window.__benchLast = null; return false; }
             if (window.__benchLast === now) { window.__benchStill = (window.__benchStill || 0) + 1; } else { window.__benchStill = 0; }
             window.__benchLast = now;
             return window.__benchStill >= 2;
           }""",
        arg=[FINGERPRINT, before], polling="raf", timeout=timeout_s * 1000,
    )


def settle(page, quiet_s: float = 1.0, timeout_s: float = 120.0) -> None:
    """Until no chart is drawing and the charts have not changed for `quiet_s`: a page that has
    just unlocked draws its charts cell by cell, and a move timed before it is done measures both."""
    deadline, last, since = time.perf_counter() + timeout_s, None, time.perf_counter()
    while time.perf_counter() < deadline:
        now = fingerprint(page)
        if now != last or "drawing" in now:
            last, since = now, time.perf_counter()
        elif time.perf_counter() - since >= quiet_s:
            return
        time.sleep(0.1)
    raise TimeoutError(f"the charts did not settle within {timeout_s:.0f} s")


def move(page, index: int, key: str, timeout_s: float) -> float:
    """Press `key` on slider `index`; seconds until the charts are redrawn."""
    slider = page.get_by_role("slider").nth(index)
    slider.focus()
    before = fingerprint(page)
    page.evaluate("() => { window.__benchLast = null; window.__benchStill = 0; }")
    start = time.perf_counter()
    slider.press(key)
    wait_changed(page, before, timeout_s)
    return time.perf_counter() - start


def moves(page, lab: Lab, n: int, timeout_s: float) -> list[float]:
    return [move(page, lab.widget, lab.keys[i % 2], timeout_s) for i in range(n)]


def report(label: str, times: list[float]) -> float:
    med = statistics.median(times)
    print(f"  {label}: median {med * 1e3:.0f} ms over {len(times)} moves (min {min(times) * 1e3:.0f}, max {max(times) * 1e3:.0f}); "
          f"target 300 ms: {med / 0.3:.2f} of the budget", flush=True)
    return med


def bench(key: str, n: int, timeout_s: float, top: bool) -> None:
    lab = LABS[key]
    print(f"{lab.file}: {lab.what}", flush=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as ledgers, marimo_run(lab.file, env={"LABS_LEDGER_DIR": ledgers}) as url, browser_page() as page:
        served = time.perf_counter() - start
        page.goto(url)
        page.get_by_text(lab.answer, exact=False).first.wait_for(timeout=timeout_s * 1000)
        ready = time.perf_counter() - start
        print(f"  marimo run to an interactive page: {ready:.2f} s (server up {served:.2f} s, page {ready - served:.2f} s); target 3 s: {ready / 3:.2f}", flush=True)
        page.get_by_text(lab.lock).first.wait_for()
        before = fingerprint(page)
        page.get_by_text(lab.answer, exact=False).first.click()
        commit = page.get_by_role("button", name="Commit my prediction")
        if commit.count():
            commit.first.click()
        page.get_by_role("slider").nth(lab.widget).wait_for(timeout=timeout_s * 1000)
        wait_changed(page, before, timeout_s)
        settle(page)
        if not fingerprint(page):
            raise RuntimeError(f"{lab.file}: no Plotly chart found in a <marimo-plotly> element; FINGERPRINT looks nowhere else")
        base = report("default setting", moves(page, lab, n, timeout_s))
        if top and lab.top:
            t0 = time.perf_counter()
            for index, k in lab.top:
                move(page, index, k, timeout_s)
            settle(page)
            print(f"  reaching the top of the ranges ({len(lab.top)} slider moves): {time.perf_counter() - t0:.1f} s", flush=True)
            high = report("top of the slider ranges", moves(page, lab, n, timeout_s))
            print(f"  top / default: {high / base:.2f}x; target 3x: {high / base / 3:.2f} of the budget", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab", action="append", choices=sorted(LABS), help="lab number (repeatable); default: every lab")
    parser.add_argument("--moves", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for one move")
    parser.add_argument("--no-top", action="store_true", help="skip the top-of-range setting")
    args = parser.parse_args()
    if chromium_path() is None:
        sys.exit("Debian's chromium is not installed (apt-get install chromium)")
    for key in args.lab or sorted(LABS, key=lambda k: (k != "floor", k)):
        bench(key, args.moves, args.timeout, not args.no_top)


if __name__ == "__main__":
    main()

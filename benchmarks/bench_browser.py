"""Each lab's heaviest instrument in a real browser, as a ratio to the floor page's move measured
in the same run: each lab and the floor served by `marimo run` on 127.0.0.1, driven in Debian's
Chromium through Playwright (tests/browser.py). A benchmark, not a test.

    python benchmarks/bench_browser.py                   # every lab
    python benchmarks/bench_browser.py --lab 07 --moves 8 --starts 5
    python benchmarks/bench_browser.py --first-only --starts 3   # only the first predictions (no survey)
    python benchmarks/bench_browser.py --first-only --bytecode   # labs/ compiled first, as an installed package is
    python benchmarks/bench_browser.py --notebook labs/problems/ps02_memory.py   # any notebook under labs/
    python benchmarks/bench_browser.py --dashboard /tmp/class   # the class dashboard's first chart (issue 34)

A notebook named by `--notebook` (a problem set: its pages have no slider) is read from its
variant (labs.variants, by the file's name): its first question is the first prediction, and its
instrument is the commit of each later problem (clicking or typing an answer runs no cell; the
commit draws the ledger's record and the solution): the answer is given untimed, the click on
its "Commit my prediction" button is timed, one problem a move.

The floor (benchmarks/floor_notebook.py: one line of text, one slider, one small chart) is the
least any marimo page costs on this machine: server start, Chromium, marimo's frontend and
Plotly.js, one round trip per move. The machine is shared, so every lab number is read against
the floor measured beside it, interleaved, and printed as a ratio of medians.

- First prediction: `--starts` times in turn, the floor is served until its first text is on the
  page ("A) ready", drawn like an option), then the lab until its first question's option is (the
  student's variant, labs.variants, with the default id), like for like; printed are both
  medians and their difference, and the floor's first chart (its Plotly figure drawn: issue #38's
  yardstick) (the last two lab starts are the survey's and the moves' pages).
- Survey: the lab's first prediction is committed (which unlocks its instruments), and every
  instrument is moved once: each slider and dropdown on the page, read from the page (its label,
  position and room; a dropdown moves to the next option), each radio the lab lists, then again at each heavy setting the lab lists (Lab 07:
  p = 64, reached by untimed moves). The heaviest move names the lab's heaviest instrument.
- Moves: the lab is served afresh (a new kernel: nothing the survey computed is cached; again,
  up to MOVE_PAGES pages, while the instrument has less room than `--moves` fresh moves), brought
  to the heavy setting where the survey found its heaviest instrument, warmed like the floor's
  page (one untimed step of another slider and back: a fresh page's first moves are slow), and that instrument moves
  one way, a floor move before and after each lab move, until `--moves` lab moves or the
  slider's end; the ratio is the lab's median over the floor's. A move counts
  from the key press (or click) until the kernel has reported the run it started complete (marimo's
  "completed-run" message) and the page's outputs (the page's text, and each Plotly chart's data
  and layout objects) have changed and held still for two animation frames.

Every lab move goes to a position the page has not shown before: a slider keeps one direction,
and the bench keeps the set of the page's states (every slider's and radio's position) it has
shown; a move that would return to one is not taken. So no output of a move comes from a lab's
cache (lru_cache in a scenario, marimo's). `--revisit` instead moves the heaviest instrument back
and forth between two positions (what a student comparing two settings sees, cache hits
included). `--instrument LABEL` (with `--setting`) times one instrument without the survey.

Target (issue 35): every lab's heaviest instrument within 1.5x the floor's move.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from browser import answer, chromium_path, marimo_run, open_page, start_marimo, stop_marimo, wait_until_serving  # noqa: E402
from labs.core.engine.layout import RANK_ORDER_NOTES, RANK_ORDERS  # noqa: E402
from labs.variants import variant  # noqa: E402

TARGET = 1.5  # issue 35: the heaviest instrument's move within 1.5x the floor's
FLOOR_TEXT = "Floor page. A) ready"

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

# The run a move starts: the first cell queued after the move's start names it (its run_id), and
# its "completed-run" message ends it. Counting completed-run messages is not enough: a table's
# row fetch (a function call) ends with one too, often after the move that drew the table.
WATCH_RUN = """(() => {
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', e => {
        if (typeof e.data !== 'string' || window.__benchT0 === undefined) return;
        if (!window.__benchRun && e.data.includes('"status":"queued"')) {
          const m = e.data.match(/"run_id":"([^"]+)"/);
          if (m) window.__benchRun = m[1];
        } else if (window.__benchRun && !window.__benchDone && e.data.includes('"completed-run"') && e.data.includes(window.__benchRun)) {
          window.__benchDone = performance.now();
        }
      });
    }
  };
})()"""

SETTLED = """([fp, before]) => {
  if (!window.__benchDone) return false;
  window.__benchFrames = (window.__benchFrames || 0) + 1;
  const now = (new Function('return ' + fp))()();
  if (now.includes('drawing')) { window.__benchLast = null; return false; }
  if (now === before) {  // no text or Plotly chart changed: done once the page's DOM (an SVG's attributes too) is still for 2 frames
    window.__benchLast = null;
    const muts = window.__benchMuts || 0;
    if (muts !== window.__benchMutSeen) { window.__benchMutSeen = muts; window.__benchQuiet = 0; } else { window.__benchQuiet = (window.__benchQuiet || 0) + 1; }
    return window.__benchQuiet >= 2 || window.__benchFrames >= 10;
  }
  if (window.__benchLast === now) { window.__benchStill = (window.__benchStill || 0) + 1; } else { window.__benchStill = 0; }
  window.__benchLast = now;
  return window.__benchStill >= 2;
}"""


# A move's clock starts here. The mutation count lets a move whose run changed no text and no
# Plotly chart end when the page's DOM is still (2 frames), not after a fixed 10 frames (~167 ms):
# that wait was the whole of Lab 09's "Its link" move (its run done at ~35 ms, nothing redrawn),
# and it timed an SVG patched in place (attributes only) at 10 frames whatever it cost. Outputs
# arrive before the run's completed-run message, so the frames counted after it follow them.
RESET = """() => {
  if (!window.__benchObserver) {
    window.__benchObserver = new MutationObserver(records => { window.__benchMuts = (window.__benchMuts || 0) + records.length; });
    window.__benchObserver.observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
  }
  window.__benchLast = null; window.__benchStill = 0; window.__benchFrames = 0; window.__benchRun = null; window.__benchDone = null;
  window.__benchMutSeen = undefined; window.__benchQuiet = 0; window.__benchT0 = performance.now();
}"""


class NoRun(Exception):
    """A move that started no run of the kernel (a control no cell reads, or one not shown)."""


# Every slider on the page, in the order of get_by_role("slider"): its label (marimo keeps it as
# HTML on the host element, outside the thumb's shadow root), position and range.
SLIDERS = """els => els.map(e => {
  const h = e.getRootNode().host || e;
  const div = document.createElement('div');
  div.innerHTML = JSON.parse(h.getAttribute('data-label') || '""');
  return {label: (div.textContent || '').trim(), now: Number(e.getAttribute('aria-valuenow')),
          min: Number(e.getAttribute('aria-valuemin')), max: Number(e.getAttribute('aria-valuemax')),
          steps: JSON.parse(h.getAttribute('data-steps') || '[]'), step: Number(h.getAttribute('data-step') || 1),
          disabled: h.getAttribute('data-disabled') === 'true' || e.hasAttribute('data-disabled')};
})"""
# Every dropdown (a native <select> inside marimo's element), read as a slider of its options.
DROPDOWNS = """els => els.map(e => {
  const h = e.getRootNode().host || e;
  const div = document.createElement('div');
  div.innerHTML = JSON.parse(h.getAttribute('data-label') || '""');
  return {label: (div.textContent || '').trim(), now: e.selectedIndex, min: 0, max: e.options.length - 1, steps: [], step: 1, disabled: e.disabled};
})"""
RADIOS = "els => els.map(e => e.getAttribute('aria-checked') === 'true' || e.checked === true)"


# --- pure helpers (tests/test_bench_tools.py) ---------------------------------------------------

def room(info: dict) -> dict[str, int]:
    """Steps a slider can still move right and left, from what SLIDERS reads. A slider with
    `steps` reports its index as aria-valuenow (0 .. len - 1); one with start/stop/step its value."""
    step = 1 if info["steps"] else (info["step"] or 1)
    return {"ArrowRight": int(round((info["max"] - info["now"]) / step)), "ArrowLeft": int(round((info["now"] - info["min"]) / step))}


def direction(info: dict) -> str:
    """The way a slider moves for the whole run: toward its end with more room (ties: right)."""
    r = room(info)
    return "ArrowRight" if r["ArrowRight"] >= r["ArrowLeft"] else "ArrowLeft"


def slider_index(infos: list[dict], label: str) -> int:
    """The index of the slider whose label starts with `label`; ValueError names the labels."""
    for i, info in enumerate(infos):
        if info["label"].startswith(label):
            return i
    raise ValueError(f"no slider labelled {label!r}; the page has {[i['label'] for i in infos]}")


def ratio_of_medians(lab: list[float], floor: list[float]) -> float:
    return statistics.median(lab) / statistics.median(floor)


def heaviest(survey: list[dict]) -> dict:
    """The survey row whose one move took longest (each row: what, setting, lab_s, floor_s)."""
    return max(survey, key=lambda row: row["lab_s"])


# --- the page ------------------------------------------------------------------------------------

@dataclass
class Setting:
    """A heavy setting of a lab, reached by untimed moves: (slider label, key) pressed in turn."""
    what: str
    presses: tuple


@dataclass
class Lab:
    file: str
    module: str = ""  # labs.variants name; "" for the floor
    question: str = ""  # the first prediction's id
    radios: dict = field(default_factory=dict)  # name: option texts, clicked in turn (sliders are read from the page)
    settings: list = field(default_factory=list)  # heavy settings, each surveyed after the default
    unlocks: tuple = ()  # later questions committed after the first, in page order: what the instruments also wait for
    commits: tuple = ()  # questions after the first whose commit is the instrument (a problem set), in page order


FLOOR = Lab("../benchmarks/floor_notebook.py")
LABS = {
    "05": Lab("05_parallelism.py", "05_parallelism", "cause", radios={"scaling-mode radio": ("fixed global batch (strong scaling)", "fixed per-GPU batch (weak scaling)")}),
    "06": Lab("06_zero_sweep.py", "06_zero_sweep", "fit", radios={"ZeRO-stage radio": ("ZeRO-2", "ZeRO-1", "ZeRO-0")}),
    "07": Lab("07_pipeline_visualizer.py", "07_pipeline_visualizer", "utilisation", settings=[Setting("p = 64", (("Stages p", "End"),))]),
    "08": Lab("08_collectives.py", "08_collectives", "ring"),
    "09": Lab("09_64gpu_design.py", "09_64gpu_design", "dp64",
              radios={"rank-order radio": tuple(f"{o}: {RANK_ORDER_NOTES[o]}" for o in RANK_ORDERS)}),
    "10": Lab("10_failures_at_scale.py", "10_failures_at_scale", "mtbf"),
    "11": Lab("11_long_context_moe.py", "11_long_context_moe", "fit"),
    "12": Lab("12_precision_and_memory.py", "12_precision_and_memory", "underflow"),
    "13": Lab("13_tensor_parallel.py", "13_tensor_parallel", "ring"),
    "14": Lab("14_debugging_at_scale.py", "14_debugging_at_scale", "culprit", unlocks=("kind", "timeout")),  # the timings, the timeout slider
    "15": Lab("15_moe_routing.py", "15_moe_routing", "balance", unlocks=("drops", "cost")),  # the router's instruments need all three
}


COMMIT = "Commit my prediction"  # the button of each question (labs/core/problem_ui), and the instrument's name


def notebook_lab(path: str) -> Lab:
    """A notebook under labs/ by its path, as a Lab: the variant named by its file, its first
    question the first prediction, the commits of the others its instrument."""
    file = Path(path).resolve().relative_to(ROOT / "labs")
    questions = list(variant(file.stem, "student").questions)
    return Lab(file.as_posix(), file.stem, questions[0], commits=tuple(questions[1:]))


def fingerprint(page) -> str:
    return page.evaluate(FINGERPRINT)


def sliders(page) -> list[dict]:
    return page.get_by_role("slider").evaluate_all(SLIDERS)


def dropdowns(page) -> list[dict]:
    return page.locator("select").evaluate_all(DROPDOWNS)


def controls(page, kind: str) -> list[dict]:
    return sliders(page) if kind == "slider" else dropdowns(page)


def page_state(page) -> tuple:
    """Where every slider, dropdown and radio of the page stands: a move to a state in the
    visited set would show what the page has shown before."""
    return (tuple((s["label"], s["now"]) for s in sliders(page) + dropdowns(page))
            + tuple(page.get_by_role("radio").evaluate_all(RADIOS)))


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


def timed_move(page, handle, act, timeout_s: float) -> tuple[float, float]:
    """Act on `handle` (found before the clock starts: a role or text query walks the whole page,
    milliseconds on a long lab page, a cost of the bench, not of the lab); seconds until the run
    is complete and the outputs redrawn, and of those, seconds until the run's completion
    reached the page."""
    page.bring_to_front()
    before = fingerprint(page)
    page.evaluate(RESET)
    start = time.perf_counter()
    act(handle)
    try:
        page.wait_for_function("() => window.__benchRun", polling="raf", timeout=min(timeout_s, 20) * 1000)
    except Exception as err:
        raise NoRun() from err
    page.wait_for_function(SETTLED, arg=[FINGERPRINT, before], polling="raf", timeout=timeout_s * 1000)
    took = time.perf_counter() - start
    return took, page.evaluate("() => (window.__benchDone - window.__benchT0) / 1e3")


def slider_move(page, index: int, key: str, timeout_s: float) -> tuple[float, float]:
    handle = page.get_by_role("slider").nth(index).element_handle()
    handle.focus()
    return timed_move(page, handle, lambda h: h.press(key), timeout_s)


def dropdown_move(page, index: int, key: str, timeout_s: float) -> tuple[float, float]:
    """Select the option after (ArrowRight) or before (ArrowLeft) the chosen one."""
    handle = page.locator("select").nth(index).element_handle()
    option = handle.evaluate("e => e.selectedIndex") + (1 if key == "ArrowRight" else -1)
    return timed_move(page, handle, lambda h: h.select_option(index=option), timeout_s)


def radio(page, text: str):
    """A radio button by its option's text (its accessible name)."""
    return page.get_by_role("radio", name=text).first


def radio_move(page, text: str, timeout_s: float) -> tuple[float, float]:
    handle = radio(page, text).element_handle()
    return timed_move(page, handle, lambda h: h.click(), timeout_s)


class Floor:
    """The floor page's slider, moved one step per call; it turns at its ends (the floor has no
    cache to serve a position again)."""

    def __init__(self, page, timeout_s: float):
        self.page, self.timeout_s, self.key = page, timeout_s, "ArrowRight"

    def move(self) -> float:
        info = sliders(self.page)[0]
        if room(info)[self.key] == 0:
            self.key = "ArrowLeft" if self.key == "ArrowRight" else "ArrowRight"
        return slider_move(self.page, 0, self.key, self.timeout_s)[0]


def first_text(lab: Lab) -> tuple[str, bool]:
    """What `served` waits for: the first prediction's right option's text (the student's
    variant, the default id), or for a numeric question its box; the floor's first text."""
    if not lab.module:
        return FLOOR_TEXT, False
    question = variant(lab.module, "student").questions[lab.question]
    if question.numeric:
        return "", True
    label = next(o.label for o in question.options if o.key == question.key)
    return f"{question.key}) {label[:40]}", False


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process so far (Linux /proc): the `marimo run` server,
    whose kernel runs as a thread of it, so its cells' CPU counts here."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def server(file: str, env: dict, timeout_s: float):
    """(URL, process id) of `marimo run` serving `file` (tests/browser.py's marimo_run, with
    the server's process id)."""
    proc, url = start_marimo(file, env)
    try:
        try:
            wait_until_serving(url, proc, timeout_s)
        except RuntimeError as err:
            if proc.poll() is None:
                proc.terminate()
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise RuntimeError(f"marimo run did not come up on {url}:\n{out[-3000:]}") from err
        yield url, proc.pid
    finally:
        stop_marimo(proc)


@contextlib.contextmanager
def served(pw, lab: Lab, timeout_s: float, cpu: list | None = None, chart: list | None = None):
    """(page, seconds from `marimo run` until the first prediction's option is on the page, or
    for the floor its first text). `cpu`: the server's CPU seconds by then are appended to it
    (the machine's load moves the seconds; it moves the CPU far less). `chart`, for the floor:
    the seconds until its chart is drawn too are appended to it (issue #38 reads the first
    prediction against the floor's first chart; issue #35, like for like, against its first
    text: both are printed). The text waited for is
    found before the clock starts: the student's variant is the bench's work, not the page's
    (drawing Lab 05's took ~1 s of this process's CPU beside the server's first start)."""
    text, numeric = first_text(lab)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as ledgers, server(lab.file, {"LABS_LEDGER_DIR": ledgers}, timeout_s) as (url, pid), open_page(pw) as page:
        page.add_init_script(WATCH_RUN)
        page.goto(url)
        if numeric:
            page.locator("marimo-number input").first.wait_for(timeout=timeout_s * 1000)
        else:
            page.get_by_text(text, exact=False).first.wait_for(timeout=timeout_s * 1000)
        took = time.perf_counter() - start
        if cpu is not None:
            cpu.append(cpu_seconds(pid))
        if chart is not None and not lab.module:
            page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=timeout_s * 1000)
            chart.append(time.perf_counter() - start)
        yield page, took


def unlock(page, lab: Lab, timeout_s: float) -> None:
    """Commit the first prediction (the engine's answer at the default student's variant), and
    the lab's `unlocks` after it, and wait for the unlocked instruments to draw."""
    before = len(sliders(page))
    questions = variant(lab.module, "student").questions
    answer(page, questions[lab.question], commit=0)
    box = int(questions[lab.question].numeric)
    for i, qid in enumerate(lab.unlocks, start=1):  # the i-th commit button on the page is the i-th question's
        answer(page, questions[qid], commit=i, box=box)
        box += questions[qid].numeric
    deadline = time.perf_counter() + 30  # a lab may show some sliders before the commit
    while len(sliders(page)) <= before and not lab.radios and not lab.commits and time.perf_counter() < deadline:
        time.sleep(0.2)
    for texts in lab.radios.values():
        radio(page, texts[0]).wait_for(timeout=timeout_s * 1000)
    settle(page)


class Session:
    """One lab page and a floor page beside it: the survey and the moves, every lab move to a
    state of the page not shown before."""

    def __init__(self, page, floor: Floor, lab: Lab, timeout_s: float):
        self.page, self.floor, self.timeout_s = page, floor, timeout_s
        self.questions = variant(lab.module, "student").questions if lab.commits else {}
        self.to_commit = list(lab.commits)  # in page order; each committed once
        self.visited = {self.state()}
        self.floor_times: list[float] = []  # every floor move beside a lab move, in order
        self.keys: dict[tuple, str] = {}  # (kind, label) of a slider or dropdown: its direction for the run
        self.radio_options: dict[str, tuple] = lab.radios  # name: option texts
        self.radio_clicked: set[str] = set()

    def state(self) -> tuple:
        return page_state(self.page) + (len(self.to_commit),)

    def record(self) -> bool:
        state = self.state()
        fresh = state not in self.visited
        self.visited.add(state)
        return fresh

    def radio_left(self, name: str) -> list[str]:
        """A radio's options not chosen yet in this run (the one chosen now counts as chosen)."""
        self.radio_clicked.update(t for t in self.radio_options[name] if radio(self.page, t).get_attribute("aria-checked") == "true")
        return [t for t in self.radio_options[name] if t not in self.radio_clicked]

    def room(self, kind: str, label: str) -> int:
        """Moves left to a slider or dropdown in its direction for the run, or to a radio."""
        if kind == "radio":
            return len(self.radio_left(label))
        if kind == "commit":
            return len(self.to_commit)
        infos = controls(self.page, kind)
        info = infos[slider_index(infos, label)]
        if info["disabled"]:
            return 0
        key = self.keys.setdefault((kind, label), direction(info))
        return room(info)[key]

    def move(self, kind: str, name: str, key: str | None = None) -> tuple[float, float, float, bool]:
        """A floor move, a lab move, a floor move: (lab s, of which until the run's completion
        reached the page, the mean of the two floor moves beside it, whether the lab's state was new). The floor
        has no cache, and its moves are cheap: two beside each lab move keep one slow floor move
        (a burst of the machine's load) from moving its median."""
        self.floor_times.append(self.floor.move())
        if kind in ("slider", "dropdown"):
            index = slider_index(controls(self.page, kind), name)
            moved = slider_move if kind == "slider" else dropdown_move
            lab_s, kernel_s = moved(self.page, index, key or self.keys[kind, name], self.timeout_s)
        elif kind == "commit":
            lab_s, kernel_s = self.commit_next()
        else:
            text = self.radio_left(name)[0]
            self.radio_clicked.add(text)
            lab_s, kernel_s = radio_move(self.page, text, self.timeout_s)
        fresh = self.record()
        self.floor_times.append(self.floor.move())
        return lab_s, kernel_s, statistics.mean(self.floor_times[-2:]), fresh

    def commit_next(self) -> tuple[float, float]:
        """The next problem answered (the engine's answer, untimed: it runs no cell) and its
        commit button clicked, timed."""
        order = list(self.questions)
        qid = self.to_commit.pop(0)
        before = order[:order.index(qid)]
        answer(self.page, self.questions[qid], box=sum(self.questions[q].numeric for q in before))
        handle = self.page.get_by_role("button", name=COMMIT).nth(order.index(qid)).element_handle()
        return timed_move(self.page, handle, lambda h: h.click(), self.timeout_s)

    def untimed(self, label: str, key: str, kind: str = "slider") -> None:
        index = slider_index(controls(self.page, kind), label)
        (slider_move if kind == "slider" else dropdown_move)(self.page, index, key, self.timeout_s)
        self.record()
        settle(self.page)


def survey(session: Session, lab: Lab) -> list[dict]:
    """Every instrument moved once, at the default setting and at each heavy setting."""
    rows = []
    for setting in [None, *lab.settings]:
        where = "default" if setting is None else setting.what
        for label, key in (setting.presses if setting else ()):
            session.untimed(label, key)
        candidates = ([("slider", s["label"]) for s in sliders(session.page)] + [("dropdown", d["label"]) for d in dropdowns(session.page)]
                      + [("radio", r) for r in lab.radios] + [("commit", COMMIT)] * bool(lab.commits))
        for kind, name in candidates:
            if session.room(kind, name) == 0:
                continue
            try:
                lab_s, kernel_s, floor_s, fresh = session.move(kind, name)
            except NoRun:
                print(f"    survey {where:>8}: {name[:48]:<48} started no run: not an instrument here", flush=True)
                continue
            rows.append(dict(kind=kind, what=name, setting=where, lab_s=lab_s, kernel_s=kernel_s, floor_s=floor_s, fresh=fresh))
            print(f"    survey {where:>8}: {name[:48]:<48} {lab_s * 1e3:6.0f} ms (run complete at {kernel_s * 1e3:5.0f}); floor {floor_s * 1e3:4.0f} ms"
                  f"{'' if fresh else '  (NOT fresh)'}", flush=True)
    return rows


MOVE_PAGES = 4  # pages served afresh for the heaviest instrument's moves at most (Lab 15's 3-position sliders: one fresh move a page)


def measure(session: Session, lab: Lab, row: dict, n: int, revisit: bool) -> list[tuple]:
    """The heaviest instrument, on a page served afresh, at the setting where the survey found
    it, moved up to n times: (lab s, kernel s, floor s, fresh) per move."""
    for setting in lab.settings:
        if setting.what == row["setting"]:
            for label, key in setting.presses:
                session.untimed(label, key)
    back = {"ArrowRight": "ArrowLeft", "ArrowLeft": "ArrowRight"}
    warm(session, row)
    samples = []
    while len(samples) < n:
        if row["kind"] in ("radio", "commit"):  # every option, or problem, once (--revisit: neither is moved back)
            if session.room(row["kind"], row["what"]) == 0:
                break
            samples.append(session.move(row["kind"], row["what"]))
        else:
            if session.room(row["kind"], row["what"]) == 0 and not revisit:
                break
            key = session.keys[row["kind"], row["what"]]
            if revisit:
                key = key if len(samples) % 2 == 0 else back[key]
            samples.append(session.move(row["kind"], row["what"], key))
    return samples


def warm(session: Session, row: dict) -> None:
    """One untimed step of another slider and back (a page without one: of another dropdown), as
    the floor's page gets three untimed moves: a page served afresh pays on its first moves for
    what neither its kernel nor its frontend has used yet (Lab 07's first five moves: 408, 329,
    233, 202, 202 ms, the run complete at 130, 122, 91, 58, 59; Lab 09, whose instruments are
    dropdowns and a radio, was not warmed: its first radio move 654 and 480 ms in two runs). The
    heaviest instrument itself is not moved, so no output of its moves is computed here."""
    for kind in ("slider", "dropdown"):
        for info in controls(session.page, kind):
            if info["disabled"] or info["label"] == row["what"] or info["label"].startswith("Play"):
                continue
            r = room(info)
            key = "ArrowRight" if r["ArrowRight"] else "ArrowLeft" if r["ArrowLeft"] else None
            if key is None:
                continue
            session.untimed(info["label"], key, kind)
            session.untimed(info["label"], "ArrowLeft" if key == "ArrowRight" else "ArrowRight", kind)
            return


def spread(times: list[float]) -> str:
    return f"median {statistics.median(times) * 1e3:.0f} ms (min {min(times) * 1e3:.0f}, max {max(times) * 1e3:.0f})"


@contextlib.contextmanager
def unlocked(pw, lab: Lab, timeout_s: float):
    """(Session, seconds to the first prediction): the lab served afresh (a new kernel: no cache
    of it warm) with its first prediction committed, and a floor page beside it."""
    with served(pw, lab, timeout_s) as (page, first), served(pw, FLOOR, timeout_s) as (floor_page, _):
        unlock(page, lab, timeout_s)
        settle(floor_page)
        floor = Floor(floor_page, timeout_s)
        for _ in range(3):  # untimed: a fresh page's first moves load what the page has not used yet
            floor.move()
        yield Session(page, floor, lab, timeout_s), first


def named(page, lab: Lab, instrument: str, setting: str) -> list[dict]:
    """`--instrument` instead of the survey: the one row of the slider, dropdown or radio whose
    label starts with `instrument`, at `setting` (a heavy setting's name, or "default")."""
    kinds = ([("slider", s["label"]) for s in sliders(page)] + [("dropdown", d["label"]) for d in dropdowns(page)] + [("radio", r) for r in lab.radios]
             + [("commit", COMMIT)] * bool(lab.commits))
    for kind, name in kinds:
        if name.startswith(instrument):
            return [dict(kind=kind, what=name, setting=setting, lab_s=0.0, kernel_s=0.0, floor_s=0.0, fresh=True)]
    raise ValueError(f"no instrument labelled {instrument!r}; the page has {[name for _, name in kinds]}")


def first_prediction(pw, key: str, lab: Lab, starts: int, timeout_s: float) -> dict:
    """`--first-only`: the starts alone (the floor's, the lab's, in turn), no survey and no moves;
    a measurement convenience, the same starts as bench's."""
    floor_first, lab_first, floor_cpu, lab_cpu, floor_chart = [], [], [], [], []
    for _ in range(starts):
        with served(pw, FLOOR, timeout_s, floor_cpu, floor_chart) as (_, t):
            floor_first.append(t)
        with served(pw, lab, timeout_s, lab_cpu) as (_, t):
            lab_first.append(t)
    print(f"  first prediction {spread(lab_first)}; floor's first text {spread(floor_first)}; ratio {ratio_of_medians(lab_first, floor_first):.2f}x; "
          f"floor's first chart {spread(floor_chart)}; ratio {ratio_of_medians(lab_first, floor_chart):.2f}x", flush=True)
    print(f"    lab starts s: {' '.join(f'{t:.2f}' for t in lab_first)}; floor starts s: {' '.join(f'{t:.2f}' for t in floor_first)}", flush=True)
    print(f"    server CPU by then, s: lab {' '.join(f'{c:.2f}' for c in lab_cpu)}; floor {' '.join(f'{c:.2f}' for c in floor_cpu)}; "
          f"median difference {statistics.median(lab_cpu) - statistics.median(floor_cpu):+.2f} s", flush=True)
    return dict(key=key, what="(--first-only: no survey)", lab_ms=float("nan"), floor_ms=float("nan"), ratio=float("nan"), moves=0,
                first=statistics.median(lab_first), floor_first=statistics.median(floor_first), floor_chart=statistics.median(floor_chart))


def bench(pw, key: str, lab: Lab, n: int, starts: int, timeout_s: float, revisit: bool, instrument: str | None = None, setting: str = "default",
          first_only: bool = False) -> dict:
    """Starts (the floor's, the lab's, in turn), the survey on one lab page, and the heaviest
    instrument's moves on another, served afresh: the survey's moves have warmed no cache.
    `instrument` (a label's start): that instrument at `setting`, no survey; `first_only`: the
    starts alone (first_prediction)."""
    print(f"Lab {key} ({lab.file}); load average {os.getloadavg()[0]:.1f}", flush=True)
    if first_only:
        return first_prediction(pw, key, lab, starts, timeout_s)
    floor_first, lab_first, floor_chart = [], [], []
    for _ in range(max(0, starts - 2)):
        with served(pw, FLOOR, timeout_s, chart=floor_chart) as (_, t):
            floor_first.append(t)
        with served(pw, lab, timeout_s) as (_, t):
            lab_first.append(t)
    with served(pw, FLOOR, timeout_s, chart=floor_chart) as (_, t):
        floor_first.append(t)
    with unlocked(pw, lab, timeout_s) as (session, t):
        lab_first.append(t)
        rows = named(session.page, lab, instrument, setting) if instrument else survey(session, lab)
    if not rows:  # a lab whose instruments unlock with a later question than its Lab.unlocks
        print("  no instrument started a run after the first prediction: nothing to measure", flush=True)
        return dict(key=key, what="(no instrument after the first prediction)", lab_ms=float("nan"), floor_ms=float("nan"), ratio=float("nan"), moves=0,
                    first=statistics.median(lab_first), floor_first=statistics.median(floor_first), floor_chart=statistics.median(floor_chart))
    top = heaviest(rows)
    with served(pw, FLOOR, timeout_s, chart=floor_chart) as (_, t):
        floor_first.append(t)
    samples, floor_t, pages = [], [], 0
    while len(samples) < n and pages < MOVE_PAGES:  # an instrument with less room than n fresh moves: again on a page served afresh
        with unlocked(pw, lab, timeout_s) as (session, t):
            if not pages:
                lab_first.append(t)
                print(f"  first prediction {spread(lab_first)}; floor's first text {spread(floor_first)}; floor's first chart {spread(floor_chart)}", flush=True)
            got = measure(session, lab, top, n - len(samples), revisit)
            floor_t += session.floor_times
        pages += 1
        samples += got
        if not got or revisit:
            break
    lab_t, kernel_t = [s[0] for s in samples], [s[1] for s in samples]
    ratio = ratio_of_medians(lab_t, floor_t)
    stale = sum(not s[3] for s in samples)
    print(f"  heaviest: {top['what']} at {top['setting']}: {spread(lab_t)}; floor {spread(floor_t)}; ratio {ratio:.2f}x (target {TARGET}x)"
          f"{f'; {stale} of {len(samples)} moves NOT fresh' if stale else ''}{f'; {pages} pages served afresh' if pages > 1 else ''}", flush=True)
    print(f"    lab moves ms: {' '.join(f'{t * 1e3:.0f}' for t in lab_t)}; run complete at ms: {' '.join(f'{t * 1e3:.0f}' for t in kernel_t)}", flush=True)
    print(f"    floor moves ms: {' '.join(f'{t * 1e3:.0f}' for t in floor_t)}", flush=True)
    return dict(key=key, what=f"{top['what']} ({top['setting']})", lab_ms=statistics.median(lab_t) * 1e3, floor_ms=statistics.median(floor_t) * 1e3,
                ratio=ratio, moves=len(samples), first=statistics.median(lab_first), floor_first=statistics.median(floor_first),
                floor_chart=statistics.median(floor_chart))


DASHBOARD = ROOT / "instructor" / "class_dashboard.py"
DASHBOARD_CHART = "committed answers"  # the title of the dashboard's first chart: the first question's answers by option


def first_chart(pw, notebook: Path, title: str | None, timeout_s: float, env: dict | None = None, args: list[str] | None = None) -> float:
    """Seconds from `marimo run` until the page's first chart (the one titled `title`) is drawn."""
    start = time.perf_counter()
    with marimo_run(str(notebook), env=env, args=args, timeout=timeout_s) as url, open_page(pw) as page:
        page.goto(url)
        chart = page.locator(".js-plotly-plot").filter(has=page.locator("text.gtitle", has_text=title)) if title else page.locator(".js-plotly-plot")
        chart.locator(".main-svg").first.wait_for(timeout=timeout_s * 1000)
        return time.perf_counter() - start


def class_of(folder: Path, n: int, into: Path) -> Path:
    """A copy of the class's first n ledgers (by file name): the dashboard, like the grader, follows no link."""
    into.mkdir()
    for path in sorted(folder.glob("student-*.ledger.json"))[:n]:
        shutil.copyfile(path, into / path.name)
    return into


def dashboard_bench(pw, folder: Path, sizes: list[int], starts: int, timeout_s: float) -> list[dict]:
    """Issue 34's budget: the class dashboard's first chart against the floor page's first chart,
    started in turn `starts` times at each class size, with the class's salt (class.env)."""
    env_file = folder / "class.env"
    env = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line) if env_file.exists() else {}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            ledgers = class_of(folder, n, Path(tmp) / f"class-{n}")
            floor_t, board_t = [], []
            for _ in range(starts):
                floor_t.append(first_chart(pw, ROOT / "benchmarks" / "floor_notebook.py", None, timeout_s))
                board_t.append(first_chart(pw, DASHBOARD, DASHBOARD_CHART, timeout_s, env=env, args=["--ledgers", str(ledgers)]))
            ratio = ratio_of_medians(board_t, floor_t)
            print(f"dashboard, {len(list(ledgers.glob('*.json')))} ledgers: first chart {spread(board_t)}; floor's first chart {spread(floor_t)}; "
                  f"ratio {ratio:.2f}x (target {TARGET}x: {'met' if ratio <= TARGET else 'MISSED'})", flush=True)
            rows.append(dict(n=n, board=statistics.median(board_t), floor=statistics.median(floor_t), ratio=ratio))
    return rows


@contextlib.contextmanager
def compiled_labs():
    """`--bytecode`: every module under labs/ compiled for the run, each .pyc checked against its
    source's hash when imported (an edit since is never run stale), and the __pycache__ folders it
    made removed at the end (other processes in this checkout read them while it runs). A package
    installed with pip has its bytecode (the hub's image: deploy/k8s/Dockerfile); this checkout,
    under PYTHONDONTWRITEBYTECODE=1 (set on this machine), has none, so every `marimo run`
    compiles the ~90 modules a lab imports (engine, scenarios, ui: 0.2-0.3 s of CPU a start)
    while the floor's libraries (marimo, plotly) load theirs from site-packages."""
    import compileall
    import py_compile

    before = {p for p in (ROOT / "labs").rglob("__pycache__")}
    compileall.compile_dir(ROOT / "labs", quiet=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    print(f"labs/ compiled to checked-hash bytecode for this run (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})", flush=True)
    try:
        yield
    finally:
        for folder in (ROOT / "labs").rglob("__pycache__"):
            if folder not in before:
                shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab", action="append", choices=sorted(LABS), help="lab number (repeatable); default: every lab")
    parser.add_argument("--notebook", action="append", default=[], metavar="PATH", help="a notebook under labs/ (repeatable; a problem set: labs/problems/ps02_memory.py), besides any --lab")
    parser.add_argument("--moves", type=int, default=8, help="moves of the heaviest instrument (fewer where it has no more room), a floor move beside each")
    parser.add_argument("--starts", type=int, default=3, help="starts of the floor and of the lab, for the first prediction (at least 2)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for one move")
    parser.add_argument("--instrument", metavar="LABEL", help="time this instrument (its label's start, e.g. 'Stages p') instead of the survey's heaviest")
    parser.add_argument("--setting", default="default", help="with --instrument: the heavy setting to time it at (Lab 07: 'p = 64')")
    parser.add_argument("--bytecode", action="store_true", help="compile labs/ to bytecode for the run (checked-hash .pyc, removed at the end), as the hub's "
                        "image has it (deploy/k8s/Dockerfile: pip install compiles); without it, where PYTHONDONTWRITEBYTECODE is set, each start compiles the labs' sources")
    parser.add_argument("--first-only", action="store_true", help="only the starts (first prediction against the floor's first text): no survey, no moves")
    parser.add_argument("--revisit", action="store_true", help="move the heaviest instrument back and forth (positions shown before, cache hits included)")
    parser.add_argument("--dashboard", type=Path, metavar="CLASS", help="instead of labs: the class dashboard's first chart on this class folder's "
                        "first 200 and 1,000 ledgers (scripts/make_class.py's; its class.env gives the salt), against the floor's first chart")
    args = parser.parse_args()
    if chromium_path() is None:
        sys.exit("Debian's chromium is not installed (apt-get install chromium)")
    with compiled_labs() if args.bytecode else contextlib.nullcontext():
        run(args)


def run(args) -> None:
    from playwright.sync_api import sync_playwright

    load = os.getloadavg()
    if args.dashboard:
        with sync_playwright() as pw:
            rows = dashboard_bench(pw, args.dashboard, [200, 1000], args.starts, args.timeout)
        print(f"load average at the start {load[0]:.1f}, at the end {os.getloadavg()[0]:.1f} (2 cores)")
        sys.exit(0 if all(r["ratio"] <= TARGET for r in rows) else 1)
    with sync_playwright() as pw:
        targets = [(key, LABS[key]) for key in (args.lab or ([] if args.notebook else sorted(LABS)))]
        targets += [(Path(path).stem, notebook_lab(path)) for path in args.notebook]
        rows = [bench(pw, key, lab, args.moves, args.starts, args.timeout, args.revisit, args.instrument, args.setting, args.first_only) for key, lab in targets]
    print(f"\nload average at the start {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, at the end {' '.join(f'{x:.1f}' for x in os.getloadavg())} (2 cores)")
    print(f"lab  heaviest instrument (setting)                                   lab ms  floor ms  ratio (target {TARGET}x)  moves  "
          "first prediction; floor's first text; floor's first chart (medians of starts)")
    for r in rows:
        verdict = "ok" if r["ratio"] <= TARGET else "OVER" if r["ratio"] > TARGET else "--"
        print(f"{r['key']:>3}  {r['what'][:62]:<62} {r['lab_ms']:6.0f}  {r['floor_ms']:8.0f}  {r['ratio']:5.2f}x {verdict:>4}        {r['moves']:5d}"
              f"  {r['first']:.2f} s; {r['floor_first']:.2f} s ({r['first'] / r['floor_first']:.2f}x); {r['floor_chart']:.2f} s ({r['first'] / r['floor_chart']:.2f}x)")


if __name__ == "__main__":
    main()

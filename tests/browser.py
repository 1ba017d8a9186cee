"""Helpers for driving a lab in a real browser: `marimo run` on 127.0.0.1 and Debian's
Chromium through Playwright. Used by tests/test_browser.py and scripts/screenshots.py."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]


def chromium_path() -> str | None:
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(url: str, proc: subprocess.Popen, timeout: float) -> None:
    """Poll `url` until it answers; RuntimeError once `proc` has exited or `timeout` has passed."""
    deadline = time.time() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"nothing answered on {url}")
            time.sleep(0.3)


def start_marimo(lab: str, env: dict | None = None, args: list[str] | None = None, taken: set[int] | None = None) -> tuple[subprocess.Popen, str]:
    """Start `marimo run` on a lab (not waiting for it): its process and URL (`taken`: ports
    already chosen for servers not listening yet, avoided and added to)."""
    port = free_port()
    while taken is not None and port in taken:
        port = free_port()
    if taken is not None:
        taken.add(port)
    cmd = [sys.executable, "-m", "marimo", "run", str(ROOT / "labs" / lab), "--host", "127.0.0.1", "--port", str(port), "--headless", "--no-token"]
    cmd += ["--", *args] if args else []
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}"


def stop_marimo(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


# Servers started ahead of the test that serves them: tests/conftest.py starts the next test's
# (a test marked `serves`) while the test before it runs, as `marimo run` with only a ledger folder
# in its environment; marimo_run_many takes one for the same notebook and folder instead of
# starting its own. (notebook, ledger folder): process and URL.
_AHEAD: dict[tuple[str, str], tuple[subprocess.Popen, str]] = {}


def start_ahead(lab: str, ledgers: Path) -> None:
    """Start `marimo run` on `lab` with the ledger folder `ledgers`, for a later marimo_run."""
    if (lab, str(ledgers)) not in _AHEAD:
        _AHEAD[lab, str(ledgers)] = start_marimo(lab, {"LABS_LEDGER_DIR": str(ledgers)})


def stop_ahead() -> None:
    """Stop the servers started ahead that no test took."""
    while _AHEAD:
        stop_marimo(_AHEAD.popitem()[1][0])


@contextlib.contextmanager
def marimo_run_many(labs: list[str], envs: list[dict] | None = None, timeout: float = 90.0, args: list[str] | None = None,
                    args_each: list[list[str]] | None = None):
    """Serve several labs with `marimo run` on 127.0.0.1, their servers started side by side,
    and yield their URLs in order (`envs`: each server's environment, in the same order, such as
    a ledger folder of its own; `args`: the notebooks' own, passed after `--`; `args_each`: each
    server's own instead, in the same order)."""
    started, taken = [], {int(url.rsplit(":", 1)[1]) for _, url in _AHEAD.values()}  # theirs may not be listening yet
    try:
        for lab, env, own in zip(labs, envs or [None] * len(labs), args_each or [args] * len(labs), strict=True):
            ahead = _AHEAD.pop((lab, (env or {}).get("LABS_LEDGER_DIR")), None) if set(env or {}) == {"LABS_LEDGER_DIR"} and not own else None
            started.append(ahead or start_marimo(lab, env, own, taken))
        for proc, url in started:
            try:
                wait_until_serving(url, proc, timeout)
            except RuntimeError as err:
                if proc.poll() is None:
                    proc.terminate()  # its output ends when it does
                out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                raise RuntimeError(f"marimo run did not come up on {url}:\n{out[-3000:]}") from err
        yield [url for _, url in started]
    finally:
        for proc, _ in started:
            stop_marimo(proc)


@contextlib.contextmanager
def served_pages(labs: list[str], envs: list[dict] | None = None, args_each: list[list[str]] | None = None):
    """Several notebooks served side by side (marimo_run_many), each opened in a window of one
    Chromium (browser_pages), every page's load sent before any is waited on: their servers start
    and their kernels draw the first run at once, while the first page is driven. Yields the pages
    in order. For a module's tests that each drive a page of their own (a fixture of the module)."""
    with marimo_run_many(labs, envs, args_each=args_each) as urls, browser_pages(len(labs)) as pages:
        for page, url in zip(pages, urls, strict=True):
            page.goto(url, wait_until="commit")
        yield pages


@contextlib.contextmanager
def marimo_run(lab: str, env: dict | None = None, timeout: float = 90.0, args: list[str] | None = None):
    """Serve a lab with `marimo run` on 127.0.0.1 and yield its URL (`args`: the notebook's own,
    passed after `--`)."""
    with marimo_run_many([lab], [env], timeout, args) as (url,):
        yield url


# Counts marimo's "completed-run" messages (the kernel sends one when it has finished a command,
# such as a widget's new value; a test waits for the count to rise instead of for time), with the
# time of the last, and the cells it starts running (benchmarks/bench_browser.py reads both);
# __kernelRan: the id of each cell it started running, in order.
# __kernelIdle: the last command has finished (its "completed-run" came after every cell it queued);
# a cell queued or running makes it false until the next "completed-run".
COUNT_RUNS = """() => {
  window.__kernelRuns = 0;
  window.__kernelIdle = false;
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', e => {
        if (typeof e.data !== 'string') return;
        if (e.data.includes('"completed-run"')) { window.__kernelRuns++; window.__kernelRunAt = performance.now(); window.__kernelIdle = true; }
        if (e.data.includes('"cell-op"') && e.data.includes('"status":"running"')) {
          window.__kernelCells = (window.__kernelCells || 0) + 1;
          const cell = /"cell_id": *"([^"]+)"/.exec(e.data);
          (window.__kernelRan = window.__kernelRan || []).push(cell ? cell[1] : null);
        }
        if (e.data.includes('"cell-op"') && (e.data.includes('"status":"running"') || e.data.includes('"status":"queued"'))) window.__kernelIdle = false;
      });
    }
  };
}"""

# The page has drawn all the kernel has sent: the kernel is idle, no cell's output is loading or
# stale, and React's render of the last messages (a task marimo's handler queued before this
# one: a MessageChannel message and a frame later) has run; checked again after it.
DRAWN = """async () => {
  const settled = () => window.__kernelIdle && !document.querySelector('.marimo-output-loading, .marimo-output-stale');
  if (!settled()) return false;
  await new Promise(done => { const channel = new MessageChannel(); channel.port1.onmessage = done; channel.port2.postMessage(0); });
  await new Promise(done => requestAnimationFrame(() => setTimeout(done, 0)));
  return settled();
}"""


def wait_drawn(page, timeout: float = 120_000) -> None:
    """Wait until the page has drawn the kernel's last command (DRAWN). Call it once the page
    shows something the awaited command's run draws (a text its cells write): before that run
    starts the kernel is idle too, and a count of runs can rise with another command's (a lab's
    poll every 3 s)."""
    page.wait_for_function(DRAWN, timeout=timeout)


def watch_kernel(page) -> None:
    """Count the kernel's completed runs on this page (call before page.goto)."""
    page.add_init_script(f"({COUNT_RUNS})()")


def kernel_runs(page) -> int:
    return page.evaluate("() => window.__kernelRuns || 0")


def cells_started(page) -> int:
    """How many cell runs the kernel has started on this page so far."""
    return page.evaluate("() => (window.__kernelRan || []).length")


def wait_cell_ran(page, cell_id: str, since: int, timeout: float = 120_000) -> None:
    """Wait until the kernel has started running the cell `cell_id` after the first `since` cell
    runs (cells_started): a command that re-runs it has begun (then wait_drawn for its end)."""
    page.wait_for_function(f"() => (window.__kernelRan || []).slice({since}).includes({json.dumps(cell_id)})", timeout=timeout)


def type_text(page, field, value: str) -> None:
    """Type into a marimo text or number field and wait until the kernel has run with it, so a
    commit pressed next reads the typed value (pressed before, it reads none)."""
    before = kernel_runs(page)
    field.fill(value)
    field.press("Tab")
    page.wait_for_function(f"() => (window.__kernelRuns || 0) > {before}")


type_number = type_text  # a number field is typed the same way


NAME_FIELD = "Your name or student id (goes into your design ledger)"
PIN_FIELDS = ("PIN (optional here", "A PIN of at least 4 characters", "Your code from the class roster")


def pin_field(page):
    """The lab's PIN field (ui.student_pin), whichever label the server's mode gives it."""
    return page.get_by_label(re.compile("|".join(re.escape(label) for label in PIN_FIELDS)))


def sign_in(page, name: str, pin: str = "") -> None:
    """Type the student's name (the variant is drawn from it), then the PIN if one is given, each
    in its own field, waiting for the kernel's run after each."""
    type_text(page, page.get_by_label(NAME_FIELD), name)
    if pin:
        type_text(page, pin_field(page), pin)


def launch(pw):
    """A headless Debian Chromium under the Playwright `pw`."""
    return pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)


@contextlib.contextmanager
def open_windows(browser, n: int, width: int = 1400, height: int = 1000):
    """`n` pages in `browser`, each counting the kernel's runs. A context (a window) each: tabs
    of one window behind the front one are hidden, and a hidden page answered each step about a
    second late (five problem sets in one window: 17 s each behind the front one against 3 s in
    front). A context shares no cookies, storage or downloads with another."""
    contexts = [browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True) for _ in range(n)]
    pages = [context.new_page() for context in contexts]
    for page in pages:
        watch_kernel(page)
        page.set_default_timeout(60_000)
    try:
        yield pages
    finally:
        for context in contexts:
            context.close()


@contextlib.contextmanager
def open_pages(pw, n: int, width: int = 1400, height: int = 1000):
    """`n` pages (open_windows) in one Chromium of its own under the Playwright `pw`."""
    browser = launch(pw)
    try:
        with open_windows(browser, n, width, height) as pages:
            yield pages
    finally:
        browser.close()


@contextlib.contextmanager
def open_page(pw, width: int = 1400, height: int = 1000):
    """A page in a Chromium of its own under the Playwright `pw`, counting the kernel's runs
    (several at once share one Playwright: benchmarks/bench_browser.py)."""
    with open_pages(pw, 1, width, height) as (page,):
        yield page


# One Chromium kept for the browser_page(s) calls that follow keep_chromium(True), until
# keep_chromium(False): tests/conftest.py keeps it while browser tests run one after another.
# A Playwright driver and a Chromium cost 1.2-2.2 s to start and stop (2 loaded cores), a window
# in the kept one 0.3-0.7 s.
_KEPT: dict = {"wanted": False}


def keep_chromium(wanted: bool) -> None:
    """Keep one Chromium for the browser_page(s) calls from now on, or close the kept one. Kept,
    its Playwright holds this thread's event loop, and asyncio.run() refuses to start here."""
    if not wanted:
        browser, pw = _KEPT.pop("browser", None), _KEPT.pop("pw", None)
        try:
            if browser is not None:
                browser.close()
        finally:
            if pw is not None:
                pw.stop()
    _KEPT["wanted"] = wanted


@contextlib.contextmanager
def _chromium():
    """The kept Chromium (launched at its first use, again if it has gone), or one of this
    call's own."""
    from playwright.sync_api import sync_playwright

    if _KEPT["wanted"]:
        if "pw" not in _KEPT:
            _KEPT["pw"] = sync_playwright().start()
        if "browser" not in _KEPT or not _KEPT["browser"].is_connected():
            _KEPT["browser"] = launch(_KEPT["pw"])
        yield _KEPT["browser"]
        return
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def browser_page(downloads: Path | None = None, width: int = 1400, height: int = 1000):
    """A page in a window of its own (the kept Chromium's, else a Chromium of its own)."""
    with _chromium() as browser, open_windows(browser, 1, width, height) as (page,):
        yield page


@contextlib.contextmanager
def browser_pages(n: int, width: int = 1400, height: int = 1000):
    """`n` pages in one Chromium (tests that drive several notebooks served side by side)."""
    with _chromium() as browser, open_windows(browser, n, width, height) as pages:
        yield pages


# ui's one stylesheet (ui.with_stylesheet, sent once a page in its title) as Chromium computes it:
# each styled class as ui's markup nests it, put on the page beside the notebook's own output, and a
# plain <div> as the unstyled reference: [class, property, styled value, unstyled value]. The
# notebook's own .lab-message/.lab-hud are counted before the probes go in; the probes are removed
# after, so the page a test goes on driving is as it was.
COMPUTED_STYLES = """() => {
  const style = (el, prop) => getComputedStyle(el).getPropertyValue(prop);
  const own = [...document.querySelectorAll('.lab-message, .lab-hud')];
  const probes = [];
  const probe = html => { const d = document.createElement('div'); d.innerHTML = html; document.body.appendChild(d); probes.push(d); return d; };
  const plain = probe('<div id="plain"></div>').firstChild;
  const card = probe('<div class="lab-card"><div class="value">1</div><div class="label">x</div></div>').firstChild;
  const cell = probe('<table class="lab-table"><tbody><tr><td>1</td></tr></tbody></table>').querySelector('td');
  const plainCell = probe('<table><tbody><tr><td>1</td></tr></tbody></table>').querySelector('td');
  const bar = probe('<div class="lab-bar"><div class="track"></div></div>').firstChild;
  const hud = probe('<div class="lab-hud">x</div>').firstChild;
  const message = probe('<div class="lab-message">x</div>').firstChild;
  const seen = {
    sheets: [...document.querySelectorAll('style')].filter(s => s.textContent.includes('.lab-card {')).length,
    card: [style(card, 'border-radius'), style(plain, 'border-radius')],
    cell: [style(cell, 'padding-left'), style(plainCell, 'padding-left')],
    track: [style(bar.querySelector('.track'), 'display'), style(plain, 'display')],
    hud: [style(hud, 'border-radius'), style(plain, 'border-radius')],
    message: [style(message, 'border-left-width'), style(plain, 'border-left-width')],
    drawn: own.length,
    drawnStyled: own.every(el => style(el, 'border-radius') !== '0px'),
  };
  probes.forEach(d => d.remove());
  return seen;
}"""


def assert_one_stylesheet(page, name: str) -> None:
    """The page (`name`: the notebook, for the failure message) has one <style> holding ui's
    stylesheet, and a .lab-card, .lab-table, .lab-bar, .lab-hud and .lab-message computed style is
    the stylesheet's, not the browser's default; the notebook's own messages/HUDs are styled. Call
    it once a .lab-message (a problem set: a .lab-hud) is on the page."""
    seen = page.evaluate(COMPUTED_STYLES)
    assert seen["sheets"] == 1, (name, seen)
    assert seen["card"] == ["8px", "0px"], (name, seen)
    assert seen["cell"][0] == "12.8px" != seen["cell"][1], (name, seen)
    assert seen["track"] == ["flex", "block"], (name, seen)
    assert seen["hud"] == ["6px", "0px"], (name, seen)
    assert seen["message"] == ["4px", "0px"], (name, seen)
    assert seen["drawn"] >= 1 and seen["drawnStyled"], (name, seen)


def choose(page, option_text: str, commit: int | None = None) -> None:
    """Click the radio option whose label starts with `option_text`; with `commit`, then press
    the page's commit-th "Commit my prediction" button (0 for the first question)."""
    page.get_by_text(option_text, exact=False).first.click()
    if commit is not None:
        page.get_by_role("button", name="Commit my prediction").nth(commit).click()


def answer(page, question, value=None, commit: int | None = None, box: int = 0) -> None:
    """Answer a variant's question (labs.variants.Question) as a student does: click the option
    with this letter (default: the engine's key), or for a numeric question type this number
    (default: the engine's answer) into the page's box-th number field; with `commit`, press the
    commit-th "Commit my prediction" button."""
    if question.numeric:
        field = page.locator("marimo-number input").nth(box)
        type_number(page, field, f"{question.spec.answer if value is None else value:.6g}")
    else:
        key = value or question.key
        label = next(o.label for o in question.options if o.key == key)
        page.get_by_text(f"{key}) {label[:40]}", exact=False).first.click()
    if commit is not None:
        page.get_by_role("button", name="Commit my prediction").nth(commit).click()


def select_in_menu(page, option_label: str, without: str | None = None) -> None:
    """Pick `option_label` in the first dropdown offering it (and not offering `without`)."""
    menus = page.locator("select", has=page.locator("option", has_text=option_label))
    if without:
        menus = menus.filter(has_not=page.locator("option", has_text=without))
    menus.first.select_option(label=option_label)


def metric(page, label: str) -> str:
    """The value shown on the metric card with this label."""
    card = page.locator(".lab-card", has=page.locator(".label", has_text=label)).first
    return card.locator(".value").inner_text()


def submit_and_download(page, button: str, path: Path) -> Path:
    """Press the lab's submit button, wait for the save, download the ledger to `path`."""
    page.get_by_role("button", name=button).click()
    page.get_by_text(re.compile(r"Saved .*to")).first.wait_for()
    with page.expect_download() as info:
        page.get_by_text("Download ledger").first.click()
    info.value.save_as(path)
    return path

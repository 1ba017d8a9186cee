"""Start the class JupyterHub of deploy/jupyterhub_config.py on 127.0.0.1 with two students and an
instructor as real system users, and check what it guarantees: `python deploy/check_hub.py`
(as root: it creates the users chk-alice, chk-bob, chk-teach and removes them afterwards).

  - the hub refuses to start without a signing key or a class salt, or with an example or
    short one;
  - bob cannot sign in as alice (his password, no password, a shared one);
  - alice's and bob's servers run as their own uids, neither root;
  - bob cannot reach alice's server, the instructor's dashboard, or read alice's home or ledger;
  - students get `marimo run` only: no terminal, no kernel, no file writes, no /proxy/<port>;
  - the instructor's dashboard answers, and the instructor's group reads alice's ledger;
  - a live lecture in Chromium: both students commit a held question and see only a waiting note;
    on bob's page, text and marimo's data-* attributes through shadow roots, none of the engine's
    numbers the question opens (those his page shows once released and not before his commit)
    and not its reveal; after the release both see the reveal without a reload;
  - a crafted identity message is refused (audit N2): bob's page sends marimo's
    set_ui_element_value, with its own session headers, giving the disabled identity field
    alice's name; his page still shows his variant, not alice's (the class salt is drawn so that
    their first question's options differ in order), and his ledger records his variant only;
  - the gallery titles each lab by its title ("Lab 11: Long context and mixture of experts");
  - the class salt reaches every student's marimo: bob's variant, recorded in his ledger from the
    page, carries the class salt's fingerprint, and `python -m labs.variants 05 chk-bob` without
    the salt refuses, or with --no-salt prints another variant; the hub's ledgers graded with the
    salt are not flagged, graded without it they are;
  - marimo runs in the root-owned copy of the labs (HUB_NOTEBOOKS) that bob cannot write, and
    files bob planted in his home before his server started (~/parallelism-labs/labs/, a
    ~/.marimo.toml and ~/.config/marimo/marimo.toml putting ~/planted on sys.path) never run.

Needs: pip install -e ".[hub]"; npm install -g configurable-http-proxy. tests/test_hub.py runs it.
Exits 0 when every check passes; prints each check and the seconds taken.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "deploy"))

from browser import free_port, wait_until_serving  # noqa: E402

ALICE, BOB, TEACHER = "chk-alice", "chk-bob", "chk-teach"


def run_as(user: str, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", user, "--", *command], capture_output=True, text=True)


def login(base: str, user: str, password: str) -> requests.Session:
    session = requests.Session()
    page = session.get(f"{base}/hub/login", timeout=30)
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text)
    session.post(f"{base}/hub/login", data={"username": user, "password": password, "_xsrf": xsrf.group(1) if xsrf else ""}, allow_redirects=False, timeout=30)
    return session


def signed_in(session: requests.Session, base: str) -> str | None:
    found = session.get(f"{base}/hub/api/user", headers={"Referer": f"{base}/hub/"}, timeout=30)
    return found.json().get("name") if found.status_code == 200 else None


def sign_ins(base: str, attempts: list[tuple[str, str]]) -> list[tuple[requests.Session, str | None]]:
    """Each (user, password) signed in at once: its session and whom the hub says it is. PAM
    holds a refused sign-in ~3 s (pam_faildelay); the hub's PAMAuthenticator runs up to 4 at once."""
    def one(attempt):
        session = login(base, *attempt)
        return session, signed_in(session, base)

    with ThreadPoolExecutor(len(attempts)) as pool:
        return list(pool.map(one, attempts))


def xsrf_cookie(session: requests.Session, path: str) -> str:
    """The _xsrf cookie set for `path` (the hub and each server set their own)."""
    found = [c for c in session.cookies if c.name == "_xsrf" and path.startswith(c.path or "/")]
    return max(found, key=lambda c: len(c.path or "")).value if found else ""


def start_server(session: requests.Session, base: str, user: str) -> requests.Response:
    """Ask the hub for the user's server and wait until its marimo page answers."""
    xsrf = xsrf_cookie(session, "/hub/")
    session.post(f"{base}/hub/api/users/{user}/server", headers={"X-XSRFToken": xsrf, "Referer": f"{base}/hub/"}, timeout=60)
    deadline = time.time() + 150
    while time.time() < deadline:
        page = session.get(f"{base}/user/{user}/marimo/", timeout=60)
        if page.status_code == 200 and "marimo" in page.text:
            return page
        time.sleep(0.5)
    raise TimeoutError(f"{user}'s marimo page did not answer in 150 s")


def start_servers(base: str, sessions: dict[str, requests.Session]) -> dict[str, requests.Response | Exception]:
    """start_server for each {user: session} at once: each user's marimo page, or why not."""
    def one(user):
        try:
            return start_server(sessions[user], base, user)
        except (TimeoutError, requests.RequestException) as err:
            return err

    with ThreadPoolExecutor(len(sessions)) as pool:
        return dict(zip(sessions, pool.map(one, sessions)))


def refuses_to_start(env: dict, name: str = "LABS_SIGNING_KEY") -> bool:
    """Load the hub's configuration as JupyterHub would, in a child process: exit 2 naming `name`."""
    load = f"import runpy, traitlets.config as t; runpy.run_path({str(ROOT / 'deploy' / 'jupyterhub_config.py')!r}, init_globals={{'get_config': t.Config}})"
    done = subprocess.run([sys.executable, "-c", load], env=env, capture_output=True, text=True, timeout=60)
    return done.returncode == 2 and name in done.stderr


def marimo_pid(uid: int) -> int | None:
    """The pid of the `marimo run` of this hub that runs as `uid`."""
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
            owner = next(int(line.split()[1]) for line in (entry / "status").read_text().splitlines() if line.startswith("Uid:"))
        except (OSError, StopIteration, ValueError):
            continue
        if owner == uid and b"marimo" in b" ".join(args) and b"run" in args and any(b"/user/chk-" in a for a in args):
            return int(entry.name)
    return None


def process_environment(pid: int) -> dict[str, str]:
    pairs = (item.split(b"=", 1) for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


PLANTED = "planted-ran"  # what a planted file writes in bob's home if it ever runs


def plant(user: str, home: Path) -> bool:
    """As `user`, before their server first starts: files that would run in their kernel if marimo
    read code or configuration from their home (audit N12). Each writes ~/planted-ran."""
    payload = f"import pathlib; pathlib.Path({str(home / PLANTED)!r}).write_text(__file__)\n"
    toml = f'[runtime]\npythonpath = ["{home / "planted"}"]\n'
    script = (
        f"import pathlib; h = pathlib.Path({str(home)!r})\n"
        "for folder in ('parallelism-labs/labs', 'planted/labs', 'planted/labs/core'):\n"
        "    (h / folder).mkdir(parents=True, exist_ok=True)\n"
        f"    (h / folder / '__init__.py').write_text({payload!r})\n"
        f"(h / 'planted' / 'sitecustomize.py').write_text({payload!r})\n"
        f"(h / '.marimo.toml').write_text({toml!r})\n"
        "(h / '.config' / 'marimo').mkdir(parents=True, exist_ok=True)\n"
        f"(h / '.config' / 'marimo' / 'marimo.toml').write_text({toml!r})\n"
    )
    return run_as(user, sys.executable, "-c", script).returncode == 0


def side_by_side(*runs: tuple[str, list[str], dict]) -> list[subprocess.CompletedProcess]:
    """Each (user, Python arguments, environment) run as that user in /, two at a time (a Python
    start and the engine's import each)."""
    def one(run):
        user, args, env = run
        return subprocess.run(["runuser", "-u", user, "--", sys.executable, *args], env=env, cwd="/", capture_output=True, text=True)

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(one, runs))


def salt_checks(env: dict, ledgers: Path, salt: str) -> dict[str, bool]:
    """The class salt end to end: in bob's marimo, in the variant his page recorded, absent from
    what a student can print, and what the grader needs (labs.variants.class_salt reads it)."""
    from labs.core.state import ledger_filename
    from labs.variants import salt_fingerprint

    checks = {}
    pid = marimo_pid(__import__("pwd").getpwnam(BOB).pw_uid)
    seen = process_environment(pid) if pid else {}
    checks["the class salt is in bob's marimo's environment"] = seen.get("LABS_CLASS_SALT") == salt
    doc = json.loads((ledgers / BOB / ledger_filename(BOB)).read_text())
    recorded = (doc.get("variants") or {}).get(LAB) or {}
    checks["bob's variant, recorded from his page, carries the class salt's fingerprint"] = recorded.get("salt") == salt_fingerprint(salt) != salt_fingerprint("")
    bare = {k: v for k, v in env.items() if k != "LABS_CLASS_SALT"}
    refused, unsalted, with_salt, without = side_by_side(
        (BOB, ["-m", "labs.variants", "05", BOB], bare), (BOB, ["-m", "labs.variants", "05", BOB, "--no-salt"], bare),
        (TEACHER, ["-m", "labs.grade", "--strict", str(ledgers)], env), (TEACHER, ["-m", "labs.grade", str(ledgers)], bare))
    checks["without the salt, python -m labs.variants prints no variant for bob"] = refused.returncode == 2 and refused.stdout == "" and "no class salt" in refused.stderr
    printed = json.loads(unsalted.stdout) if unsalted.returncode == 0 else {}
    orders = {q: v.get("order") for q, v in (recorded.get("questions") or {}).items()}
    printed_orders = {q: v.get("ids") for q, v in (printed.get("questions") or {}).items()}
    print(f"bob's lab 05, on his page: seed {recorded.get('seed')}, option orders {orders}; printed without the salt: seed {printed.get('variant')}, option orders {printed_orders}", file=sys.stderr)
    checks["--no-salt says it is the unsalted variant, and it is not bob's (seed, settings or option order differ)"] = (
        "UNSALTED" in unsalted.stderr and printed.get("variant") not in (None, recorded.get("seed"))
        and (printed.get("settings") != recorded.get("settings") or printed_orders != orders))
    checks["graded with the class salt, no hub ledger is flagged"] = with_salt.returncode == 0 and ALICE in with_salt.stdout and BOB in with_salt.stdout and "0 file(s) not graded, 0 row(s) flagged or in error" in with_salt.stderr
    if not checks["graded with the class salt, no hub ledger is flagged"]:
        print(with_salt.stdout[-1500:], with_salt.stderr[-1500:], file=sys.stderr)
    checks["graded without it, both students' variants are flagged as another class salt's"] = all(any(u in line and "another class salt" in line for line in without.stderr.splitlines()) for u in (ALICE, BOB))
    return checks


def served_checks(notebooks: Path, homes: Path) -> dict[str, bool]:
    """Audit N12: what bob's kernel imports first is a folder only root writes."""
    checks = {}
    pid = marimo_pid(__import__("pwd").getpwnam(BOB).pw_uid)
    cwd = Path(os.readlink(f"/proc/{pid}/cwd")) if pid else None
    info = notebooks.stat()
    files = sorted(notebooks.iterdir())
    checks["bob's marimo runs in the hub's root-owned copy of the labs, 0755, files root's 0644"] = (
        cwd == notebooks.resolve() and info.st_uid == 0 and info.st_mode & 0o777 == 0o755
        and all(f.stat().st_uid == 0 and f.stat().st_mode & 0o777 == 0o644 for f in files) and any(f.name == f"{LAB}.py" for f in files))
    checks["bob cannot write there"] = all(run_as(BOB, *command).returncode != 0 for command in (
        ("mkdir", str(notebooks / "labs")), ("touch", str(notebooks / "sitecustomize.py")), ("touch", str(notebooks / f"{LAB}.py"))))
    checks["nothing bob planted in his home ran (labs copy, ~/.marimo.toml, ~/.config/marimo)"] = not (homes / BOB / PLANTED).exists() and (homes / BOB / ".marimo.toml").exists()
    return checks


def processes() -> list[tuple[int, str]]:
    """(uid, command line) of every process, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            uid = next(int(line.split()[1]) for line in (entry / "status").read_text().splitlines() if line.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        found.append((uid, args))
    return found


def as_instructor(env: dict, code: str) -> subprocess.CompletedProcess:
    """Run Python as the instructor's own user (the dashboard's side of the live lecture)."""
    return subprocess.run(["runuser", "-u", TEACHER, "--", sys.executable, "-c", code], env=env, cwd="/", capture_output=True, text=True)


LAB, QUESTION = "05_parallelism", "cause"
IDENTITY_LABEL = "Signed in to the class hub as (your design ledger's name)"


def shown_options(question) -> list[str]:
    """A choice question's options as its radio prints them ("A) ..."), in the variant's order,
    white space and markdown aside."""
    from test_lecture_hold import squeeze

    return [squeeze(re.sub(r"\*\*|`", "", f"{o.key}) {o.label}"))[:50] for o in question.options]


def telling_apart_salt() -> str:
    """A fresh class salt under which alice's and bob's Lab 05 pages differ where the page shows
    it (the first question's options in another order), so a page tells whose variant it drew."""
    from labs.variants import variant

    while True:
        salt = os.urandom(18).hex()
        if shown_options(variant(LAB, BOB, salt).questions[QUESTION]) != shown_options(variant(LAB, ALICE, salt).questions[QUESTION]):
            return salt


# The page's own set_ui_element_value (a radio clicked) gives the headers marimo wants: its
# session id and server token, and whatever the proxy in front asks of a POST.
KEEP_HEADERS = ("marimo-", "x-")
FIND_WIDGET = """(label) => {
  const found = [];
  const walk = (node) => {
    if (node.nodeType === 1) {
      if (node.tagName === 'MARIMO-UI-ELEMENT' && node.innerHTML.includes(label)) found.push(node.getAttribute('object-id'));
      if (node.shadowRoot) walk(node.shadowRoot);
    }
    for (const child of node.childNodes) walk(child);
  };
  walk(document.body);
  return found;
}"""
FORGE = """async ([url, headers, id, value]) => {
  const answer = await fetch(url, {method: 'POST', headers: {...headers, 'Content-Type': 'application/json'}, credentials: 'same-origin',
                                   body: JSON.stringify({objectIds: [id], values: [value]})});
  return [answer.status, await answer.text()];
}"""


def forge_identity(page, sent: list, name: str) -> tuple[int, str]:
    """Audit N2, as a student can from the page: marimo's set_ui_element_value with the page's
    own session headers (those of the last value the page sent, in `sent`), giving the disabled
    identity field `name`. Returns the server's status and answer."""
    if not sent:
        raise AssertionError("the page sent no widget value to copy its session headers from")
    url, headers, _ = sent[-1]
    ids = page.evaluate(FIND_WIDGET, IDENTITY_LABEL.split(" (")[0])  # the label sits JSON- and HTML-escaped in the element
    if len(ids) != 1:
        raise AssertionError(f"the identity widget is not one element on the page: {ids}")
    return tuple(page.evaluate(FORGE, [url, {k: v for k, v in headers.items() if k.lower().startswith(KEEP_HEADERS)}, ids[0], name]))


SPOOF_CHECKS = ("bob's page can send a crafted identity value (marimo's set_ui_element_value, the page's session headers)",
                "with alice's name crafted for the identity field, bob's page still shows bob's variant, none of alice's")


def send_spoof(page, sent: list) -> tuple[int, str]:
    """Audit N2 on the hub: bob's page sends alice's name for the disabled identity field, with
    the session headers of a value it sent itself (a radio clicked), and waits until the kernel
    has run it and the page has drawn that run. The crafted value re-draws the question (its
    cell reads the identity), and marimo merges the widget values that wait while the kernel is
    busy: a choice sent before that run ends would be given to the old radio and lost."""
    from browser import cells_started, kernel_runs, wait_cell_ran, wait_drawn

    before = kernel_runs(page)
    page.get_by_role("radio").first.click()  # a value the page sends itself: its session's headers
    page.wait_for_function(f"() => (window.__kernelRuns || 0) > {before}", timeout=120_000)
    radio = next(json.loads(body)["objectIds"][0] for _, _, body in reversed(sent) if re.search(r'"values":\["[A-D]\) ', body or ""))
    since = cells_started(page)
    status = forge_identity(page, sent, ALICE)
    wait_cell_ran(page, radio.rsplit("-", 1)[0], since)  # marimo's widget ids are <cell id>-<n>
    wait_drawn(page)
    return status


def spoof_checks(status: int, said: str, texts: list[str], salt: str) -> dict[str, bool]:
    """Bob's pages after the crafted value (`texts`, drawn from commands sent after it) show his
    options, in his order, none of alice's."""
    from test_lecture_hold import squeeze

    from labs.variants import variant

    mine, hers = (shown_options(variant(LAB, who, salt).questions[QUESTION]) for who in (BOB, ALICE))
    print(f"bob's page sent {ALICE!r} for the identity field: HTTP {status} {said[:80]}; his options {mine}, alice's {hers}", file=sys.stderr)
    sent_it, refused = SPOOF_CHECKS
    shown = [squeeze(text) for text in texts]
    return {sent_it: status == 200, refused: bool(shown) and all(all(o in text for o in mine) and not any(o in text for o in hers if o not in mine) for text in shown)}


def live_lecture(base: str, passwords: dict, env: dict, ledgers: Path, key: str, salt: str) -> dict[str, bool]:
    """Two students in Chromium, the instructor's hold and release: each student commits Lab 05's
    first question while it is held and sees only a waiting note; bob first sends a crafted
    identity value (alice's name) and his page keeps his variant. While held, bob's page (its text
    and marimo's data-* attributes, through shadow roots) holds none of the engine's numbers the
    question opens (what his page shows once released and did not before the commit) and not the
    reveal; after the release both see the reveal without reloading; the instructor's histogram
    has both; both ledgers verify as signed, bob's with his own variant only. The pages come from
    tests/browser.py (the test suite's kept Chromium, or one of its own)."""
    from browser import answer, browser_pages, kernel_runs, wait_drawn
    from labs.core import signing
    from labs.core.state import ledger_filename
    from labs.variants import variant
    from test_browser_hold import deep_page, distinctive
    from test_lecture_hold import HELD_NOTE, reveal_line, squeeze, tokens, typed

    checks = {}
    question = variant(LAB, BOB, salt).questions[QUESTION]
    held = as_instructor(env, f"from labs.core import lecture; lecture.hold({LAB!r}, {QUESTION!r})")
    checks["the instructor holds a question"] = held.returncode == 0
    release = f"from labs.core import lecture; lecture.release({LAB!r}, {QUESTION!r}); print(lecture.is_held({LAB!r}, {QUESTION!r}))"
    by_student = subprocess.run(["runuser", "-u", BOB, "--", sys.executable, "-c", release], env=env, cwd="/", capture_output=True, text=True)
    checks["a student cannot release it"] = by_student.returncode != 0 and "PermissionError" in by_student.stderr
    checks.update(dict.fromkeys(SPOOF_CHECKS, False))  # until bob's page shows otherwise
    snapshot = {}  # bob's page: before the commit, held, released
    holding = "Your instructor is holding this question's answer"
    with browser_pages(2) as both:
        pages, failed, spoof = dict(zip((ALICE, BOB), both)), set(), None
        doing = {}  # each student's step now, named in a failure

        def failure(user, step, err):  # a failed check, named, with a screenshot and what the page shows
            page = pages[user]
            page.screenshot(path=str(ledgers.parent / f"{user}-{step}.png"))
            shown = re.sub(r"\s+", " ", page.evaluate("() => document.body.innerText"))
            print(f"{user} in the {step} lab, at {doing.get(user)!r}: {str(err).splitlines()[0]}; the kernel completed {kernel_runs(page)} runs; "
                  f"the page ends: {shown[-700:]!r}", file=sys.stderr)
            failed.add(user)

        for user, page in pages.items():  # both sign in and open the lab; their kernels start side by side
            page.set_default_timeout(180_000)  # a lab's first render on a loaded 2-core machine
            sent = page.sent = []
            page.on("request", lambda r, sent=sent: sent.append((r.url, r.headers, r.post_data)) if r.method == "POST" and r.url.endswith("/api/kernel/set_ui_element_value") else None)
            try:
                page.goto(f"{base}/hub/login")
                page.fill("#username_input", user)
                page.fill("#password_input", passwords[user])
                page.click("#login_submit")
                page.wait_for_url(f"**/user/{user}/**")
                if user == ALICE:  # the gallery's cards carry the labs' titles, not their file names
                    page.goto(f"{base}/user/{user}/marimo/")
                    page.get_by_text("Lab 11: Long context and mixture of experts").first.wait_for(timeout=60_000)
                    checks["the gallery titles each lab by its title"] = page.get_by_text("11 Long Context Moe").count() == 0
                page.goto(f"{base}/user/{user}/marimo/?file={LAB}.py")
            except Exception as err:
                failure(user, "opened", err)
        for user, page in pages.items():
            if user in failed:
                continue
            try:
                page.get_by_label(IDENTITY_LABEL).wait_for()
                if user == ALICE:
                    page.get_by_role("radio").first.click()
                else:
                    spoof = send_spoof(page, page.sent)
                    before = kernel_runs(page)
                    answer(page, question)  # the engine's answer: the reveal says "Right."
                    page.wait_for_function(f"() => (window.__kernelRuns || 0) > {before}", timeout=120_000)
                    wait_drawn(page)
                    snapshot["uncommitted"] = deep_page(page)
                page.get_by_role("button", name="Commit my prediction").first.click()
                page.get_by_text(holding).first.wait_for()  # the commit's run has begun
                if user == BOB:
                    wait_drawn(page)  # and every cell it reaches is drawn
                    snapshot["held"] = deep_page(page)
            except Exception as err:
                failure(user, "held", err)
        if spoof is not None and "held" in snapshot:  # the commit came after the crafted value: its page shows what that did
            checks.update(spoof_checks(*spoof, [snapshot["uncommitted"], snapshot["held"]], salt))
        checks["while held, each student sees a waiting note, not the reveal"] = not failed and all(p.get_by_text("The engine says").count() == 0 and p.get_by_text("Right.").count() == 0 for p in pages.values())
        answers = as_instructor(env, f"from labs.core import lecture; print(sorted(lecture.committed_answers({LAB!r}, {QUESTION!r})))")
        checks["the instructor's histogram counts both students"] = answers.stdout.strip() == str(sorted([ALICE, BOB]))
        released = as_instructor(env, f"from labs.core import lecture; lecture.release({LAB!r}, {QUESTION!r})")
        seen = []
        for user, page in pages.items():
            if user in failed:
                continue
            try:
                page.get_by_text(holding).first.wait_for(state="hidden", timeout=120_000)
                page.get_by_text(re.compile(r"Right\.|Not quite|The engine says")).first.wait_for(timeout=120_000)
                if user == BOB:
                    line, deadline = reveal_line(question), time.time() + 60
                    while line not in squeeze(deep_page(page)) and time.time() < deadline:
                        page.wait_for_timeout(200)
                    wait_drawn(page)  # every cell the release opens
                    snapshot["released"] = deep_page(page)
                seen.append(True)
            except Exception:
                page.screenshot(path=str(ledgers.parent / "released.png"))
                seen.append(False)
        checks["after the release both students see the reveal without reloading"] = released.returncode == 0 and len(seen) == 2 and all(seen)
    # What the held question opens: the engine's numbers bob's page shows once released and did not
    # before his commit (his own typed answer aside), and its reveal; none of it on the held page.
    line = reveal_line(question)
    before, during, after = (snapshot.get(k, "") for k in ("uncommitted", "held", "released"))
    opened = distinctive(tokens(after)) - distinctive(tokens(before)) - typed(question)
    leaked = sorted(opened & tokens(during))
    print(f"bob's held question opens {len(opened)} engine numbers on release {sorted(opened)[:12]}; on his held page: {leaked}; reveal {line[:40]!r}", file=sys.stderr)
    checks["while held, bob's page (text and data-* attributes) shows none of the engine numbers the question opens, nor its reveal"] = (
        bool(during) and HELD_NOTE in during and len(opened) >= 3 and not leaked and bool(line) and line not in squeeze(during))
    checks["after the release, without a reload, bob's page shows the reveal and those numbers"] = bool(after) and HELD_NOTE not in after and line in squeeze(after) and len(opened) >= 3
    for user in (ALICE, BOB):
        path = ledgers / user / ledger_filename(user)
        labels = signing.verify_document(json.loads(path.read_text()), key) if path.exists() else []
        checks[f"{user}'s commit from the page is signed and verifies"] = (LAB, QUESTION, "signed") in labels and all(label == "signed" for _, _, label in labels)
    mine = variant(LAB, BOB, salt)
    path = ledgers / BOB / ledger_filename(BOB)
    doc = json.loads(path.read_text()) if path.exists() else {}
    recorded = (doc.get("variants") or {}).get(LAB) or {}
    checks["bob's ledger records his own variant only, nothing under alice's name"] = (
        doc.get("student") == BOB and recorded.get("student") == BOB and recorded.get("seed") == mine.seed and recorded.get("settings") == mine.settings
        and ALICE not in path.read_text() and sorted(p.name for p in path.parent.iterdir() if p.name.endswith(".ledger.json")) == [path.name])
    return checks


def main() -> int:
    import add_students
    from labs.core.state import ledger_filename

    if os.geteuid() != 0:
        print("FAIL: run as root: the check creates system users and the hub starts servers as them")
        return 1
    start = time.time()
    laps: dict[str, float] = {}  # seconds each stage took
    mark = start

    def lap() -> float:
        nonlocal mark
        now, since = time.time(), mark
        mark = now
        return round(now - since, 1)

    work = Path(tempfile.mkdtemp(prefix="labs-hub-"))
    homes, lecture, ledgers, notebooks = work / "homes", work / "lecture", work / "ledgers", work / "notebooks"
    os.chmod(work, 0o755)
    checks: dict[str, bool] = {}
    passwords = add_students.add([ALICE, BOB], TEACHER, homes)  # makes homes 0711
    with ThreadPoolExecutor(2) as pool:  # two Python starts as the students, while this process draws the salt
        reaching = pool.submit(run_as, ALICE, sys.executable, "-c", "import labs, jupyterhub")
        planting = pool.submit(plant, BOB, homes / BOB)
        key, salt = os.urandom(24).hex(), telling_apart_salt()
    reach = reaching.result()
    if reach.returncode != 0:
        print(f"FAIL: a student cannot run {sys.executable} or import labs ({reach.stderr.strip()[-200:]}); the folders above the interpreter and the checkout must be executable by others (.ci/run does chmod o+x)")
        for user in (ALICE, BOB, TEACHER):
            subprocess.run(["userdel", "--remove", "--force", user], capture_output=True)
        return 1
    checks["bob plants files in his home before his server starts"] = planting.result()
    port = free_port()
    env = {**os.environ, "HUB_PORT": str(port), "HUB_HOMES": str(homes), "HUB_STATE": str(work / "state"), "HUB_LEDGERS": str(ledgers), "LABS_LECTURE_DIR": str(lecture), "HUB_NOTEBOOKS": str(notebooks), "HUB_INSTRUCTOR": TEACHER}
    env.pop("LABS_LEDGER_DIR", None)
    env.pop("LABS_CLASS_SALT", None)
    laps["users"] = lap()
    log = (work / "hub.log").open("w")
    hub = subprocess.Popen(["jupyterhub", "-f", str(ROOT / "deploy" / "jupyterhub_config.py")], cwd=work / "homes", env={**env, "LABS_SIGNING_KEY": key, "LABS_CLASS_SALT": salt}, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    background = ThreadPoolExecutor(2)  # the configurations refused while the hub starts; the instructor's dashboard while the students work
    try:
        keys = [background.submit(refuses_to_start, {**env, "LABS_SIGNING_KEY": k, "LABS_CLASS_SALT": salt}) for k in ("", "change-me")]
        salts = [background.submit(refuses_to_start, {**env, "LABS_SIGNING_KEY": key, **extra}, "LABS_CLASS_SALT") for extra in ({}, {"LABS_CLASS_SALT": ""}, {"LABS_CLASS_SALT": "fall-2026"}, {"LABS_CLASS_SALT": "short-salt"})]
        checks["refuses a missing signing key"], checks["refuses an example signing key"] = (k.result() for k in keys)
        checks["refuses a missing, example or short class salt"] = all(s.result() for s in salts)
        env["LABS_SIGNING_KEY"], env["LABS_CLASS_SALT"] = key, salt
        wait_until_serving(f"{base}/hub/login", hub, 90)
        laps["hub start and refusals"] = lap()
        refused = [(ALICE, passwords[BOB]), (ALICE, ""), (ALICE, "change-me"), ("root", passwords[BOB])]
        signed = sign_ins(base, [*refused, *((u, passwords[u]) for u in (ALICE, BOB, TEACHER))])
        whom = [name for _, name in signed]
        checks["bob cannot sign in as alice with his password"] = whom[0] is None
        checks["nobody signs in with an empty or shared password"] = whom[1] is None and whom[2] is None
        checks["root cannot sign in"] = whom[3] is None
        alice, bob, teacher = (session for session, _ in signed[len(refused):])
        checks["each signs in as themselves"] = whom[len(refused):] == [ALICE, BOB, TEACHER]
        laps["sign-ins"] = lap()
        started = start_servers(base, {ALICE: alice, BOB: bob, TEACHER: teacher})  # the instructor's for the dashboard, below
        for user in (ALICE, BOB):
            if isinstance(started[user], Exception):
                raise started[user]
        page = started[ALICE]
        dashboard = None if isinstance(started[TEACHER], Exception) else background.submit(teacher.get, f"{base}/user/{TEACHER}/dashboard/", timeout=120)
        laps["servers"] = lap()
        lab = alice.get(f"{base}/user/{ALICE}/marimo/?file=05_parallelism.py", timeout=120).text
        checks["students get marimo run, not edit"] = '"mode": "gallery"' in page.text and '"mode": "read"' in lab and '"mode": "edit"' not in page.text + lab
        uids = {user: __import__("pwd").getpwnam(user).pw_uid for user in (ALICE, BOB)}
        running = processes()
        server_uid = {user: [uid for uid, args in running if "jupyterhub-singleuser" in args and uid == want] for user, want in uids.items()}
        marimo_uids = {uid for uid, args in running if "marimo run" in args and (f"/user/{ALICE}/" in args or f"/user/{BOB}/" in args)}  # this hub's students only
        if not all(server_uid.values()):
            print("servers seen:", [(uid, args[:120]) for uid, args in running if "singleuser" in args], file=sys.stderr)
        checks["alice's and bob's servers run as their own uids"] = all(server_uid[u] for u in uids) and uids[ALICE] != uids[BOB]
        checks["no student process runs as root"] = marimo_uids == set(uids.values())
        checks["no marimo token on a command line"] = not any("--token-password " in args or "--token-password=" in args for _, args in running if "marimo run" in args and "/user/chk-" in args)
        for name, url in {
            "bob cannot open alice's server": f"{base}/user/{ALICE}/marimo/?file=05_parallelism.py",
            "bob cannot read alice's files through the API": f"{base}/user/{ALICE}/api/contents/parallelism-labs",
        }.items():
            response = bob.get(url, timeout=60)  # redirects followed: through the hub's OAuth
            checks[name] = response.status_code in (403, 404) and '"mode":' not in response.text and "05_parallelism" not in response.text
            if not checks[name]:
                print(name, response.status_code, response.url, file=sys.stderr)
        xsrf = {"X-XSRFToken": xsrf_cookie(bob, f"/user/{BOB}/api/"), "Referer": f"{base}/user/{BOB}/"}
        api = f"{base}/user/{BOB}/api"
        checks["no terminal for bob"] = bob.post(f"{api}/terminals", headers=xsrf, timeout=30).status_code in (403, 404)
        checks["no kernel for bob"] = bob.post(f"{api}/kernels", json={"name": "python3"}, headers=xsrf, timeout=30).status_code == 403
        checks["no file writes for bob"] = bob.put(f"{api}/contents/evil.py", json={"type": "file", "format": "text", "content": "x"}, headers=xsrf, timeout=30).status_code == 403
        checks["no /proxy/<port> for bob"] = bob.get(f"{base}/user/{BOB}/proxy/{port}/hub/api", timeout=30).status_code in (403, 404)

        laps["server checks"] = lap()
        checks.update(live_lecture(base, passwords, env, ledgers, key, salt))
        laps["live lecture"] = lap()
        graded = background.submit(subprocess.run, ["runuser", "-u", TEACHER, "--", sys.executable, "-m", "labs.grade", str(ledgers)], env=env, cwd=str(ROOT), capture_output=True, text=True)
        ledger = ledgers / ALICE / ledger_filename(ALICE)
        checks["bob cannot read alice's ledger, list her ledgers or her home, or list the class"] = all(run_as(BOB, *command).returncode != 0 for command in (("cat", str(ledger)), ("ls", str(ledger.parent)), ("ls", str(homes / ALICE)), ("ls", str(ledgers)), ("ls", str(homes))))
        checks.update(salt_checks(env, ledgers, salt))
        checks.update(served_checks(notebooks, homes))
        checks["the instructor's group reads alice's ledger"] = run_as(TEACHER, "cat", str(ledger)).returncode == 0
        graded = graded.result()
        checks["the instructor grades both students' ledgers"] = graded.returncode == 0 and ALICE in graded.stdout and BOB in graded.stdout and "not read" not in graded.stderr
        if not checks["the instructor grades both students' ledgers"]:
            print(graded.stdout[-1500:], graded.stderr[-1500:], file=sys.stderr)
        laps["file, salt and grading checks"] = lap()
        try:
            checks["the instructor reaches the dashboard"] = dashboard is not None and dashboard.result().status_code == 200
            denied = bob.get(f"{base}/user/{TEACHER}/dashboard/", timeout=60)  # the instructor's server is running
            checks["bob cannot open the dashboard"] = denied.status_code in (403, 404) and '"mode":' not in denied.text
        except requests.RequestException:
            checks["the instructor reaches the dashboard"] = False
        laps["dashboard"] = lap()
    finally:
        background.shutdown(cancel_futures=True)
        hub.terminate()
        try:
            hub.wait(timeout=30)
        except subprocess.TimeoutExpired:
            hub.kill()
        log.close()
        for user in (ALICE, BOB, TEACHER):
            subprocess.run(["userdel", "--remove", "--force", user], capture_output=True)
        print(f"hub log: {work / 'hub.log'} (removed when every check passes)", file=sys.stderr)
    ok = all(checks.values())
    print(json.dumps({"ok": ok, "seconds": round(time.time() - start, 1), "stages": laps, "checks": checks}, indent=2))
    if ok:
        shutil.rmtree(work, ignore_errors=True)  # kept, with the hub's log, when a check failed
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""scripts/build_site.py, tested in pieces that run in seconds: the wheel the pages install, the
export command line, one lab exported as a WASM page, the index, and labs.core importing where
Pyodide lacks fcntl. (A browser test of the pages needs Pyodide's own package wheels, which this
machine cannot fetch: see README, "The labs as a static site".)"""

import base64
import hashlib
import importlib.util
import os
import re
import subprocess
import sys
import urllib.parse
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("build_site", ROOT / "scripts" / "build_site.py")
build_site = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build_site)

from labs.core.engine.datafiles import FILES  # noqa: E402

need_uv = pytest.mark.skipif(build_site.shutil.which("uv") is None and not os.environ.get("CI"), reason='uv is not installed (pip install -e ".[site]")')


@pytest.fixture(scope="module")
def one_lab_site(tmp_path_factory):
    out = tmp_path_factory.mktemp("built") / "site"
    return out, build_site.build(out, ["07"])


@pytest.fixture(scope="module")
def wheel(one_lab_site):
    """build_wheel's wheel as the built site holds it (marimo copies it byte for byte into
    public/wheels): one `uv build` for the module, not one for the wheel and one for the site."""
    out, _ = one_lab_site
    (wheel,) = (out / "public" / "wheels").glob("parallelism_labs-*.whl")
    return wheel


@need_uv
def test_the_wheel_is_the_labs_package_with_its_data(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        top = {n.split("/", 1)[0] for n in names}
        assert top == {"labs", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}  # `labs`, never a bare `core`
        assert "labs/core/ledger.schema.json" in names and "labs/core/state.py" in names and "labs/05_parallelism.py" in names
        assert {f"labs/core/engine/data/{f}" for f in FILES} <= set(names)
        meta_name = next(n for n in names if n.endswith("METADATA"))
        meta = z.read(meta_name).decode()
        requires = [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")]
        assert not any(re.match(r"marimo\b", r) for r in requires)  # the page runs marimo already
        assert any(r.startswith("plotly") for r in requires) and any(r.startswith("jsonschema") for r in requires)
        record = {row.split(",")[0]: row.split(",")[1] for row in z.read(next(n for n in names if n.endswith("RECORD"))).decode().splitlines() if row}
        digest = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(z.read(meta_name)).digest()).rstrip(b"=").decode()
        assert record[meta_name] == digest


@need_uv
def test_the_wheel_alone_runs_the_engine_without_fcntl(wheel, tmp_path):
    """Unpacked on its own (as micropip installs it), with fcntl missing as in Pyodide: the
    package imports, finds its schema and reference data inside itself, and saves a ledger."""
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path / "unpacked")
    probe = (
        "import sys, tempfile, warnings; sys.modules['fcntl'] = None\n"
        "warnings.simplefilter('ignore')\n"
        "import labs, labs.core, labs.core.scenarios, labs.grade\n"
        "from labs.core import state\nfrom labs.core.engine import calibration\n"
        "from labs.core.scenarios import lab07, lab08\n"
        f"assert labs.__file__.startswith({str(tmp_path / 'unpacked')!r}), labs.__file__\n"
        "assert str(state.SCHEMA_PATH).startswith(labs.__path__[0]) and str(calibration.DATA).startswith(labs.__path__[0])\n"
        "assert calibration.load_rows() and lab07.table5_profile()\n"
        "ledger = state.DesignLedger('browser student', tempfile.mkdtemp())\n"
        "ledger.commit_prediction('05_parallelism', 'cause', 'B')\n"
        "print(state.parse_document(ledger.export())['predictions'])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "unpacked")}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "'cause'" in result.stdout


def test_the_export_command_line():
    cmd = build_site.export_command(Path("lab.py"), Path("site/lab.html"))
    assert cmd[1:5] == ["-m", "marimo", "export", "html-wasm"] and cmd[cmd.index("--mode") + 1] == "run" and "--offline" not in cmd
    offline = build_site.export_command(Path("lab.py"), Path("site/lab.html"), True, "http://127.0.0.1:8000/pyodide/", "http://127.0.0.1:8000/simple")
    assert offline[offline.index("--pyodide-index-url") + 1] == "http://127.0.0.1:8000/pyodide/" and "--offline" in offline
    with pytest.raises(ValueError):
        build_site.export_command(Path("lab.py"), Path("site/lab.html"), False, "http://127.0.0.1:8000/pyodide/")


def test_every_lab_is_listed_on_the_index():
    labs = build_site.lab_files()
    page = build_site.index_page(labs)
    assert [p.name for p in labs] == sorted(p.name for p in (ROOT / "labs").glob("[0-9][0-9]_*.py"))
    for lab in labs:
        assert f'href="{lab.stem}.html"' in page and build_site.lab_title(lab).split(":")[0] in page
    assert "marimo run labs/" in page and "Download ledger" in page


@need_uv
def test_one_lab_exports_as_a_page_that_installs_the_wheel(one_lab_site):
    out, (page,) = one_lab_site
    assert page == out / "07_pipeline_visualizer.html"
    text = page.read_text()
    code = urllib.parse.unquote(re.search(r"<marimo-code[^>]*>(.*?)</marimo-code>", text, re.S).group(1))
    (wheel,) = (out / "public" / "wheels").glob("parallelism_labs-*.whl")
    assert f'"parallelism-labs @ ../public/wheels/{wheel.name}"' in code  # micropip installs our wheel before the first cell
    assert "from labs.core import" in code and "app_title=\"Lab 07" in code
    assert 'id="labs-browser-notice"' in text and "Download ledger" in text and "beforeunload" in text
    assert (out / "assets").is_dir() and (out / "index.html").read_text().count('href="07_pipeline_visualizer.html"') == 1


GUARDED = """() => { const e = new Event("beforeunload", {cancelable: true}); window.dispatchEvent(e); return e.defaultPrevented; }"""


@need_uv
@pytest.mark.browser
def test_the_built_site_opens_in_chromium(one_lab_site, need_chromium):
    """Served on 127.0.0.1: the index links the lab, the lab's page shows the banner and asks for
    Pyodide (from the CDN here, which this machine cannot reach, so the notebook itself cannot
    start), and its guard warns before a reload after a commit until the ledger is downloaded."""
    import functools
    import http.server
    import threading

    from browser import browser_page

    out, _ = one_lab_site
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with browser_page() as page:
            page.set_default_timeout(20_000)
            asked = []
            page.on("request", lambda r: asked.append(r.url))
            page.goto(f"http://127.0.0.1:{server.server_port}/index.html")
            page.get_by_role("link", name=build_site.lab_title(build_site.lab_files(["07"])[0])).click()
            page.locator("#labs-browser-notice").wait_for()
            assert "Download ledger" in page.locator("#labs-browser-notice").inner_text()
            page.wait_for_function("() => document.querySelectorAll('script[src*=assets], link[href*=assets]').length > 0")
            assert not page.evaluate(GUARDED)
            page.evaluate("() => { const b = document.createElement('button'); b.textContent = 'Commit my prediction'; b.id = 'c'; document.body.append(b); }")
            page.click("#c")
            assert page.evaluate(GUARDED)  # a commit not yet downloaded: the reload asks first
            page.evaluate("() => { const b = document.createElement('button'); b.textContent = 'Download ledger'; b.id = 'd'; document.body.append(b); }")
            page.click("#d")
            assert not page.evaluate(GUARDED)
            for _ in range(50):
                if any("pyodide" in u for u in asked):
                    break
                page.wait_for_timeout(200)
            assert any("pyodide" in u for u in asked)
    finally:
        server.shutdown()


class QuietHandler(__import__("http.server").server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

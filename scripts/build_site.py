"""The labs as a static site: `python scripts/build_site.py [--out site] [--labs 05 07 ...]`.

Every lab (`labs/NN_*.py`) is exported with `marimo export html-wasm --mode run` into one folder
(`site/NN_topic.html`, sharing `site/assets/`), beside an index page, so a class of any size can
use the labs with no server: each page runs the notebook in the student's browser under Pyodide.
The `labs` package goes with them as a local wheel (`site/public/wheels/`), which each page
installs with micropip before its first cell: the notebooks import `labs.core`, so the wheel is
this project's own (the package `labs`, schema and reference data inside), not the wheel marimo
would make of the notebook's folder. Its `marimo` requirement is left out: the page runs marimo.

In the browser the ledger lives in the page and leaves it only by the download button; each page
says so in a banner and warns on reload or close after a commit or submit that was not downloaded.

By default the pages load Pyodide and the packages that are not ours (numpy, pandas, plotly,
jsonschema, filelock) from marimo's default CDN and PyPI when a student opens them. With
`--offline --pyodide-index-url URL` (a mirror of the Pyodide distribution marimo pins, with its
package wheels) they are bundled into the site instead; see README, "For instructors".

Needs `uv` (marimo's html-wasm export calls it; `pip install -e ".[site]"`). Serve the folder
with any static server, e.g. `python -m http.server --directory site`. The local gallery of the
same labs, with a Python kernel: `marimo run labs/`.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import io
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LABS = ROOT / "labs"
DISTRIBUTION = "parallelism-labs"
NOTICE = ("This lab runs in your browser: nothing is sent to a server. Your design ledger lives in this page only and leaves it "
          "only by the <b>Download ledger</b> button; download it before you close or reload the page, and hand that file in.")
GUARD = r"""<script>
/* parallelism-labs: warn before a reload or close loses a commit or submit that was not downloaded */
(() => {
  let unsaved = false;
  const label = (event) => {
    const el = event.composedPath().find((n) => n && (n.tagName === "BUTTON" || n.tagName === "A"));
    return el ? el.textContent : "";
  };
  document.addEventListener("click", (event) => {
    const text = label(event);
    if (/Download ledger/.test(text)) unsaved = false;
    else if (/Commit my prediction|Skip|Submit/.test(text)) unsaved = true;
  }, true);
  window.addEventListener("beforeunload", (event) => { if (unsaved) { event.preventDefault(); event.returnValue = ""; } });
})();
</script>"""
BANNER = '<div id="labs-browser-notice" style="font:14px/1.4 sans-serif;background:#fdf3e0;border-bottom:1px solid #e0c080;padding:8px 16px">{}</div>'


def lab_files(only: list[str] | None = None) -> list[Path]:
    """labs/NN_*.py, or those whose number or name starts with one of `only`."""
    files = sorted(LABS.glob("[0-9][0-9]_*.py"))
    if only:
        files = [f for f in files if any(f.stem.startswith(o) for o in only)]
    return files


def lab_title(path: Path) -> str:
    match = re.search(r'app_title="([^"]+)"', path.read_text(encoding="utf-8"))
    return match.group(1) if match else path.stem


def require_uv() -> str:
    uv = shutil.which("uv")
    if uv is None:
        raise SystemExit('build_site needs uv (marimo export html-wasm calls it): pip install -e ".[site]" (or pip install uv)')
    return uv


def build_wheel(out: Path) -> Path:
    """The project's wheel (package `labs`, with the ledger schema and the reference data the
    setup.py hook copies in), its `marimo` requirement removed, written into `out`."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([require_uv(), "build", "--wheel", "--quiet", "-o", tmp, str(ROOT)], check=True, cwd=ROOT)
        (wheel,) = Path(tmp).glob("*.whl")
        out.mkdir(parents=True, exist_ok=True)
        target = out / wheel.name
        without_requirement(wheel, target, "marimo")
    return target


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def without_requirement(source: Path, target: Path, name: str) -> None:
    """Copy a wheel, dropping `Requires-Dist: <name>...` from its METADATA (and fixing RECORD)."""
    pattern = re.compile(rf"^Requires-Dist: {re.escape(name)}(?![A-Za-z0-9_.-])", re.I)
    with zipfile.ZipFile(source) as zin:
        entries = {info.filename: zin.read(info) for info in zin.infolist()}
    meta = next(n for n in entries if n.endswith(".dist-info/METADATA"))
    lines = entries[meta].decode("utf-8").splitlines(keepends=True)
    entries[meta] = "".join(line for line in lines if not pattern.match(line)).encode("utf-8")
    record = next(n for n in entries if n.endswith(".dist-info/RECORD"))
    rows = []
    for row in entries[record].decode("utf-8").splitlines():
        path = row.split(",", 1)[0]
        rows.append(f"{path},{_record_hash(entries[path])},{len(entries[path])}" if path == meta else row)
    entries[record] = ("\n".join(rows) + "\n").encode("utf-8")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zout:
        for filename, data in entries.items():
            zout.writestr(zipfile.ZipInfo(filename, date_time=(1980, 1, 1, 0, 0, 0)), data)
    target.write_bytes(buffer.getvalue())


def staged_notebook(lab: Path, stage: Path, wheel: Path) -> Path:
    """A copy of the lab with a PEP 723 header naming the wheel (marimo copies it into
    public/wheels and rewrites the reference for the page); the lab itself is not changed."""
    header = f'# /// script\n# requires-python = ">=3.11"\n# dependencies = [\n#     "{DISTRIBUTION} @ ./wheels/{wheel.name}",\n# ]\n# ///\n'
    copy = stage / lab.name
    copy.write_text(header + lab.read_text(encoding="utf-8"), encoding="utf-8")
    return copy


def export_command(notebook: Path, out_html: Path, offline: bool = False, pyodide_index_url: str | None = None, pypi_index_url: str | None = None) -> list[str]:
    """The marimo command line that exports one lab as a run-mode WASM page."""
    cmd = [sys.executable, "-m", "marimo", "export", "html-wasm", str(notebook), "-o", str(out_html), "--mode", "run", "--no-show-code", "-f"]
    if offline:
        cmd.append("--offline")
        if pyodide_index_url:
            cmd += ["--pyodide-index-url", pyodide_index_url]
        if pypi_index_url:
            cmd += ["--pypi-index-url", pypi_index_url]
    elif pyodide_index_url or pypi_index_url:
        raise ValueError("--pyodide-index-url and --pypi-index-url need --offline")
    return cmd


def with_notice(page: str) -> str:
    """The exported page with the browser-build banner and the reload guard."""
    page = page.replace("</head>", GUARD + "\n</head>", 1)
    return re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + BANNER.format(NOTICE), page, count=1)


def index_page(labs: list[Path]) -> str:
    rows = "\n".join(f'<li><a href="{html.escape(p.stem)}.html">{html.escape(lab_title(p))}</a></li>' for p in labs)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Parallelism Labs</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font:16px/1.5 sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}} li{{margin:.4rem 0}}</style></head>
<body>
<h1>Parallelism Labs</h1>
<p>How large models are trained on many GPUs: data parallelism and its communication wall, ZeRO/FSDP, tensor and
pipeline parallelism, collectives, a 3D layout for a real cluster, failures at scale. Each lab runs in your browser.</p>
<ul>
{rows}
</ul>
<p><b>Your work:</b> {NOTICE}</p>
<p>With Python installed, the same labs run locally with a kernel: <code>pip install .</code>, then
<code>marimo run labs/</code> (a gallery of every lab).</p>
</body></html>
"""


def build(out: Path, only: list[str] | None = None, offline: bool = False, pyodide_index_url: str | None = None, pypi_index_url: str | None = None) -> list[Path]:
    """Export the labs into `out` (replaced); returns the pages written."""
    labs = lab_files(only)
    if not labs:
        raise SystemExit(f"no lab matches {only}")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    pages = []
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        wheel = build_wheel(stage / "wheels")
        for lab in labs:
            page = out / f"{lab.stem}.html"
            subprocess.run(export_command(staged_notebook(lab, stage, wheel), page, offline, pyodide_index_url, pypi_index_url), check=True, cwd=stage)
            page.write_text(with_notice(page.read_text(encoding="utf-8")), encoding="utf-8")
            pages.append(page)
    (out / "index.html").write_text(index_page(labs), encoding="utf-8")
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "site"), help="folder to write (replaced); default site/")
    parser.add_argument("--labs", nargs="*", help="only these labs, by number or name prefix (e.g. 05 07)")
    parser.add_argument("--offline", action="store_true", help="bundle Pyodide and every package into the site (needs the two index URLs' hosts)")
    parser.add_argument("--pyodide-index-url", help="with --offline: a mirror of the Pyodide distribution marimo pins (its full/ folder)")
    parser.add_argument("--pypi-index-url", help="with --offline: a package index for what Pyodide does not ship")
    args = parser.parse_args(argv)
    pages = build(Path(args.out), args.labs, args.offline, args.pyodide_index_url, args.pypi_index_url)
    print(f"{len(pages)} labs and an index in {args.out}; serve it with: python -m http.server --directory {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

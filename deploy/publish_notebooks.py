"""The labs a class's students run: a root-owned copy of labs/NN_*.py that `marimo run` serves.

    python deploy/publish_notebooks.py /srv/labs-notebooks   # as root

deploy/jupyterhub_config.py does it at each start of the hub, deploy/k8s/Dockerfile when the
image is built.

marimo puts the notebooks' folder first on the kernel's sys.path, and takes the first .marimo.toml
from its working folder upwards: the folder it serves, and runs in, must be one no student can
write (audit N12). Each copy carries its lab's title for marimo's gallery.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

LABS = Path(__file__).resolve().parents[1] / "labs"


MARIMO_TOML = """# Written by deploy/publish_notebooks.py: the students' marimo run starts in this root-owned
# folder and reads this file, never a .marimo.toml or marimo.toml from a home.
"""


def gallery_header(source: str) -> str:
    """A notebook with its app_title as the gallery card's title. marimo's gallery (`marimo run`
    on a folder) titles a card from the notebook's PEP 723 [tool.marimo.opengraph] title, else
    from its file name ("11 Long Context Moe"), never from marimo.App(app_title=...); the served
    copy gets the header, the repository's notebooks do not (marimo warns about it on every run)."""
    found = re.search(r'^\s*app_title\s*=\s*"([^"\\]+)"', source, re.MULTILINE)
    if found is None or source.startswith("# /// script"):
        return source
    return f'# /// script\n# [tool.marimo.opengraph]\n# title = "{found.group(1)}"\n# ///\n{source}'


def publish_notebooks(target: Path, labs: Path = LABS) -> None:
    """The labs every student's `marimo run` serves: a copy of labs/NN_*.py owned by root, 0755
    and 0644, made afresh at each start (so an edit to the labs reaches the class at the next
    restart). marimo puts the notebooks' folder first on the kernel's sys.path, so it must be a
    folder no student can write: a student-owned copy would let a planted labs/__init__.py run
    in every kernel of that student, beside LABS_SIGNING_KEY (audit N12)."""
    if target.is_symlink():
        raise ValueError(f"HUB_NOTEBOOKS ({target}) is a symbolic link")
    target.mkdir(parents=True, exist_ok=True)
    os.chown(target, 0, 0)
    os.chmod(target, 0o755)
    wanted = {lab.name: gallery_header(lab.read_text(encoding="utf-8")).encode() for lab in sorted(labs.glob("[0-9][0-9]_*.py"))}
    # marimo (started here: deploy/singleuser) takes the first .marimo.toml from its working folder
    # upwards, so this one, not a student's ~/.marimo.toml, is its user configuration
    wanted[".marimo.toml"] = MARIMO_TOML.encode()
    for entry in target.iterdir():  # nothing else in it: no package, no .pth, no old lab
        if entry.name not in wanted:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    for name, text in wanted.items():
        staged = target / f".{name}.new"
        staged.unlink(missing_ok=True)
        staged.write_bytes(text)
        os.chown(staged, 0, 0)
        os.chmod(staged, 0o644)
        os.replace(staged, target / name)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python deploy/publish_notebooks.py TARGET_FOLDER")
    publish_notebooks(Path(sys.argv[1]))

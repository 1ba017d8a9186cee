"""Where the engine's reference data lives: `labs/core/engine/data/` inside an installed wheel (the build
copies tests/data/*.json there, as it copies the ledger schema), else the repository's
`tests/data/`. The browser build of the labs installs the wheel, so it has no repository."""

from __future__ import annotations

from pathlib import Path

PACKAGED = Path(__file__).resolve().parent / "data"
REPOSITORY = Path(__file__).resolve().parents[3] / "tests" / "data"
FILES = ("published_numbers.json", "zero_bubble.json", "nccl_busbw.json")  # what the engine and the labs read at run time


def data_dir() -> Path:
    return PACKAGED if (PACKAGED / FILES[0]).exists() else REPOSITORY

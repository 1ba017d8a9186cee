"""Write labs/core/scenarios/lab12_accumulation.py's ERRORS again from the engine:
`python scripts/write_lab12_accumulation.py` (after a change to precision.dot_product_errors or to
Lab 12's ACCUMULATION_* settings; tests/test_lab12_accumulation.py fails until you do). Floats are
written by repr: the same bits when read."""

from __future__ import annotations

from pathlib import Path

from labs.core.engine import precision
from labs.core.scenarios import lab12, lab12_accumulation


def computed() -> dict:
    """lab12_accumulation.ERRORS as the engine computes them now."""
    out = {}
    for k in lab12.ACCUMULATION_KS:
        errors = precision.dot_product_errors(lab12.ACCUMULATION_ROWS, k, lab12.ACCUMULATION_CASES)
        out.update({(k, *case): error for case, error in zip(lab12.ACCUMULATION_CASES, errors)})
    return out


if __name__ == "__main__":
    path = Path(lab12_accumulation.__file__)
    text = path.read_text()
    start = text.index("ERRORS = {\n")
    end = text.index("}\n", start) + 2
    table = "".join(f"    {key!r}: {error!r},\n" for key, error in computed().items()).replace("'", '"')
    path.write_text(text[:start] + "ERRORS = {\n" + table + "}\n" + text[end:])
    print(f"{len(lab12_accumulation.ERRORS)} errors -> {path}")

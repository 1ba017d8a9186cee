"""One module per lab: its stakeholder setting, its prediction options and the outcome functions
the lab shows and the grader recomputes from a ledger's recorded inputs (so a stored outcome or
"correct" flag is never trusted). OUTCOMES is the one registry the grader reads:
(lab, step) -> outcome function. The engine modules never import these."""

from labs.core.scenarios import lab05, lab06, lab07

OUTCOMES = {**lab05.OUTCOMES, **lab06.OUTCOMES, **lab07.OUTCOMES}

__all__ = ["OUTCOMES", "lab05", "lab06", "lab07"]

"""Trust: where each entry of a ledger comes from, and the one rule every output applies to it.

The grader's table (terminal, --csv, --strict), the grade book, the feedback pages and the
Canvas, Moodle and Gradescope exports all take credit and flags from trust() below, through
Ledger.item(): nothing else decides whether a signed, unsigned or edited answer counts.

Labels (labs.core.signing checks each signature; the ledger's context is added here):

    signed         the class server signed the entry and the signature holds
    self-reported  no signature, and none missing: a ledger with no signature at all (a laptop,
                   the static site, or every signature removed: the two cannot be told apart), or
                   an entry the server's last write listed as unsigned (written before it had a key)
    edited         a signature that does not match: changed after the server signed it
    stripped       no signature on an entry of a ledger the server signed before sequence numbers
                   (signing format v1), where nothing says the entry was ever unsigned
    rolled back    the ledger's entries are not those of the server's last signed write: an older
                   signed version replayed, a signed entry removed or added, a signature stripped
                   (signing's head check). Every item of that ledger carries it.
    ""             not checked: the grader was not given the class's key (LABS_SIGNING_KEY)

The rule (trust): with no key nothing is checked and every answer earns its credit, as on a
laptop class. With the key (a class whose server signs): edited, stripped and rolled back earn
nothing and are flagged, always, so removing a signature never does better than keeping it;
self-reported is flagged, and with --require-signatures earns nothing; signed earns its credit.
An item reads every entry its grade comes from: the question's committed prediction and the step
it was submitted with (the inputs the engine judged it at, and its answer when nothing was
committed). Ledgers signed before sequence numbers are "signed" entry by entry (no rollback check).

Times (Ledger.hand_in): a lab is handed in at the latest of its first commits and saved steps.
They are the server's clock when every one is signed. With --require-signatures a time that is
not signed is not counted, and the lab's flags say so.

    ledger = integrity.Ledger(doc, key, integrity.policy(key, require=True))
    ledger.item("05_parallelism", question="cause", step="act1")   # Trust(label, credit, flag)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

SIGNED, EDITED, SELF = "signed", "edited", "self-reported"
STRIPPED, ROLLED_BACK = "stripped", "rolled back"
CHECKED, REQUIRED = "checked", "required"  # policies: the grader's `signatures` column ("" unchecked)
SERVER_CLOCK, STUDENT_CLOCK = "server (signed)", "student's clock"

_WORST_FIRST = (EDITED, STRIPPED, ROLLED_BACK, SELF, SIGNED)
_NO_CREDIT = {
    EDITED: "edited after the server signed it: not trusted, 0 points",
    STRIPPED: "signature missing from an entry of a signed ledger: not trusted, 0 points",
    ROLLED_BACK: "ledger rolled back (an older signed version replayed, or a signed entry removed, added or stripped): not trusted, 0 points",
}


@dataclass(frozen=True)
class Trust:
    label: str  # the worst label of the entries read (above), "" when not checked
    credit: bool  # whether the answer may earn its points
    flag: str  # why it is flagged, "" when it is not


def key_from_env() -> bytes | None:
    """The instructor's signing key (LABS_SIGNING_KEY), or None: nothing can be verified."""
    try:
        from labs.core import signing
    except ImportError:
        return None
    return signing.signing_key()


def policy(key: bytes | None, require: bool = False) -> str:
    """"" (no key: not checked), CHECKED, or REQUIRED (--require-signatures). ValueError when
    signatures are required and there is no key to check them with."""
    if key is None:
        if require:
            raise ValueError("--require-signatures needs the class's signing key: set LABS_SIGNING_KEY as on the class server")
        return ""
    return REQUIRED if require else CHECKED


def trust(labels: Iterable[str], rule: str) -> Trust:
    """The trust rule: credit and flag of an item from the labels of the entries it reads, under
    the policy `rule` ("", CHECKED or REQUIRED)."""
    return _trust_of(frozenset(labels), rule)


@lru_cache(maxsize=256)  # a class asks it ~100,000 times (every question of every row) of a few dozen label sets
def _trust_of(present: frozenset, rule: str) -> Trust:
    if not rule or not present:
        return Trust("", True, "")
    label = next(name for name in _WORST_FIRST if name in present)
    if label in _NO_CREDIT:
        return Trust(label, False, _NO_CREDIT[label])
    if label == SELF:
        if rule == REQUIRED:
            return Trust(label, False, "not signed, and signatures are required (--require-signatures): 0 points")
        return Trust(label, True, "not signed, in a class whose server signs every entry (a laptop's ledger, or its signatures removed)")
    return Trust(label, True, "")


def labels(doc: dict, key: bytes | None) -> dict[tuple[str, str, str], str]:
    """(lab, "step" or "question", name) -> label of every entry, the ledger's context included
    (stripped); {} without a key. Rolled back is the ledger's, in Ledger.sequence."""
    return Ledger(doc, key, policy(key)).labels


class Ledger:
    """One ledger's trust: each entry's label and the ledger's sequence state, checked once.
    `digest`: the digest of the bytes `doc` was parsed from (grader.read_ledger_digest); with it,
    a ledger this process checked before with the same key is not checked again (the grade book
    reads each ledger the grader checked)."""

    def __init__(self, doc: dict, key: bytes | None, rule: str, digest: bytes | None = None):
        self.doc, self.rule = doc, rule
        self.labels: dict[tuple[str, str, str], str] = {}
        self.sequence = ""
        if key is None:
            return
        from labs.core import signing

        checked = _checked(doc, key, digest)
        self.sequence = checked.sequence
        legacy_signed = checked.signed_any and checked.sequence == signing.NO_SEQUENCE
        for kind, (lab, name, label) in zip(checked.kinds, checked.rows):
            if label == SELF and legacy_signed:
                label = STRIPPED
            self.labels[(lab, "step" if kind == "step" else "question", name)] = label

    def item(self, lab: str, question: str | None = None, step: str | None = None) -> Trust:
        """The trust of an item graded from `question`'s commit and/or `step` (either may be
        missing from the ledger: only the entries present are read)."""
        read = [self.labels[k] for k in ((lab, "question", question), (lab, "step", step)) if k[2] is not None and k in self.labels]
        if read and self.sequence == ROLLED_BACK:
            read.append(ROLLED_BACK)
        return trust(read, self.rule)

    def hand_in(self, lab: str):
        """(latest time or None, where the times come from, a note or "") of a lab: its first
        commits and saved steps; under REQUIRED only signed times count."""
        from labs.gradebook.due import parse_time

        entries = [("question", q, r.get("committed")) for q, r in self.doc.get("predictions", {}).get(lab, {}).items()]
        entries += [("step", s, e.get("saved")) for s, e in self.doc.get("labs", {}).get(lab, {}).items()]
        times, notes, unsigned = [], [], 0
        for kind, name, value in entries:
            signed = self.labels.get((lab, kind, name)) == SIGNED
            if self.rule == REQUIRED and not signed:
                unsigned += 1
                continue
            try:
                times.append(parse_time(value, f"{lab} {name}"))
            except ValueError as err:
                notes.append(f"unreadable time ({err}); not counted late")
        counted = [self.labels.get((lab, kind, name)) for kind, name, _ in entries]
        all_signed = bool(entries) and all(label == SIGNED for label in counted)
        if unsigned:
            notes.append(f"{unsigned} time(s) not signed by the server, not counted (--require-signatures)")
        source = SERVER_CLOCK if all_signed or (self.rule == REQUIRED and times) else STUDENT_CLOCK
        return (max(times) if times else None), source, "; ".join(notes)


# (key, digest of a ledger's bytes) -> its check's labels in signing.entries' order, its sequence
# state and whether it carries any signature: the same bytes parse to the same entries, so a ledger
# read again in this process (the book after the grader: 1,000 checks, ~1.3 s of CPU) is not checked
# again. Never written anywhere: each run checks every ledger once.
_CHECKED: dict[tuple[bytes, bytes], tuple] = {}
CHECKED_KEPT = 4096  # ~1 KB each


def _checked(doc: dict, key, digest: bytes | None):
    from labs.core import signing

    if digest is None:
        return signing.check_document(doc, key)
    memo = (signing.signing_key(key), digest)
    found = _CHECKED.get(memo)
    if found is None:
        checked = signing.check_document(doc, key)
        if len(_CHECKED) >= CHECKED_KEPT:
            _CHECKED.clear()
        _CHECKED[memo] = (tuple(label for _, _, label in checked.rows), checked.sequence, checked.signed_any)
        return checked
    labels, sequence, signed_any = found
    rows, kinds = [], []
    for (kind, lab, name, _), label in zip(signing.entries(doc), labels, strict=True):
        rows.append((lab, name, label))
        kinds.append(kind)
    return signing.Checked(rows, kinds, sequence, signed_any)

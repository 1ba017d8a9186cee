"""Server signatures on ledger entries: what a class server vouches for, and what the grader checks.

On a class server (JupyterHub, or one shared `marimo run`) the instructor sets LABS_SIGNING_KEY in
the server's environment (never in the repo; at least 16 characters). Each committed prediction
and each saved step then carries a `signature`: an HMAC-SHA256 over the canonical JSON of the
entry together with whose it is and where it sits (student, lab, step or question) and the
student's variant, so a signed entry cannot be edited, nor moved to another student, lab or
question, without the signature failing. The grader labels every entry:

    signed         the signature matches: the server recorded this entry as it stands
    self-reported  no signature (a student's own machine, the static site, a server without a key)
    edited         a signature that does not match: the entry was changed after the server signed it

Sequence (format v2). Each signature also carries the ledger's sequence number at that write
(1 + the highest already in the ledger), under the HMAC, and a second HMAC, the ledger's head:
every entry of the ledger at that moment with its sequence number (null for an entry written
unsigned, before the server had a key). The grader checks the head of the newest entry against
the ledger as handed in (check_document): an entry replaced by an older signed version of itself,
a signed entry removed, a signature stripped or an entry added since the server's last write all
break it ("rolled back"). Ledgers signed before sequence numbers (format v1, `hmac-sha256:v1:`)
still verify entry by entry; their ledger state is "no sequence": a replay among those entries
cannot be seen. Nor can a whole ledger handed in as it stood at an earlier write: it is what the
server wrote then (grade from the server's ledger folder to see its latest state).

    from labs.core import signing
    signing.verify_document(doc, key)   # [("05_parallelism", "cause", "signed"), ...]
    signing.check_document(doc, key)    # the same rows, and the ledger's sequence state

What it does not prove: that the student did the work alone, or anything about an entry written
where the key was not set. Anyone who can read the key (the instructor, root, or code running as
the server) can sign anything: on the hub students get no terminal, kernel or file writes, so
they cannot read it.
"""

from __future__ import annotations

import hmac
import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from json.encoder import encode_basestring

import msgspec

ENV = "LABS_SIGNING_KEY"
MIN_KEY_CHARS = 16
SCHEME = "hmac-sha256:"  # every signature this module writes starts so
V1, V2 = SCHEME + "v1:", SCHEME + "v2:"
SIGNED, SELF_REPORTED, EDITED = "signed", "self-reported", "edited"
IN_SEQUENCE, NO_SEQUENCE, ROLLED_BACK = "in sequence", "no sequence", "rolled back"
_V1 = re.compile(r"hmac-sha256:v1:([0-9a-f]{64})")
_V2 = re.compile(r"hmac-sha256:v2:([1-9][0-9]{0,11}):([0-9a-f]{64}):([0-9a-f]{64})")


def signing_key(value: str | bytes | None = None) -> bytes | None:
    """The key as bytes: `value`, else LABS_SIGNING_KEY, else None (nothing is signed).
    A key shorter than MIN_KEY_CHARS is refused by name."""
    raw = value if value is not None else os.environ.get(ENV, "")
    if isinstance(raw, str):
        raw = raw.strip().encode("utf-8")
    if not raw:
        return None
    if len(raw) < MIN_KEY_CHARS:
        raise ValueError(f"{ENV} must be at least {MIN_KEY_CHARS} characters (it has {len(raw)}); generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'")
    return raw


def _secret(key) -> bytes:
    secret = signing_key(key)
    if secret is None:
        raise ValueError(f"{ENV} is not set: nothing can be signed")
    return secret


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)  # json.dumps' own, made once


def canonical(value) -> bytes:
    """The one byte string an entry signs as: sorted keys, no spaces, UTF-8."""
    return _CANONICAL.encode(value).encode("utf-8")


_SORTED_COMPACT = msgspec.json.Encoder(order="sorted").encode
# canonical()'s bytes for the values of a parsed ledger in a seventh of the time (a class's grading reads 117,000),
# except a float under 1e-4 or from 1e16 up: msgspec writes 9.765625e-6 and 0.00001 where json writes 9.765625e-06
# and 1e-05 (1,000 of those 117,000), and it writes NaN as null where canonical() refuses it (no parsed ledger holds one).
_READINGS = (_SORTED_COMPACT, canonical)  # how a check reads the signed bytes: canonical()'s, the fast way first


def _hex(secret: bytes, value) -> str:
    return _mac(secret, canonical(value))


def _mac(secret: bytes, signed: bytes) -> str:
    return hmac.digest(secret, signed, "sha256").hex()  # hmac.new(...).hexdigest()'s bytes, in one call to OpenSSL


def _variant(document: dict, lab: str):
    """The student's variant wherever the ledger keeps it: the document, or per lab."""
    variants = document.get("variants")
    return {"document": document.get("variant"), "lab": variants.get(lab) if isinstance(variants, dict) else None}


def sign(entry, key: str | bytes | None = None) -> str:
    """The signature of any JSON value (format v1, no sequence). Raises ValueError when no key is
    given and LABS_SIGNING_KEY is unset."""
    return V1 + _hex(_secret(key), entry)


def sign_entry(document: dict, lab: str, kind: str, name: str, entry: dict, key: str | bytes | None = None) -> str:
    """A v1 signature (no sequence number): what servers wrote before sequences; kept for tests
    and tools that sign one entry alone. A class server signs with seal_entry."""
    signed = _signed_bytes(document, lab, kind, name, entry, None)
    return V1 + _mac(_secret(key), signed)


def entries(document: dict):
    """(kind, lab, name, entry) of every saved step, then every committed prediction."""
    for kind, section in (("step", "labs"), ("prediction", "predictions")):
        labs = document.get(section)
        if not isinstance(labs, dict):
            continue
        for lab, named in labs.items():
            if isinstance(named, dict):
                for name, entry in named.items():
                    yield kind, lab, name, entry


def _parse(signature) -> tuple[int | None, str, str | None] | None:
    """(sequence, entry HMAC, head HMAC) of a v2 signature, (None, HMAC, None) of a v1 one, None
    for anything else (upper-case hex included: not what the server wrote)."""
    if not isinstance(signature, str):
        return None
    return _parse_text(signature)


@lru_cache(maxsize=4096)  # a ledger's check reads each signature three times (its label, the places, the head)
def _parse_text(signature: str) -> tuple[int | None, str, str | None] | None:
    v2 = _V2.fullmatch(signature)
    if v2:
        return int(v2.group(1)), v2.group(2), v2.group(3)
    v1 = _V1.fullmatch(signature)
    return (None, v1.group(1), None) if v1 else None


def _sequence_of(entry):
    """An entry's place in the ledger's head: its sequence number, 0 for a v1 signature, None
    when unsigned, "unreadable" for a signature that is neither."""
    signature = entry.get("signature") if isinstance(entry, dict) else None
    if signature is None:
        return None
    parsed = _parse(signature)
    return "unreadable" if parsed is None else (parsed[0] or 0)


def _head(document: dict, sequence: int, places: dict) -> dict:
    listed = [[kind, lab, name, places[(kind, lab, name)]] for kind, lab, name in sorted(places)]
    return {"head": sequence, "student": document.get("student"), "entries": listed}


def _places(document: dict) -> dict:
    return {(kind, lab, name): _sequence_of(entry) for kind, lab, name, entry in entries(document)}


def seal_entry(document: dict, lab: str, kind: str, name: str, entry: dict, key: str | bytes | None = None) -> str:
    """The v2 signature a class server writes on `entry`, about to be placed at (kind, lab, name)
    of `document` (replacing what is there): the next sequence number of the ledger, the entry's
    HMAC with that number, and the head of the ledger as it will stand."""
    secret = _secret(key)
    places = _places(document)  # the entry's own earlier version counts: a re-signed entry moves up
    sequence = 1 + max((v for v in places.values() if isinstance(v, int)), default=0)
    places[(kind, lab, name)] = sequence
    signed = _signed_bytes(document, lab, kind, name, entry, sequence)
    return f"{V2}{sequence}:{_mac(secret, signed)}:{_hex(secret, _head(document, sequence, places))}"


def _signed_bytes(document: dict, lab: str, kind: str, name: str, entry: dict, sequence: int | None, parts: dict | None = None,
                  encode=canonical) -> bytes:
    """What a signature covers, as its HMAC reads it: the entry (without its signature) and its
    place in the ledger, canonical() of {"entry", "kind", "lab", "name", "seq" (a v2 signature's
    sequence), "student", "variant" (_variant)}. Written from its parts in canonical()'s sorted
    order; `parts` keeps a ledger's repeated ones (each lab's variant, most of a payload's bytes,
    and each kind and lab's text) for its other entries, made with the same `encode`."""
    if kind not in ("step", "prediction"):
        raise ValueError(f"kind must be 'step' or 'prediction', got {kind!r}")
    parts = {} if parts is None else parts
    if lab not in parts:
        parts[lab] = f',"student":{_text(document.get("student"))},"variant":'.encode() + encode(_variant(document, lab)) + b"}"
    if (kind, lab) not in parts:
        parts[kind, lab] = f',"kind":{_text(kind)},"lab":{_text(lab)},"name":'
    body = encode({k: v for k, v in entry.items() if k != "signature"})
    seq = "" if sequence is None else f',"seq":{int(sequence)}'
    return b"".join((b'{"entry":', body, f"{parts[kind, lab]}{_text(name)}{seq}".encode(), parts[lab]))


def _text(value) -> str:
    """canonical(value) as text; a string without json.dumps' per-call cost (its own encoder function)."""
    return encode_basestring(value) if type(value) is str else canonical(value).decode("utf-8")


def label(document: dict, lab: str, kind: str, name: str, entry, key: str | bytes, parts: dict | None = None) -> str:
    signature = entry.get("signature") if isinstance(entry, dict) else None
    if signature is None:
        return SELF_REPORTED
    parsed = _parse(signature)
    return EDITED if parsed is None else _verified(document, lab, kind, name, entry, parsed, signing_key(key), parts)


def _verified(document: dict, lab: str, kind: str, name: str, entry: dict, parsed: tuple, secret: bytes | hmac.HMAC, parts: dict | None) -> str:
    """SIGNED or EDITED: whether an entry's parsed signature (_parse) is its HMAC under `secret`
    (the key, or an HMAC-SHA256 keyed with it and given nothing yet: _keyed)."""
    parts = {} if parts is None else parts
    for encode in _READINGS:
        try:
            signed = _signed_bytes(document, lab, kind, name, entry, parsed[0], parts.setdefault(encode, {}), encode)
        except (TypeError, ValueError):  # not a place or a value as signed: it was not what was signed
            continue
        mac = _mac(secret, signed) if isinstance(secret, bytes) else _keyed_mac(secret, signed)
        if hmac.compare_digest(mac, parsed[1]):
            return SIGNED
    return EDITED


def _keyed_mac(keyed: hmac.HMAC, signed: bytes) -> str:
    """_mac's hex digest from an HMAC keyed once (hmac.digest pads and hashes the key on every call)."""
    h = keyed.copy()
    h.update(signed)
    return h.hexdigest()


@dataclass(frozen=True)
class Checked:
    rows: list  # (lab, step_or_question, label), steps first, as verify_document
    kinds: list  # "step" or "prediction" for each row
    sequence: str  # IN_SEQUENCE, NO_SEQUENCE (no v2 signature verifies) or ROLLED_BACK
    signed_any: bool  # whether any entry carries a signature at all (valid or not)


def check_document(document: dict, key: str | bytes) -> Checked:
    """Every entry's label and the ledger's sequence state. ValueError when `key` is empty.

    One pass over the entries (a class's grading checks ~100,000): each signature parsed once, its
    label as label() gives it, its place in the head (_places' value) noted and the newest verified
    v2 write's head kept; then that head is checked against the ledger as it stands."""
    secret = signing_key(key)
    if secret is None:
        raise ValueError(f"check_document needs the class's key ({ENV})")
    rows, kinds, places, parts = [], [], {}, {}
    signed_any, top, heads, keyed = False, 0, [], hmac.new(secret, digestmod="sha256")
    for kind, lab, name, entry in entries(document):
        signature = entry.get("signature") if isinstance(entry, dict) else None
        if signature is None:
            got = place = None
        else:
            signed_any = True
            parsed = _parse_text.__wrapped__(signature) if isinstance(signature, str) else None  # each read once here: no cache
            if parsed is None:
                got, place = EDITED, "unreadable"
            else:
                sequence, place = parsed[0], parsed[0] or 0
                got = _verified(document, lab, kind, name, entry, parsed, keyed, parts)
                if got == SIGNED and sequence is not None:
                    if sequence > top:
                        top, heads = sequence, [parsed[2]]
                    elif sequence == top:
                        heads.append(parsed[2])
        rows.append((lab, name, SELF_REPORTED if got is None else got))
        kinds.append(kind)
        places[(kind, lab, name)] = place
    return Checked(rows, kinds, _sequence(document, secret, top, heads, places), signed_any)


def _sequence(document: dict, secret: bytes, top: int, heads: list, places: dict) -> str:
    """The ledger's state: the newest verified v2 entry's head (`heads`: those of the verified
    entries at the highest sequence number `top`, 0 when none) against the ledger as it stands."""
    if not top:
        return NO_SEQUENCE
    if len(heads) != 1:  # two entries claim the same write: one was copied in
        return ROLLED_BACK
    head = _head(document, top, places)
    for encode in _READINGS:
        if hmac.compare_digest(_mac(secret, encode(head)), heads[0]):
            return IN_SEQUENCE
    return ROLLED_BACK


def verify_document(document: dict, key: str | bytes) -> list[tuple[str, str, str]]:
    """(lab, step_or_question, label) for every saved step, then every committed prediction,
    each labelled "signed", "self-reported" or "edited". ValueError when `key` is empty."""
    if signing_key(key) is None:
        raise ValueError(f"verify_document needs the class's key ({ENV})")
    return check_document(document, key).rows

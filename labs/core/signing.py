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

    from labs.core import signing
    signing.verify_document(doc, key)   # [("05_parallelism", "cause", "signed"), ...]

What it does not prove: that the student did the work alone, or anything about an entry written
where the key was not set. Anyone who can read the key (the instructor, root, or code running as
the server) can sign anything: on the hub students get no terminal, kernel or file writes, so
they cannot read it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os

ENV = "LABS_SIGNING_KEY"
MIN_KEY_CHARS = 16
SCHEME = "hmac-sha256:v1:"
SIGNED, SELF_REPORTED, EDITED = "signed", "self-reported", "edited"


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


def canonical(value) -> bytes:
    """The one byte string an entry signs as: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def _variant(document: dict, lab: str):
    """The student's variant wherever the ledger keeps it: the document, or per lab."""
    variants = document.get("variants")
    return {"document": document.get("variant"), "lab": variants.get(lab) if isinstance(variants, dict) else None}


def payload(document: dict, lab: str, kind: str, name: str, entry: dict) -> dict:
    """What a signature covers: the entry (without its signature) and its place in the ledger."""
    if kind not in ("step", "prediction"):
        raise ValueError(f"kind must be 'step' or 'prediction', got {kind!r}")
    body = {k: v for k, v in entry.items() if k != "signature"}
    return {"student": document.get("student"), "lab": lab, "kind": kind, "name": name, "variant": _variant(document, lab), "entry": body}


def sign(entry, key: str | bytes | None = None) -> str:
    """The signature of any JSON value (for a ledger entry, sign its payload()). Raises
    ValueError when no key is given and LABS_SIGNING_KEY is unset."""
    secret = signing_key(key)
    if secret is None:
        raise ValueError(f"{ENV} is not set: nothing can be signed")
    return SCHEME + hmac.new(secret, canonical(entry), hashlib.sha256).hexdigest()


def sign_entry(document: dict, lab: str, kind: str, name: str, entry: dict, key: str | bytes | None = None) -> str:
    return sign(payload(document, lab, kind, name, entry), key)


def label(document: dict, lab: str, kind: str, name: str, entry, key: str | bytes) -> str:
    signature = entry.get("signature") if isinstance(entry, dict) else None
    if signature is None:
        return SELF_REPORTED
    if not isinstance(signature, str):
        return EDITED
    try:
        expected = sign_entry(document, lab, kind, name, entry, key)
    except (TypeError, ValueError):  # not JSON-serialisable as signed: it was not what was signed
        return EDITED
    return SIGNED if hmac.compare_digest(expected, signature) else EDITED


def verify_document(document: dict, key: str | bytes) -> list[tuple[str, str, str]]:
    """(lab, step_or_question, label) for every saved step, then every committed prediction,
    each labelled "signed", "self-reported" or "edited". ValueError when `key` is empty."""
    if signing_key(key) is None:
        raise ValueError(f"verify_document needs the class's key ({ENV})")
    rows = []
    for kind, section in (("step", "labs"), ("prediction", "predictions")):
        labs = document.get(section)
        if not isinstance(labs, dict):
            continue
        for lab, entries in labs.items():
            if not isinstance(entries, dict):
                continue
            for name, entry in entries.items():
                rows.append((lab, name, label(document, lab, kind, name, entry, key)))
    return rows

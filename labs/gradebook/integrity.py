"""Where each entry of a ledger comes from: "signed" (the class server signed it and the signature
holds), "edited" (signed, but changed since: flagged, not trusted) or "self-reported" (written on
the student's own machine or the static site: its times are the student's clock). The check is
labs.core.signing's; without that module or its key every entry is self-reported."""

from __future__ import annotations

SIGNED, EDITED, SELF = "signed", "edited", "self-reported"


def key_from_env() -> bytes | None:
    """The instructor's signing key (LABS_SIGNING_KEY), or None: nothing can be verified."""
    try:
        from labs.core import signing
    except ImportError:
        return None
    return signing.signing_key()


def labels(doc: dict, key: bytes | None) -> dict[tuple[str, str, str], str]:
    """(lab, "step" or "question", name) -> label for every entry; {} without a key. (A step and a
    question may share a name, as Lab 10's `cadence` does: verify_document lists steps first.)"""
    if key is None:
        return {}
    from labs.core import signing

    rows = signing.verify_document(doc, key)
    steps = sum(len(v) for v in doc.get("labs", {}).values() if isinstance(v, dict))
    return {(lab, "step" if i < steps else "question", name): label for i, (lab, name, label) in enumerate(rows)}

"""`python -m labs.variants LAB STUDENT`: a student's variant of a lab, as JSON (settings,
options, keys). The machinery is labs.core.variants; the registry and the drawing are
labs.core.scenarios (`variant`, `regenerate`, `registry`).

    python -m labs.variants 07 ada --salt S [--edition N]     # the variant as JSON: settings, options, keys
    python -m labs.variants 07 ada --no-salt                   # the unsalted variant (a class with a salt never uses it)
"""

from __future__ import annotations

import argparse
import json
import sys

from labs.core.scenarios import lab_name, regenerate, registry, settings_for, variant  # noqa: F401 (re-exported)
from labs.core.variants import (  # noqa: F401 (re-exported: labs written against labs.variants keep working)
    LETTERS, SALT_ENV, SCHEME, Choice, Draw, LabVariants, Numeric, Question, Variant, class_salt, judged, parse_number,
    recorded_version, salt_fingerprint, seed_of,
)


def main(argv: list[str] | None = None) -> int:
    """Print a variant, keys included, only for a salt given (--salt or LABS_CLASS_SALT): a class's
    variants are drawn with its salt, so without it this would print a variant no student of a
    salted class sees. --no-salt prints the unsalted one (a lab run with no salt), saying so."""
    parser = argparse.ArgumentParser(prog="python -m labs.variants", description="Print a student's variant of a lab as JSON, keys included: only with the class salt given.")
    parser.add_argument("lab", help="the lab's name or number, e.g. 07")
    parser.add_argument("student", help="the student's id, as typed in the lab")
    given = parser.add_mutually_exclusive_group()
    given.add_argument("--salt", help=f"the class salt the labs run with (default: ${SALT_ENV})")
    given.add_argument("--no-salt", action="store_true", help="print the unsalted variant: what a lab run without a salt draws, never a salted class's")
    parser.add_argument("--edition", type=int, help="an earlier edition of the lab's variants, as an old ledger records it (default: the current one)")
    args = parser.parse_args(argv)
    salt = "" if args.no_salt else class_salt(args.salt)
    if not salt and not args.no_salt:
        print(f"error: no class salt: give --salt S or set {SALT_ENV} to the salt the labs run with (a class hub requires one); "
              "--no-salt prints the unsalted variant, which a class with a salt never uses", file=sys.stderr)
        return 2
    try:
        v = variant(args.lab, args.student, salt, args.edition)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.no_salt:
        print(f"NOTE: the UNSALTED variant of {v.lab} for {v.student!r} (salt fingerprint {v.salt}): what a lab run without "
              f"{SALT_ENV} draws; a class with a salt (every class hub) draws another", file=sys.stderr)
    print(json.dumps(v.as_json(), indent=2, sort_keys=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

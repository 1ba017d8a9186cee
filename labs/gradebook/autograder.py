"""Gradescope's entry point, `python3 -m labs.gradebook.autograder autograder /autograder`: the
zip's config into the environment, then the grader's command line (labs.grade) on the submission.
It sets the zip's salt and key as LABS_CLASS_SALT and LABS_SIGNING_KEY (where the grader, the
grade book and the variants read them), and a results.json is written whatever goes wrong, with
the reason and a score of 0. On top of both the grader and the grade book's options, so that
neither imports the other."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from labs.grade import main
from labs.gradebook import exports


def autograder(root: str | Path) -> int:
    """Gradescope's run: the zip's config into the environment, then `python -m labs.grade` on the
    submission. Anything that stops it still leaves a results.json saying why (score 0)."""
    root = Path(root)
    results = root / "results" / "results.json"
    source = Path(__file__).resolve().parents[2]
    visibility = "after_due_date"
    try:
        config = exports.read_config(source / exports.CONFIG)
        visibility = config["visibility"]
        for name, value in config["env"].items():
            if value:
                os.environ[name] = value
        options = config["args"]
        argv = [str(root / "submission"), "--gradescope-results", str(results), "--gradescope-metadata", str(root / "submission_metadata.json"),
                "--gradescope-visibility", visibility, *[str(source / a) if i and options[i - 1] in exports.CONFIG_FILES else a for i, a in enumerate(options)]]
        status = main(argv)
        if not results.exists():
            raise RuntimeError(f"the grader stopped (exit {status}) before writing results.json")
        return 0
    except Exception as err:  # noqa: BLE001 - Gradescope shows nothing without a results.json
        results.parent.mkdir(parents=True, exist_ok=True)
        results.write_text(json.dumps(exports.refusal(f"The autograder could not grade this submission ({type(err).__name__}: {err}). "
                                                      "Tell your instructor.", visibility), indent=1), encoding="utf-8")
        print(f"autograder: {type(err).__name__}: {err}", file=sys.stderr)
        return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "autograder":
        raise SystemExit("usage: python3 -m labs.gradebook.autograder autograder /autograder")
    raise SystemExit(autograder(sys.argv[2]))

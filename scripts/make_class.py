"""A synthetic class for the instructor's dashboard: `python scripts/make_class.py OUT [--students 200]`.

Each student's ledger is written through the labs' own ledger code (`labs.core.state.DesignLedger`:
`commit_prediction`, then `save_step` with the outcomes the lab would show), with answers drawn
from each lab's real prediction options and inputs drawn from the settings its sliders offer.
A student has a hidden skill that sets how often they pick the engine's answer; some skip a
question, some change an answer after the reveal (recorded as a change), some never open a lab.
Beside them: a roster (`roster.csv`, with students who never handed anything in) and a few
hostile files, each named `zz-*.json`: a tampered outcome, one id in two files, a file named for
another id, truncated JSON, a newer schema, an input of the wrong type.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

from labs.core import state
from labs.core.scenarios import OUTCOMES, QUESTION_OPTIONS, lab05, lab06, lab07, lab08, lab09, lab10
from labs.core.state import DesignLedger

STUDENTS = 200
NEVER_SUBMITTED = 5  # roster names with no ledger
HOSTILE = ("zz-tampered.json", "zz-duplicate-id.json", "zz-named-for-another.json", "zz-truncated.json", "zz-future-schema.json", "zz-text-number.json")


def answer_key() -> dict[tuple[str, str], str | None]:
    """The engine's answer to every prediction question (what the grader judges against)."""
    return {
        ("05_parallelism", "cause"): lab05.act1_correct_option(), ("05_parallelism", "design"): lab05.act2_best_option(),
        ("06_zero_sweep", "fit"): lab06.fit_answer(), ("06_zero_sweep", "zero2"): lab06.zero2_answer(),
        ("07_pipeline_visualizer", "utilisation"): lab07.utilisation_answer(), ("07_pipeline_visualizer", "microbatches"): lab07.microbatch_answer(),
        (lab08.LAB, "ring"): lab08.ring_answer(), (lab08.LAB, "bucket"): lab08.bucket_answer(),
        (lab09.LAB, "dp64"): lab09.dp64_answer(),
        (lab10.LAB, "mtbf"): lab10.mtbf_answer(), (lab10.LAB, "cadence"): lab10.cadence_answer(),
    }


# ---- the settings each lab's controls offer ------------------------------------------------
# A class moves the control a question is about and mostly leaves the others at the lab's default.
def _mostly(rng, default, others, p: float = 0.85):
    return default if rng.random() < p else rng.choice(others)


def _act1(rng):
    return dict(gpus=rng.choice([8, 64, 512]), global_batch=512, fixed_per_gpu=False, fabric=_mostly(rng, "ib-ndr", ["roce-400", "ib-hdr"]),
                algorithm=_mostly(rng, "ring", ["tree", "nvls"], 0.7), overlap=_mostly(rng, False, [True], 0.7), params_b=7,
                grad_reduce_dtype=_mostly(rng, "fp32", ["bf16"], 0.7))


def _act2(rng):
    tp, pp = rng.choice([(8, 8), (8, 8), (8, 8), (8, 4), (4, 8), (8, 16), (16, 8), (1, 32), (8, 32), (4, 4)])
    return dict(tp=tp, pp=pp, dp=1024 // (tp * pp), micro_batch=_mostly(rng, 1, [2, 4]), global_batch=lab05.DESIGN_GLOBAL_BATCH, zero_stage=_mostly(rng, 1, [0, 2]),
                recompute=_mostly(rng, "selective", ["full", "none"]), sequence_parallel=tp > 1, tp_comm_overlap=tp > 1,
                schedule="1f1b", virtual_stages=1, flash_attention=True)


def _sweep(rng):
    return dict(model="llama2-70b", gpu="h100-sxm", optimizer_state="fp32", micro_batch=1, seq_len=4096, recompute="full", flash_attention=True,
                offload=False, dp=rng.choice([8, 16, 32, 64]), zero_stage=rng.choice([0, 1, 2, 3, 3]), microbatches=_mostly(rng, 1, [4]))


def _pipeline(rng):
    return dict(p=rng.choice([2, 4, 8]), m=rng.choice([4, 8, 16, 32]), schedule=rng.choice(["gpipe", "1f1b", "1f1b", "zb-h1"]), v=1, tf=1.0, tb=1.0, tw=1.0)


def _ring(rng):
    n = rng.choice(lab08.STEPPER_RANKS)
    return dict(n=n, nbytes=_mostly(rng, lab08.STEPPER_SIZES[lab08.STEPPER_DEFAULT_SIZE], list(lab08.STEPPER_SIZES.values()), 0.6),
                link=_mostly(rng, lab08.STEPPER_LINKS[0], list(lab08.STEPPER_LINKS), 0.7), step=rng.choice([0, 2 * (n - 1)]))


def _worksheet(rng):
    return dict(scenario=rng.choice(list(lab09.JOBS)), tp=rng.choice([1, 2, 4, 8, 8, 8]), pp=rng.choice([1, 1, 2, 4, 8]), zero_stage=_mostly(rng, 1, [0, 3], 0.7),
                micro_batch=_mostly(rng, 1, [2]), rank_order=_mostly(rng, lab09.RANK_ORDERS[0], list(lab09.RANK_ORDERS[1:])), reason_tp="inside a node, on NVLink")


def _cadence(rng):
    return dict(model=lab10.RUN_MODEL, gpus=lab10.RUN_GPUS, zero_stage=3, strategy=rng.choice(["sync", "sharded", "async"]), storage_gbps=_mostly(rng, 2000, [500]),
                relaunch_min=10, swap_min=60, hot_spares=_mostly(rng, False, [True]), interval_min=rng.choice([10, 30, 60, 240]))


# lab -> [(step, inputs drawn by, the questions that step's predictions carry)]
STEPS = {
    "05_parallelism": [("act1", _act1, ("cause",)), ("act2", _act2, ("design",))],
    "06_zero_sweep": [("sweep", _sweep, ("fit", "zero2"))],
    "07_pipeline_visualizer": [("pipeline", _pipeline, ("utilisation", "microbatches"))],
    lab08.LAB: [(lab08.STEP, _ring, ("ring", "bucket"))],
    lab09.LAB: [("worksheet", _worksheet, ("dp64",))],
    lab10.LAB: [("cadence", _cadence, ("mtbf", "cadence"))],
}
OPENS = {"05_parallelism": 0.97}  # share of students who open each lab (others: 0.9)


class _Outcomes:
    """OUTCOMES[(lab, step)], remembered by exact inputs (a class repeats slider settings)."""

    def __init__(self):
        self.cache = {}

    def __call__(self, key, inputs, predictions):
        token = json.dumps([key, inputs, predictions], sort_keys=True)
        if token not in self.cache:
            self.cache[token] = OUTCOMES[key](dict(inputs), dict(predictions))
        return self.cache[token]


def _pick(rng, key, skill, right):
    """A student's answer: the engine's with probability set by their skill, else a wrong option
    (the first wrong ones more often: a class shares its misconceptions); None: skipped."""
    if rng.random() < 0.04:
        return None
    options = [o.key for o in QUESTION_OPTIONS[key]]
    if right is not None and rng.random() < 0.2 + 0.6 * skill:
        return right
    wrong = [k for k in options if k != right]
    return rng.choices(wrong, weights=[3, 2, 1][: len(wrong)] + [1] * max(0, len(wrong) - 3))[0]


def student_name(i: int) -> str:
    return f"Student {i:03d}"


def write_student(folder: Path, name: str, rng: random.Random, key: dict, outcomes: _Outcomes) -> None:
    ledger = DesignLedger(name, folder, engine_version=None)
    skill = rng.random()
    for lab, steps in STEPS.items():
        if rng.random() > OPENS.get(lab, 0.9):
            continue
        for step, draw, questions in steps:
            predictions = {}
            for q in questions:
                answer = _pick(rng, (lab, q), skill, key[(lab, q)])
                ledger.commit_prediction(lab, q, answer)
                if answer is not None and answer != key[(lab, q)] and rng.random() < 0.15:
                    ledger.commit_prediction(lab, q, key[(lab, q)])  # changed after the reveal
                predictions[q] = answer
            for _ in range(20):  # a setting the lab accepts (the sliders offer no others)
                inputs = draw(rng)
                try:
                    result = outcomes((lab, step), inputs, predictions)
                    break
                except ValueError:
                    continue
            ledger.save_step(lab, step, inputs, predictions, result)


def write_hostile(folder: Path, first: Path, second: Path) -> None:
    """The few hostile files of a real class (see the module's docstring)."""
    doc = json.loads(first.read_text())
    step = next(iter(doc["labs"]["05_parallelism"].values()))
    step["outcomes"]["mfu"] = 0.99  # the student edited a stored outcome
    doc["student"] = "Tampering Student"
    (folder / "zz-tampered.json").write_text(json.dumps(doc))
    shutil.copyfile(second, folder / "zz-duplicate-id.json")  # the same id handed in twice
    other = json.loads(second.read_text())
    other["student"] = "Renamed Student"  # a file named for one id that holds another
    (folder / f"zz-named-for-another-{state.student_hash(student_name(2))}.json").write_text(json.dumps(other))
    (folder / "zz-truncated.json").write_text(first.read_text()[:200])
    (folder / "zz-future-schema.json").write_text(json.dumps({**doc, "schema_version": 99, "student": "Future Student"}))
    bad = json.loads(first.read_text())
    bad["student"] = "Text Number"
    bad["labs"]["05_parallelism"].get("act1", {"inputs": {}})["inputs"]["gpus"] = "64"
    (folder / "zz-text-number.json").write_text(json.dumps(bad))


def make_class(folder: str | Path, students: int = STUDENTS, seed: int = 19, hostile: bool = True) -> Path:
    """Write the class into `folder` (created; must be empty of ledgers); returns the roster's path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng, key, outcomes = random.Random(seed), answer_key(), _Outcomes()
    names = [student_name(i) for i in range(students)]
    for name in names:
        write_student(folder, name, rng, key, outcomes)
    for lock in folder.glob(".*.lock"):
        lock.unlink()
    if hostile and students >= 2:
        paths = [folder / state.ledger_filename(n) for n in names[:2]]
        write_hostile(folder, *paths)
    roster = folder / "roster.csv"
    absent = [f"Absent Student {i}" for i in range(NEVER_SUBMITTED)]
    roster.write_text("student,code\n" + "".join(f"{n},code{i:04d}\n" for i, n in enumerate(names + absent)))
    return roster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="folder to write the class into")
    parser.add_argument("--students", type=int, default=STUDENTS)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--no-hostile", action="store_true")
    args = parser.parse_args(argv)
    roster = make_class(args.out, args.students, args.seed, not args.no_hostile)
    print(f"{args.students} ledgers, a roster ({roster}) and {0 if args.no_hostile else len(HOSTILE)} hostile files in {args.out}")
    print(f"dashboard: marimo run instructor/class_dashboard.py -- --ledgers {args.out} --roster {roster}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

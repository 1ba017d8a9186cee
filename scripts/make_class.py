"""A synthetic class for the instructor's tools: `python scripts/make_class.py OUT [--students 200] [--jobs 2]`.

Each student's ledger is written through the labs' own ledger code (`labs.core.state.DesignLedger`:
`commit_prediction`, then `save_step` with the outcomes the lab would show), with answers drawn
from each lab's real prediction options and inputs drawn from the settings its sliders offer
(Labs 05-15). A student has a hidden skill that sets how often they pick the engine's answer;
some skip a question, some change an answer after the reveal (recorded as a change: the labs
invite it, and it is no flag), some commit and never press Submit, some never open a lab.

Every student works in their own variant of each lab (labs.variants, drawn from their id and the
class salt, as the labs draw it): their numbers, their option order, their key. A student's
answers are drawn by what the options say, not by letter: a class shares its misconceptions, so
the same wrong option is popular whatever letter it has in each student's variant, and a typed
number is the engine's or off by a misconception's factor. The salt (random per class, or
--salt) goes to OUT/class.env as LABS_CLASS_SALT.

As on a class server, most ledgers are signed (LABS_SIGNING_KEY, a random key written to
OUT/class.env for the grader); some are unsigned (a student's laptop or the static site), a few
were signed and then edited by hand (a committed answer changed to the engine's: the grader
labels it "edited"), and some were handed in late by the student's clock (unsigned, after the
due dates of OUT/due.toml). Beside them: a roster (`roster.csv`: the LMS columns name,
sis_login_id, email and section, with students who never handed anything in) and a few hostile
files, each named `zz-*.json`: a tampered outcome, one id in two files, a file named for
another id, truncated JSON, a newer schema, an input of the wrong type.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import random
import secrets
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

from labs.core import state
from labs.core.scenarios import OUTCOMES, QUESTION_OPTIONS, lab05, lab08, lab09, lab10, lab11, lab12, lab13
from labs.core.scenarios import lab14, lab15
from labs.core.scenarios import PROBLEM_SETS
from labs.core.problemset import STEP as PROBLEM_STEP
from labs.core.state import DesignLedger
from labs.grading.questions import answer_or_none, questions
from labs.variants import LETTERS, registry, variant

STUDENTS = 200
NEVER_SUBMITTED = 5  # roster names with no ledger
UNSIGNED, EDITED, LATE, UNSUBMITTED = 0.12, 0.02, 0.06, 0.08  # shares of the class
DUE_IN_DAYS = 7  # the due dates of OUT/due.toml, from the time the class is made
HOSTILE = ("zz-tampered.json", "zz-duplicate-id.json", "zz-named-for-another.json", "zz-truncated.json", "zz-future-schema.json", "zz-text-number.json")


def answer_key() -> dict[tuple[str, str], str | None]:
    """The engine's answer to every prediction question (labs.grading.questions: computed)."""
    return {key: answer_or_none(*key) for key in questions()}


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


def _context(rng):
    seq = rng.choice(lab11.SEQ_CHOICES[:4])
    return dict(seq_len=seq, cp=_mostly(rng, 16, [1, 4, 8, 32], 0.6), kv_heads=_mostly(rng, 8, [16, 64]), algorithm=_mostly(rng, "ring", ["all_gather", "ulysses"], 0.6),
                capacity=rng.choice(list(lab11.CAPACITY_CHOICES)))


def _precision(rng):
    return dict(log2_loss_scale=_mostly(rng, 16, list(range(lab12.LOSS_SCALE_RANGE[0], lab12.LOSS_SCALE_RANGE[1] + 1)), 0.5),
                outlier_scale=rng.choice(lab12.OUTLIER_SCALES), accumulation_k=rng.choice(lab12.ACCUMULATION_KS), accumulation_steps=rng.choice(lab12.ACCUMULATION_STEPS))


def _split(rng):
    return dict(block=rng.choice(lab13.tpm.BLOCKS), ranks=rng.choice(lab13.RANKS), sequence_parallel=_mostly(rng, True, [False]),
                width=_mostly(rng, 8192, list(lab13.ENGINE_WIDTHS)), gpu=_mostly(rng, "h100", list(lab13.SWEEP_GPU_KEYS)), overlap=_mostly(rng, False, [True]))


def _diagnosis(rng):
    # the flight recorder's heatmap by group, the timeout slider, the outlier view (the notebook's defaults: TP, 10 min, the job, 5%)
    return dict(view_axis=_mostly(rng, "tp", ["world", "pp", "dp"], 0.6), timeout_min=_mostly(rng, 10, list(lab14.TIMEOUT_SETTINGS_MIN), 0.5),
                outlier_group=_mostly(rng, "world", ["tp", "pp", "dp"], 0.7), threshold_pct=float(_mostly(rng, 5, [1, 2, 3, 10, 20, 50], 0.7)))


def _routing(rng):
    # the router is re-run per setting (about a second each): a class moves the scheme and the node limit
    return dict(lab15.DEFAULT_INPUTS, scheme=_mostly(rng, "bias", ["none", "aux_loss"], 0.6), max_nodes=_mostly(rng, 4, [8]),
                capacity=rng.choice(list(lab15.CAPACITIES)))


# lab -> [(step, inputs drawn by, the questions that step's predictions carry)]
STEPS = {
    "05_parallelism": [("act1", _act1, ("cause",)), ("act2", _act2, ("design",))],
    "06_zero_sweep": [("sweep", _sweep, ("fit", "zero2"))],
    "07_pipeline_visualizer": [("pipeline", _pipeline, ("utilisation", "microbatches"))],
    lab08.LAB: [(lab08.STEP, _ring, ("ring", "bucket"))],
    lab09.LAB: [("worksheet", _worksheet, ("dp64", "pp_free"))],
    lab10.LAB: [("cadence", _cadence, ("mtbf", "cadence"))],
    lab11.LAB: [(lab11.STEP, _context, ("fit", "moe"))],
    lab12.LAB: [(lab12.STEP, _precision, ("underflow", "recompute", "fp8"))],
    lab13.LAB: [(lab13.STEP, _split, ("ring", "scaling", "tp_best"))],
    lab14.LAB: [(lab14.STEP, _diagnosis, ("culprit", "kind", "timeout"))],
    lab15.LAB: [(lab15.STEP, _routing, ("balance", "drops", "cost"))],
}
STEPS.update({name: [(PROBLEM_STEP, lambda rng: {}, chapter.ids)] for name, chapter in PROBLEM_SETS.items()})  # problem sets (issue 40): no inputs
OPENS = {"05_parallelism": 0.97}  # share of students who open each lab (others: 0.9)


class _Outcomes:
    """OUTCOMES[(lab, step)] at a student's variant, remembered by exact inputs and variant (a
    class repeats slider settings, and variants repeat)."""

    def __init__(self):
        self.cache = {}

    def __call__(self, key, inputs, predictions, drawn=None):
        token = json.dumps([key, inputs, predictions, drawn.seed if drawn else None, drawn.salt if drawn else None], sort_keys=True)
        if token not in self.cache:
            extra = {} if drawn is None else {"variant": drawn}
            self.cache[token] = OUTCOMES[key](dict(inputs), dict(predictions), **extra)
        return self.cache[token]


def _wrong_weights(n: int) -> list[int]:
    return [3, 2, 1][:n] + [1] * max(0, n - 3)


def _pick(rng, key, skill, right, asked=None):
    """A student's answer: the engine's with probability set by their skill, else a wrong option
    (the first wrong ones more often: a class shares its misconceptions); None: skipped. With the
    student's variant's question (`asked`) the wrong option is drawn by what it says (its place
    in the scenario module's list) and answered by the letter it has in this student's order."""
    if rng.random() < 0.04:
        return None
    good = rng.random() < 0.2 + 0.6 * skill
    if asked is not None and asked.numeric:  # a number typed in: the engine's, or off by a misconception's factor
        value = asked.spec.answer
        return f"{value:g}" if good else f"{value * rng.choice([0.5, 2.0, 4.0]):g}"
    if asked is not None:
        if asked.key is not None and good:
            return asked.key
        wrong = [o.key for o in asked.spec.options if o.key != asked.spec.correct]
        return LETTERS[asked.order.index(rng.choices(wrong, weights=_wrong_weights(len(wrong)))[0])]
    if key not in QUESTION_OPTIONS:
        value = float(right)
        return f"{value:g}" if good else f"{value * rng.choice([0.5, 2.0, 4.0]):g}"
    options = [o.key for o in QUESTION_OPTIONS[key]]
    if right is not None and good:
        return right
    wrong = [k for k in options if k != right]
    return rng.choices(wrong, weights=_wrong_weights(len(wrong)))[0]


def student_name(i: int) -> str:
    return f"Student {i:03d}"


@contextlib.contextmanager
def _signing(key: str | None):
    """LABS_SIGNING_KEY set to `key` (None: unset) while a ledger is written, as on a class server."""
    before = os.environ.pop("LABS_SIGNING_KEY", None)
    if key:
        os.environ["LABS_SIGNING_KEY"] = key
    try:
        yield
    finally:
        os.environ.pop("LABS_SIGNING_KEY", None)
        if before is not None:
            os.environ["LABS_SIGNING_KEY"] = before


def write_student(folder: Path, name: str, rng: random.Random, key: dict, outcomes: _Outcomes, submit: bool = True, salt: str | None = "") -> Path:
    """One student's ledger; `salt`: the class salt their variants are drawn with (None: the labs
    as they were before variants, every student the same questions)."""
    ledger = DesignLedger(name, folder, engine_version=None)
    skill = rng.random()
    for lab, steps in STEPS.items():
        if rng.random() > OPENS.get(lab, 0.9):
            continue
        drawn = variant(lab, name, salt) if salt is not None and lab in registry() else None
        record = drawn.record() if drawn is not None else None
        for step, draw, questions_ in steps:
            predictions = {}
            for q in questions_:
                asked = drawn.questions.get(q) if drawn is not None else None
                right = (None if asked.numeric else asked.key) if asked is not None else key[(lab, q)]
                answer = _pick(rng, (lab, q), skill, key[(lab, q)], asked)
                ledger.commit_prediction(lab, q, answer, variant=record)
                if answer is not None and right is not None and answer != right and rng.random() < 0.15:
                    ledger.commit_prediction(lab, q, right, variant=record)  # changed after the reveal
                predictions[q] = answer
            if not submit:
                continue  # committed, never pressed Submit: still graded
            for _ in range(20):  # a setting the lab accepts (the sliders offer no others)
                inputs = draw(rng)
                try:
                    result = outcomes((lab, step), inputs, predictions, drawn)
                    break
                except ValueError:
                    continue
            ledger.save_step(lab, step, inputs, predictions, result, variant=record)
    return ledger.path


def make_late(path: Path, when: datetime, rng: random.Random) -> None:
    """Every commit and save of an unsigned ledger stamped after the due dates (a laptop's clock)."""
    doc = json.loads(path.read_text())
    stamp = lambda: (when + timedelta(hours=rng.uniform(1, 60))).isoformat(timespec="seconds")  # noqa: E731
    for lab in doc.get("predictions", {}).values():
        for record in lab.values():
            record["committed"] = stamp()
            for change in record["changes"]:
                change["at"] = record["committed"]
    for lab in doc["labs"].values():
        for step in lab.values():
            step["saved"] = stamp()
    path.write_text(json.dumps(doc, indent=1))


def make_edited(path: Path, key: dict, salt: str | None = None) -> bool:
    """A signed ledger whose first committed wrong answer is changed by hand to the engine's (at
    the student's variant)."""
    doc = json.loads(path.read_text())
    for lab, questions_ in doc.get("predictions", {}).items():
        drawn = variant(lab, doc["student"], salt) if salt is not None and lab in (doc.get("variants") or {}) else None
        for q, record in questions_.items():
            asked = drawn.questions.get(q) if drawn is not None else None
            right = (None if asked.numeric else asked.key) if asked is not None else key.get((lab, q))
            if record.get("signature") and right is not None and record["answer"] not in (None, right):
                record["answer"] = right
                path.write_text(json.dumps(doc, indent=1))
                return True
    return False


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


def _kinds(seed: int, students: int) -> list[tuple[str, bool]]:
    """Each student's kind (signed, unsigned, edited or late) and whether they press Submit, drawn
    in order from a stream of their own: who is late, edited or unsigned does not move when a lab
    adds a question."""
    kinds = random.Random(f"{seed}-kinds")
    drawn = []
    for _ in range(students):
        kind = kinds.choices(["signed", "unsigned", "edited", "late"], weights=[1 - UNSIGNED - EDITED - LATE, UNSIGNED, EDITED, LATE])[0]
        drawn.append((kind, kinds.random() > UNSUBMITTED))
    return drawn


def _write_students(folder: Path, seed: int, first: int, kinds: list[tuple[str, bool]], key: dict, signing_key: str, salt: str | None,
                    due: datetime) -> None:
    """Students first, first + 1, ... (one per entry of `kinds`). Each draws from a random stream
    of their own (the seed and their number), so any range of students is written the same alone,
    in any order or in another process."""
    outcomes = _Outcomes()
    for i, (kind, submit) in enumerate(kinds, start=first):
        rng = random.Random(f"{seed}-student-{i}")
        with _signing(signing_key if kind in ("signed", "edited") else None):
            path = write_student(folder, student_name(i), rng, key, outcomes, submit=submit, salt=salt)
        if kind == "edited":
            make_edited(path, key, salt)
        elif kind == "late":
            make_late(path, due, rng)


def _write_ranges(folder: Path, seed: int, ranges: list[tuple[int, int]], kinds: list[tuple[str, bool]], *args) -> None:
    """_write_students for each [first, last) of `ranges` (`args`: its key, signing key, salt and due time)."""
    for first, last in ranges:
        _write_students(folder, seed, first, kinds[first:last], *args)


def _ranges(students: int, jobs: int) -> list[tuple[int, int]]:
    """[first, last) student ranges, a few per job so that a slow range does not hold the others up."""
    size = max(1, -(-students // (4 * jobs)))
    return [(start, min(start + size, students)) for start in range(0, students, size)]


def make_class(folder: str | Path, students: int = STUDENTS, seed: int = 19, hostile: bool = True, salt: str | None = None,
               variants: bool = True, jobs: int = 1) -> Path:
    """Write the class into `folder` (created; must be empty of ledgers) with its class.env
    (the signing key and the class salt) and due.toml; returns the roster's path. `salt`: the
    class salt (default: a random one); `variants=False`: ledgers as written before variants;
    `jobs`: processes writing ledgers (the same ledgers for any number, times and signatures aside)."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    key = answer_key()
    signing_key = secrets.token_urlsafe(32)
    salt = (secrets.token_urlsafe(12) if salt is None else salt) if variants else None
    due = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=DUE_IN_DAYS)
    names = [student_name(i) for i in range(students)]
    kinds = _kinds(seed, students)
    if jobs == 1:
        _write_students(folder, seed, 0, kinds, key, signing_key, salt, due)
    else:
        # forked: a child inherits this module (also when it was loaded from its path, as the tests and
        # benchmarks load it), and nothing is pickled
        ranges = _ranges(students, jobs)
        workers = [multiprocessing.get_context("fork").Process(target=_write_ranges, args=(folder, seed, ranges[j::jobs], kinds, key, signing_key, salt, due))
                   for j in range(jobs)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        failed = [worker.exitcode for worker in workers if worker.exitcode]
        if failed:
            raise RuntimeError(f"{len(failed)} of {jobs} jobs writing ledgers failed (exit status {failed[0]}; its traceback is above)")
    for lock in folder.glob(".*.lock"):
        lock.unlink()
    if hostile and students >= 2:
        submitted = [folder / state.ledger_filename(n) for n in names if "05_parallelism" in json.loads((folder / state.ledger_filename(n)).read_text())["labs"]]
        write_hostile(folder, *submitted[:2])
    roster = folder / "roster.csv"
    absent = [f"Absent Student {i}" for i in range(NEVER_SUBMITTED)]
    roster.write_text("student,code,name,sis_login_id,email,section\n" + "".join(
        f"{n},code{i:04d},\"{n.split()[-1]}, {n.split()[0]}\",s{i:05d},s{i:05d}@example.edu,Section {1 + i % 2:03d}\n" for i, n in enumerate(names + absent)))
    (folder / "class.env").write_text(f"LABS_SIGNING_KEY={signing_key}\n" + (f"LABS_CLASS_SALT={salt}\n" if salt is not None else ""))
    labs = sorted({lab for lab, _ in key})
    (folder / "due.toml").write_text('policy = "percent"\npercent_per_day = 10\ngrace_hours = 1\n' + "".join(f'["{lab}"]\ndue = {due.isoformat().replace("+00:00", "Z")}\n' for lab in labs))
    return roster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="folder to write the class into")
    parser.add_argument("--students", type=int, default=STUDENTS)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--no-hostile", action="store_true")
    parser.add_argument("--salt", help="the class salt the variants are drawn with (default: a random one, written to OUT/class.env)")
    parser.add_argument("--no-variants", action="store_true", help="ledgers as the labs wrote them before variants (one key for everyone)")
    parser.add_argument("--jobs", type=int, default=1, help="processes writing ledgers (each student draws from their own stream: the same class for any number)")
    args = parser.parse_args(argv)
    roster = make_class(args.out, args.students, args.seed, not args.no_hostile, args.salt, not args.no_variants, args.jobs)
    print(f"{args.students} ledgers, a roster ({roster}) and {0 if args.no_hostile else len(HOSTILE)} hostile files in {args.out}")
    print(f"grade:     export $(cat {args.out}/class.env); python -m labs.grade {args.out} --roster {roster} --due {args.out}/due.toml --canvas grades.csv")
    print(f"dashboard: marimo run instructor/class_dashboard.py -- --ledgers {args.out} --roster {roster} --due {args.out}/due.toml")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Grade a generated class of 500 ledgers and print the time: `python benchmarks/bench_grade.py`.
Target: under 5 s on this 2-core machine."""

import random
import tempfile
import time

from labs.core.outcomes import ACT1_OPTIONS, ACT2_DESIGNS, act1_outcomes, act2_outcomes
from labs.core.state import DesignLedger
from labs.grade import grade

STUDENTS = 500


def make_class(folder: str) -> None:
    rng = random.Random(5)
    for i in range(STUDENTS):
        ledger = DesignLedger(f"student{i:03d}", folder)
        a1 = dict(gpus=rng.choice([8, 64, 512]), global_batch=512, fixed_per_gpu=False, fabric="ib-ndr", algorithm=rng.choice(["ring", "nvls"]), overlap=True, params_b=7)
        p1 = {"cause": rng.choice([o.key for o in ACT1_OPTIONS])}
        a2 = ACT2_DESIGNS[rng.choice(list(ACT2_DESIGNS))].as_dict()
        p2 = {"design": rng.choice(list(ACT2_DESIGNS))}
        ledger.save_step("05_parallelism", "act1", a1, p1, act1_outcomes(a1, p1))
        ledger.save_step("05_parallelism", "act2", a2, p2, act2_outcomes(a2, p2))


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        make_class(folder)
        start = time.perf_counter()
        table, problems = grade([folder])
        elapsed = time.perf_counter() - start
    assert len(table) == 2 * STUDENTS and not problems and set(table.status) == {"ok"}
    print(f"graded {STUDENTS} ledgers ({len(table)} steps) in {elapsed:.2f} s; target 5 s: {elapsed / 5:.2f} of the budget")


if __name__ == "__main__":
    main()

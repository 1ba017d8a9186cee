"""The timeline generator's op codes, built with numpy (labs.core.engine.pipeline._stage_codes),
against the op order written out op by op (_stage_order): the same ops in the same order on
every stage, so the played timelines are the same bit for bit."""

import itertools

import numpy as np
import pytest

from labs.core.engine.pipeline import OPS, _stage_codes, _stage_order


def listed_codes(schedule, p, m, v, group):
    return [np.array([(OPS.index(op) * m + i) * v + ch for op, i, ch in _stage_order(schedule, p, m, v, s, group)], dtype=np.int64) for s in range(p)]


CASES = [(s, p, m, 1, None) for s, p, m in itertools.product(("gpipe", "1f1b", "zb-h1", "zb-h2"), (1, 2, 3, 8, 64), (1, 2, 5, 8, 64, 256))]
CASES += [("interleaved", p, m, v, g) for p, m, v, g in ((1, 4, 2, None), (2, 4, 2, None), (4, 8, 3, None), (4, 12, 2, 6), (8, 32, 4, None), (8, 40, 2, 16),
                                                         (64, 64, 2, None), (64, 256, 2, None), (64, 256, 4, 128))]


@pytest.mark.parametrize("schedule, p, m, v, group", CASES)
def test_numpy_codes_are_the_listed_order(schedule, p, m, v, group):
    built, listed = _stage_codes(schedule, p, m, v, group), listed_codes(schedule, p, m, v, group)
    assert len(built) == len(listed) == p
    for s, (a, b) in enumerate(zip(built, listed)):
        assert a.dtype == b.dtype == np.int64 and np.array_equal(a, b), f"stage {s}: {a[:12]} against {b[:12]}"

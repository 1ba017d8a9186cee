"""The bias check a lab shows beside its first MFU: the published training run in the project's
reference file that is closest to the lab's plan, what the paper reports, and what this engine
says on that same run, so a student reads the engine's number with the engine's own error on a
run it can be checked against (issue "engine v4 part 2", item 9).

The candidates are the public runs of labs.core.engine.calibration (Narayanan et al. 2021
Tables 1-2, Korthikanti et al. 2022 Table 5: A100s, Megatron-LM and DeepSpeed of 2021-22). The
closest is the one whose parameter count is nearest on a log scale, among runs of the same
kind of layout: a ZeRO-3 plan with no model parallelism is compared with DeepSpeed's ZeRO-3 row,
every other plan with Megatron's model-parallel rows. Each row keeps its paper's FLOP convention:
Narayanan et al. count hardware FLOPs with full recompute, Korthikanti et al. model FLOPs (MFU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from labs.core.engine.calibration import CalibrationRow, public_runs
from labs.core.engine.models import Model
from labs.core.engine.perf import Plan

PAPERS = {  # a row's id prefix -> the paper, as a lab names it
    "megatron2021_t1": "Narayanan et al. 2021, Table 1, arXiv:2104.04473",
    "megatron2021_t2": "Narayanan et al. 2021, Table 2, arXiv:2104.04473",
    "korthikanti_t5": "Korthikanti et al. 2022, Table 5, arXiv:2205.05198",
}
CONVENTIONS = {
    "hardware_tflops_per_gpu": "hardware FLOPs utilisation, full recompute counted",
    "model_tflops_per_gpu": "MFU",
}


@dataclass(frozen=True)
class PublishedBeside:
    """A published run and the engine on it. Utilisations are fractions of the run's BF16 peak."""

    row: CalibrationRow
    paper: str
    convention: str  # what the row's utilisation counts (CONVENTIONS)
    published: float
    engine: float

    @property
    def error(self) -> float:
        """The engine's reading on the run over the paper's, minus 1: > 0 means the engine is too fast."""
        return self.engine / self.published - 1

    @property
    def layout(self) -> str:
        p = self.row.plan
        return f"TP {p.tp} x PP {p.pp} x DP {p.dp}"

    @property
    def gpus(self) -> int:
        return self.row.cluster.gpus

    @property
    def params_b(self) -> float:
        return self.row.model.params / 1e9


def _paper(row_id: str) -> str:
    return next(paper for prefix, paper in PAPERS.items() if row_id.startswith(prefix))


def _is_zero3_alone(plan: Plan) -> bool:
    return plan.zero_stage == 3 and plan.tp == 1 and plan.pp == 1


@cache
def _runs() -> tuple[tuple[CalibrationRow, float, float], ...]:
    """Every public run with its published and engine utilisation (the engine's is computed once a process)."""
    out = []
    for row in public_runs():
        peak = row.cluster.gpu.bf16_flops
        out.append((row, row.published * 1e12 / peak, row.predicted() * 1e12 / peak))
    return tuple(out)


def published_beside(model: Model, plan: Plan) -> PublishedBeside:
    """The reference file's run closest to (model, plan), and the engine on it."""
    same_kind = [r for r in _runs() if _is_zero3_alone(r[0].plan) == _is_zero3_alone(plan)] or list(_runs())
    # nearest on a log scale; of two runs of one model, the one that reports MFU (the lab's convention)
    row, published, engine = min(same_kind, key=lambda r: (round(abs(math.log(r[0].model.params / model.params)), 6),
                                                           r[0].metric != "model_tflops_per_gpu", r[0].id))
    return PublishedBeside(row, _paper(row.id), CONVENTIONS[row.metric], published, engine)


def runs_gpus() -> frozenset[str]:
    """The GPUs the reference file's runs ran on."""
    return frozenset(r[0].cluster.gpu.name for r in _runs())

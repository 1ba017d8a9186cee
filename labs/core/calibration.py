"""Published training runs as engine inputs: each row's model, cluster, plan and the number the
paper reports, in the FLOP convention the paper used (hardware FLOPs with full recompute for
Narayanan et al. 2021; model FLOPs for Korthikanti et al. 2022).

The rows live in tests/data/published_numbers.json (copied from the project's reference file,
sources inside). Settings a paper does not print are stated here, once, for every row:
micro-batch 1 where not given, 1F1B unless the paper used interleaving, no overlap of the
gradient all-reduce and blocking pipeline send/recv (Megatron-LM in 2021 reduced after the
backward pass and exchanged activations synchronously), flat ring all-reduce.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from labs.core.hardware import Cluster
from labs.core.models import Model
from labs.core.perf import Estimate, Plan, estimate

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "published_numbers.json"


@dataclass(frozen=True)
class CalibrationRow:
    id: str
    model: Model
    cluster: Cluster
    plan: Plan
    metric: str  # "hardware_tflops_per_gpu" or "model_tflops_per_gpu"
    published: float

    def predict(self) -> Estimate:
        return estimate(self.model, self.cluster, self.plan)

    def predicted(self) -> float:
        return getattr(self.predict(), self.metric)

    def error(self) -> float:
        return self.predicted() / self.published - 1


def load_rows(path: Path = DATA) -> list[dict]:
    return json.loads(Path(path).read_text())


def public_runs(path: Path = DATA) -> list[CalibrationRow]:
    rows = []
    for row in load_rows(path):
        kind, i, o = row["kind"], row["inputs"], row["outputs"]
        if kind == "megatron_table1":
            model = Model(row["id"], i["layers"], i["hidden"], i["heads"], i["seq_len"], i["vocab"])
            plan = Plan(tp=i["tp"], pp=i["pp"], dp=i["dp"], micro_batch=1, global_batch=i["global_batch"], recompute="full", dp_overlap=False, pp_overlap=False)
            rows.append(CalibrationRow(row["id"], model, Cluster.get("dgx-a100", nodes=i["gpus"] // 8), plan, "hardware_tflops_per_gpu", o["tflops_per_gpu"]))
        elif kind == "megatron_table2":
            model = Model.get("gpt3-175b")
            if i["scheme"] == "PTD-P":
                plan = Plan(tp=8, pp=12, dp=i["gpus"] // 96, micro_batch=i["microbatch"], global_batch=i["global_batch"], recompute="full", dp_overlap=False, pp_overlap=False)
            else:
                plan = Plan(tp=1, pp=1, dp=i["gpus"], micro_batch=i["microbatch"], global_batch=i["global_batch"], zero_stage=3, recompute="full")
            rows.append(CalibrationRow(row["id"], model, Cluster.get("dgx-a100", nodes=i["gpus"] // 8), plan, "hardware_tflops_per_gpu", o["tflops_per_gpu"]))
        elif kind == "korthikanti_table5":
            model = Model(row["id"], i["layers"], i["hidden"], i["heads"], i["seq_len"], i["vocab"])
            v = i.get("interleaved_stages") or 1
            plan = Plan(
                tp=i["tp"], pp=i["pp"], dp=i["dp"], micro_batch=i["microbatch"], global_batch=i["global_batch"],
                recompute="selective", sequence_parallel=True, schedule="interleaved" if v > 1 else "1f1b", virtual_stages=v, dp_overlap=False,
            )
            rows.append(CalibrationRow(row["id"], model, Cluster.get("dgx-a100", nodes=max(1, i["gpus"] // 8)), plan, "model_tflops_per_gpu", o["mfu_pct"] / 100 * i["peak_tflops"]))
    return rows

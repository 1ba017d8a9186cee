"""The labs' scenarios: stated settings, in one place, so a lab, its tests and the grader agree.

Act I of the flagship lab: a 7B model (Llama 2 7B's architecture at 2,048 tokens) trained with
data parallelism on DGX H100 nodes (NDR 400 Gb/s, one NIC per GPU, rail-optimised), ZeRO-1
(plain DP needs 16 bytes x 6.7B = 108 GB per GPU), flash attention, micro-batch 1, a global
batch of 512 sequences (1M tokens), and the stakeholder's framework as it stands: fp32 gradients
(Megatron's bf16 default) reduced by a ring after the backward pass, not overlapped with it.
Act II: GPT-3 175B on 128 DGX H100 nodes, global batch 1,536 (Brown et al. 2020).
"""

from __future__ import annotations

from labs.core.hardware import Cluster
from labs.core.models import Model
from labs.core.perf import Estimate, Plan, estimate

DP_WALL_GPUS = (8, 64, 512)
GPU_STEPS_DEFAULT = (8, 16, 32, 64, 128, 256, 512, 1024)
DP_WALL_GLOBAL_BATCH = 512
DP_WALL_SEQ_LEN = 2048


def dp_wall_model(params_b: int = 7) -> Model:
    base = {7: "llama2-7b", 13: "llama2-13b", 70: "llama2-70b"}.get(params_b)
    if base is None:
        raise ValueError(f"params_b must be one of 7, 13, 70; got {params_b!r}")
    return Model.get(base, seq_len=DP_WALL_SEQ_LEN)


def dp_wall_estimate(
    gpus: int,
    global_batch: int = DP_WALL_GLOBAL_BATCH,
    fixed_per_gpu: bool = False,
    fabric: str = "ib-ndr",
    algorithm: str = "ring",
    overlap: bool = False,
    params_b: int = 7,
    grad_reduce_dtype: str = "fp32",
) -> Estimate:
    """One point of Act I: data parallelism over `gpus` H100s. With fixed_per_gpu the global
    batch grows with the GPUs (global_batch is then what 8 GPUs would use)."""
    if gpus % 8:
        raise ValueError(f"gpus must be a multiple of 8 (whole DGX nodes), got {gpus}")
    batch = global_batch * gpus // 8 if fixed_per_gpu else global_batch
    cluster = Cluster.get("dgx-h100", nodes=gpus // 8).with_fabric(fabric)
    plan = Plan(dp=gpus, micro_batch=1, global_batch=batch, zero_stage=1, flash_attention=True, dp_algorithm=algorithm,
                dp_overlap=overlap, grad_reduce_dtype=grad_reduce_dtype)
    return estimate(dp_wall_model(params_b), cluster, plan)


def dp_comm_bound_tokens(grad_reduce_dtype: str = "bf16", gpus: int = DP_WALL_GPUS[-1]) -> float:
    """Tokens per GPU below which Act I's data parallelism spends longer on its (unoverlapped)
    gradient reduction than on compute: compute scales with the tokens, the ring does not."""
    est = dp_wall_estimate(gpus, grad_reduce_dtype=grad_reduce_dtype)
    tokens = est.plan.global_batch * est.model.seq_len / gpus
    return tokens * est.time.dp_comm / est.time.compute


def tp8_dp_ring(gpus: int = DP_WALL_GPUS[-1]) -> tuple[float, float]:
    """(bus bandwidth of a DP ring over whole nodes, of one behind TP = 8) on Act I's cluster,
    bytes/s: the second group has one GPU per node, so it crosses nodes on one NIC."""
    from labs.core.topology import bus_bandwidth

    cluster = Cluster.get("dgx-h100", nodes=gpus // 8)
    return bus_bandwidth("all_reduce", 4e9, cluster, gpus, 1, "ring"), bus_bandwidth("all_reduce", 4e9, cluster, gpus // 8, 8, "ring")


def dp_wall_curve(inputs: dict) -> list[Estimate]:
    """Act I at every GPU count of the lab's slider where the batch splits into whole
    sequences; `inputs` holds dp_wall_estimate's arguments (its "gpus" is ignored)."""
    settings = {k: v for k, v in inputs.items() if k != "gpus"}
    return [dp_wall_estimate(n, **settings) for n in GPU_STEPS_DEFAULT if settings.get("fixed_per_gpu") or n <= settings.get("global_batch", DP_WALL_GLOBAL_BATCH)]


DESIGN_MODEL = "gpt3-175b"
DESIGN_CLUSTER = "dgx-h100"
DESIGN_NODES = 128
DESIGN_GLOBAL_BATCH = 1536


def design_inputs() -> tuple[Model, Cluster]:
    return Model.get(DESIGN_MODEL), Cluster.get(DESIGN_CLUSTER, nodes=DESIGN_NODES)

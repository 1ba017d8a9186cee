"""Data parallelism on a few GPUs of one server: the memory and step time of DDP, ZeRO-2 and
FSDP (ZeRO-3) for the same model and batch, and weak-scaling efficiency (the step time on one
GPU over the step time on N, each GPU keeping its own micro-batches). All of it is
labs.core.engine.perf.estimate on pure data-parallel plans."""

from __future__ import annotations

from labs.core.engine.hardware import CLUSTERS, Cluster
from labs.core.engine.models import Model
from labs.core.engine.perf import Estimate, Plan, estimate
from labs.core.engine.validation import check_bool, check_choice, check_positive

DP_STAGES = {0: "DDP", 2: "ZeRO-2 (FSDP SHARD_GRAD_OP)", 3: "FSDP (FULL_SHARD, ZeRO-3)"}
# The seeds' DDP and FSDP are PyTorch's: its eager kernels and FSDP2's per-parameter hooks
# (labs.core.engine.eras, torchtitan's stack).
STAGE_STACK = "pytorch-fsdp2-2024"
# Claims the labs check against the engine, as the seed course notes state them:
# seeds/001 week 22 ("The throughput penalty for FSDP vs. DDP is typically 5-15%") and week 25
# ("realistic efficiency at 4 GPUs over PCIe is typically 70-85%").
FSDP_PENALTY_CLAIM = (0.05, 0.15)
PCIE_EFFICIENCY_CLAIM = (0.70, 0.85)
PCIE_CLAIM_GPUS = 4
# PyTorch DistributedDataParallel, as the seeds' DDP: fp32 parameters under autocast, so fp32
# gradients all-reduced, in buckets of bucket_cap_mb = 25 MiB (torch.nn.parallel.DistributedDataParallel's
# default, pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html).
TORCH_DDP = {"grad_reduce_dtype": "fp32", "bucket_bytes": 25 * 2**20}
SEQ_LEN = 1024  # tokens a sequence in these checks: the seed models' context (labs.core.engine.models)


def server(cluster_key: str, gpus: int) -> Cluster:
    """`gpus` GPUs of one server of the preset `cluster_key`."""
    if not isinstance(cluster_key, str) or cluster_key not in CLUSTERS:
        check_choice("cluster", cluster_key, tuple(CLUSTERS))
    check_positive("gpus", gpus, integer=True, maximum=CLUSTERS[cluster_key].gpus_per_node)
    return Cluster.get(cluster_key, nodes=1, gpus_per_node=gpus)


def dp_estimate(model_key: str, cluster_key: str, gpus: int, zero_stage: int, micro_batch: int = 1, seq_len: int = SEQ_LEN, dp_overlap: bool = True,
                microbatches: int = 1, **reduction) -> Estimate:
    """One step of pure data parallelism over `gpus` GPUs of one server, `microbatches`
    micro-batches of `micro_batch` sequences on each; `reduction`: Plan's grad_reduce_dtype,
    bucket_bytes (TORCH_DDP for PyTorch's DDP) and stack, else the engine's defaults."""
    unknown = set(reduction) - {"grad_reduce_dtype", "bucket_bytes", "stack"}
    if unknown:
        raise ValueError(f"reduction: only grad_reduce_dtype, bucket_bytes and stack, got {sorted(unknown)}")
    check_positive("micro_batch", micro_batch, integer=True, maximum=1 << 12)
    check_positive("microbatches", microbatches, integer=True, maximum=1 << 12)
    check_bool("dp_overlap", dp_overlap)
    model = Model.get(model_key, seq_len=seq_len)
    plan = Plan(dp=gpus, micro_batch=micro_batch, global_batch=micro_batch * gpus * microbatches, zero_stage=zero_stage,
                recompute="none", flash_attention=True, dp_overlap=dp_overlap, **reduction)
    return estimate(model, server(cluster_key, gpus), plan)


def stage_rows(model_key: str, cluster_key: str, gpus: int = 2, micro_batch: int = 1, seq_len: int = SEQ_LEN, stack: str = STAGE_STACK) -> list[dict]:
    """DDP, ZeRO-2 and FSDP side by side on one software stack: model state and total memory
    per GPU, step time and its terms (compute holds FSDP's host hooks and buffer copies), and
    the step time against DDP's."""
    est = {stage: dp_estimate(model_key, cluster_key, gpus, stage, micro_batch, seq_len, stack=stack) for stage in DP_STAGES}
    ddp = est[0].step_time_s
    return [{"stage": stage, "name": DP_STAGES[stage], "model_state_bytes": e.memory.model_state, "memory_bytes": e.memory.total,
             "step_s": e.step_time_s, "compute_s": e.time.compute, "dp_comm_s": e.time.dp_comm, "optimizer_s": e.time.optimizer,
             "dp_bytes": e.comm_bytes_per_gpu.get("dp", 0.0), "vs_ddp": e.step_time_s / ddp - 1} for stage, e in est.items()]


def scaling_efficiency(model_key: str, cluster_key: str, gpus: int = 4, micro_batch: int = 1, seq_len: int = SEQ_LEN, dp_overlap: bool = True) -> dict:
    """Weak scaling under PyTorch DDP (TORCH_DDP): the step on one GPU over the step on `gpus`
    (each GPU its own micro-batch), and what the extra time is."""
    one = dp_estimate(model_key, cluster_key, 1, 0, micro_batch, seq_len, dp_overlap, **TORCH_DDP)
    many = dp_estimate(model_key, cluster_key, gpus, 0, micro_batch, seq_len, dp_overlap, **TORCH_DDP)
    return {"one_s": one.step_time_s, "many_s": many.step_time_s, "efficiency": one.step_time_s / many.step_time_s,
            "dp_comm_s": many.time.dp_comm, "dp_bytes": many.comm_bytes_per_gpu.get("dp", 0.0), "compute_s": many.time.compute}

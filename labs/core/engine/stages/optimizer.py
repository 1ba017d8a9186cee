"""Optimizer stage: the Adam step on the GPU, or ZeRO-Offload's copies and CPU Adam."""

from __future__ import annotations

from types import SimpleNamespace

from labs.core.engine.memory import GRAD_BYTES, OPTIMIZER_BYTES, WEIGHT_BYTES

# Megatron-LM's mixed-precision Adam step moves, per parameter it updates: zero the fp32 main
# gradient (4), read it for the global norm (4), Adam reads master, m, v, gradient and writes
# master, m, v (28), then copies the master into the bf16 weight (4 + 2) = 42 bytes: the Megatron
# stacks' figure; others move their own (labs.core.engine.eras.Era.optimizer_bytes_per_param).
OPTIMIZER_BYTES_PER_PARAM = 42
# CPU Adam (ZeRO-Offload) streams, per parameter of its shard: the bf16 gradient in (2), the
# master weight and both moments read and written (2 x 12 in fp32), the bf16 weight out (2).
CPU_ADAM_BYTES_PER_PARAM = GRAD_BYTES + 2 * OPTIMIZER_BYTES + WEIGHT_BYTES


def optimizer_stage(cluster, stack, p, q, d, xp) -> SimpleNamespace:
    """Seconds of the optimizer step on the heaviest rank (HBM-bound), or under ZeRO-Offload the
    gradient copy down (hidden behind the last backward with dp_overlap), CPU Adam and the weight
    copy up."""
    gpu = cluster.gpu
    hbm_rate = gpu.hbm_bytes_per_s * gpu.hbm_efficiency
    o = SimpleNamespace()
    o.updated = d.dense_params / xp.where(p.zero >= 1, d.shard, 1.0) + d.expert_params / xp.where(p.zero >= 1, d.expert_shard, 1.0)
    narrow = 2 * (OPTIMIZER_BYTES - p.opt_bytes)  # a narrower state is read and written once each
    o.optimizer = xp.where(p.offload, 0.0, o.updated * (stack.optimizer_bytes_per_param - narrow) / hbm_rate)
    o.down, o.cpu_adam, o.up, o.offload_exposed = xp.only_if(p.offload, _offload, (cluster, p, q, o.updated, narrow, xp), (0.0, 0.0, 0.0, 0.0))
    return o


def _offload(cluster, p, q, updated, narrow, xp):
    """ZeRO-Offload's gradient copy down, CPU Adam and weight copy up, and what of them the step
    waits for."""
    pcie = cluster.host_link.effective_bytes_per_s
    down = GRAD_BYTES * updated / pcie
    cpu_adam = updated * (CPU_ADAM_BYTES_PER_PARAM - narrow) / cluster.host_bytes_per_s_per_gpu
    up = WEIGHT_BYTES * updated / pcie
    return down, cpu_adam, up, xp.where(p.dp_overlap, xp.maximum(0.0, down - q.stage_bwd), down) + cpu_adam + up

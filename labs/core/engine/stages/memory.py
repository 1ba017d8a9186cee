"""Memory stage: bytes on the busiest pipeline rank, and the runtime's own buffers.

Model state under the plan's ZeRO stage (labs.core.engine.memory.model_state_columns), activations
per layer (labs.core.engine.stages.activations) times the micro-batches a rank holds in flight under
its schedule (labs.core.engine.memory.in_flight_columns), and the runtime's buffers below.
"""

from __future__ import annotations

from types import SimpleNamespace

from labs.core.engine.memory import WEIGHT_BYTES, in_flight_columns, model_state_columns
from labs.core.engine.models import ALL_RECOMPUTE_MODES, RECOMPUTE_MODES
from labs.core.engine.stages.activations import fp8_activation_savings, fp8_norms_up_proj_savings, layer_activation_columns
from labs.core.engine.stages.parallel import ACTIVATION_BYTES

# The runtime's own memory, in parts:
# - the driver and the CUDA context with lazily loaded kernels: an H100 80GB shows 81,559 MiB in
#   nvidia-smi and 79.11 GiB to torch (gpu-burn #114), 0.54 GiB the driver keeps; the context and
#   kernels took 0.47 GiB on an A100 with lazy loading, PyTorch 2.1 (stas00/ml-engineering
#   training/performance/README.md): 1.01 GiB.
CUDA_CONTEXT_BYTES = 1.01 * 2**30
# - NCCL: 688 MB per process group of more than two GPUs (4 MB all-reduce, NVIDIA/nccl #964), one
#   per parallel axis in use; NVLS buffers 16 channels x 2 x 128 KiB x 8 steps x 8 local ranks =
#   256 MiB from NCCL 2.21 (src/transport/nvls.cc).
NCCL_COMMUNICATOR_BYTES = 688 * 2**20
NCCL_NVLS_BYTES = 256 * 2**20
# - Transformer Engine userbuffers under tp_comm_overlap: 12 bf16 buffers of (s/cp x b, h)
#   (transformer_engine/pytorch/module/base.py initialize_ub, the default configuration).
TP_OVERLAP_BUFFERS = 12
# - caching-allocator fragmentation: 15% on average across eight LLM trainings on A100 80GB
#   (GMLake, ASPLOS 2024), charged on the activations, the memory the allocator churns
#   (Megatron keeps weights, gradients and optimizer state in persistent contiguous buffers).
FRAGMENTATION = 0.15

_FULL, _SELECTIVE, _NONE = (RECOMPUTE_MODES.index(x) for x in ("full", "selective", "none"))
_NORMS_UP = ALL_RECOMPUTE_MODES.index("norms_up_proj")


def _rank_state(dense, expert, params, model, p, d, xp):
    """One pipeline rank's weights, gradients and optimizer state, in bytes.

    Under DualPipe the rank holds two chunks (labs.core.engine.stages.pipe), each an nn.Module with its
    own parameters and gradients (deepseek-ai/DualPipe examples/example_dualpipe.py builds the two
    and sums each one's gradients with its mirror rank's copy): its model state is two stages',
    each sharded over the dp ranks as a stage's is (DualPipe's code has no optimizer; the engine
    keeps one optimizer shard a chunk, the README's "Parameter 2x"; the mirror ranks' gradient
    exchange is priced with the DP stage's reduction, labs.core.engine.stages.data)."""
    w_mem, g_mem, o_mem = model_state_columns(dense, p.zero, d.shard, p.offload, p.opt_bytes, d.grad_bytes, xp)
    if model.experts:  # routed experts shard over n / ep ranks
        expert_state = model_state_columns(expert, p.zero, d.expert_shard, p.offload, p.opt_bytes, d.grad_bytes, xp)
        w_mem, g_mem, o_mem = w_mem + expert_state[0], g_mem + expert_state[1], o_mem + expert_state[2]
    # grad_sync="step" from ZeRO-2: the accumulated gradients stay whole until the step's reduce-scatter
    g_mem = xp.where(xp.not_(d.reduce_each_mb) & (p.zero >= 2) & xp.not_(p.offload), (dense + expert) * d.grad_bytes, g_mem)
    # ZeRO-3 holds the layer it computes and the one it prefetches, gathered; FP8 keeps a 1-byte
    # copy of the layers' weights between micro-batches (Transformer Engine's FP8 weight cache).
    w_mem = w_mem + xp.where(p.zero == 3, 2 * model.layer_params / p.tp * WEIGHT_BYTES, 0.0)
    w_mem = w_mem + xp.where(p.fp8, params, 0.0)
    return w_mem, g_mem, o_mem


def rank_activations(model, p, layer, q, per_layer, xp):
    """Bytes of activations the first, a middle and the last pipeline rank hold (stacked:
    labs.core.engine.stages.xp), from a layer's per micro-batch (`per_layer`: layer_activations) and
    the micro-batches each holds in flight under its schedule; no ZeRO term enters them."""
    return xp.each(_rank_activations, q.layers_r, q.last_r, q.rank_index, q.pass_share, model, p, per_layer, _stored(p, xp), layer.written, xp)


def _rank_activations(layers, last, rank, share, model, p, per_layer, stored, working, xp):
    """One rank's activations: p + 1 micro-batches through one chunk under DualPipe (share: half
    the layers the rank holds); full recompute's working layer (`working`: all a layer writes in
    its forward, flash attention's s x s aside: labs.core.engine.stages.compute)."""
    held = in_flight_columns(p.sched, p.pp, p.m, p.v, rank, p.group, xp)  # in micro-batches through one chunk's layers
    activations = per_layer * layers * share * held + xp.where(stored == _FULL, working, 0.0)
    return activations + last * p.b * p.s * model.vocab * 4 / p.tp  # fp32 logits of the micro-batch in flight


def _stored(p, xp):
    """What a layer keeps for its backward, as a recompute mode: flash attention keeps no s x s
    scores, so without recompute it keeps what selective recompute does."""
    return xp.where(p.flash & (p.rc == _NONE), _SELECTIVE, p.rc)


def _state_and_activations(w_mem, g_mem, o_mem, activations):
    return w_mem + g_mem + o_mem + activations


def layer_activations(model, p, written, xp):
    """Bytes of activations one layer keeps per micro-batch for its backward, from what its
    forward writes (`written`: everything, flash attention's s x s aside; labs.core.engine.stages.compute)."""
    tp, s, b, sp = p.tp, p.s, p.b, p.sp
    stored = _stored(p, xp)
    per_layer = layer_activation_columns(model, s, b, tp, sp, stored, xp)
    fp8_saved = fp8_activation_savings(model, s, b, tp, sp, xp)
    per_layer = per_layer - xp.where(p.fp8 & (stored == _NORMS_UP), fp8_norms_up_proj_savings(model, s, b, tp, xp),
                                     xp.where(p.fp8 & (stored != _FULL), fp8_saved, 0.0))
    kept_whole = written - xp.where(p.fp8, fp8_saved, 0.0)
    return xp.where(p.full, p.redo * per_layer + (1 - p.redo) * kept_whole, per_layer)  # layers a block recompute leaves out keep everything


def memory_stage(model, cluster, dp_algorithm, p, q, d, tpcp, held, xp) -> SimpleNamespace:
    """Weights, gradients, optimizer state, activations and buffers on the busiest rank, and the
    first, a middle and the last rank's state and activations (rank_total, rank_activations: the
    stage totals of stage_memory); `held`: the ranks' activations (rank_activations)."""
    tp = p.tp
    rank_index = q.rank_index  # the first, a middle and the last rank (stages.pipe)
    w_mem, g_mem, o_mem = xp.each(_rank_state, d.rank_dense, d.rank_expert, d.rank_params, model, p, d, xp)
    rank_total = xp.each(_state_and_activations, w_mem, g_mem, o_mem, held)
    busiest = xp.argmax(rank_total)
    r = SimpleNamespace()
    r.busiest_rank = xp.pick(rank_index, busiest)
    r.weights, r.gradients, r.optimizer, r.activations = (xp.pick(x, busiest) for x in (w_mem, g_mem, o_mem, held))
    computed = r.weights + r.gradients + r.optimizer + r.activations
    communicators = sum(xp.where(x > 1, 1.0, 0.0) for x in (tp, p.pp, p.dp, p.cp))
    nvls = float(bool(cluster.intra.nvls_bytes_per_s) and dp_algorithm in ("auto", "nvls"))
    r.buffers = (CUDA_CONTEXT_BYTES + communicators * NCCL_COMMUNICATOR_BYTES + nvls * NCCL_NVLS_BYTES * xp.where((tp > 1) | (p.dp > 1), 1.0, 0.0)
                 + xp.where(tpcp.overlap, TP_OVERLAP_BUFFERS * p.tokens * model.hidden * ACTIVATION_BYTES, 0.0) + FRAGMENTATION * r.activations)
    r.total = computed + r.buffers
    r.rank_total, r.rank_activations = rank_total, held
    return r


def stage_memory(r, xp):
    """Memory of the first, a middle (the second, the fullest of them under 1F1B) and the last
    stage, from memory_stage's namespace `r`."""
    return xp.each(_stage_total, r.rank_total, r.rank_activations, r.buffers, r.activations)


def _stage_total(total, activations, buffers, busiest_activations):
    return total + buffers - FRAGMENTATION * busiest_activations + FRAGMENTATION * activations

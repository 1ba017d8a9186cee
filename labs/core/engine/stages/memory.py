"""Memory stage: bytes on the busiest pipeline rank, and the runtime's own buffers.

Model state under the plan's ZeRO stage (labs.core.engine.memory.model_state_columns), activations
per layer (labs.core.engine.stages.activations) times the micro-batches a rank holds in flight under
its schedule (labs.core.engine.memory.in_flight_columns), counted chunk by chunk where a rank's
chunks differ (interleaving with lighter end stages), the loss's logits on the last rank, and the
runtime's buffers below, each a line of labs.core.engine.memory.MemoryBreakdown.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from labs.core.engine.eras import CUDA_GRAPH_STATIC_INPUTS, logits_bytes, stack_of
from labs.core.engine.memory import WEIGHT_BYTES, in_flight_columns, model_state_columns
from labs.core.engine.models import ALL_RECOMPUTE_MODES, RECOMPUTE_MODES
from labs.core.engine.pipeline import SCHEDULES
from labs.core.engine.precision import GEMM_PRECISIONS, PRECISIONS, weight_cache_bytes
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
# - TP overlap buffers, by kind (labs.core.engine.eras: tp_overlap_kind), in buffers of (tokens of
#   the micro-batch, h), the shape Megatron passes (training.py _initialize_tp_communicators).
#   Transformer Engine's userbuffers (transformer_engine/pytorch/module/base.py initialize_ub, the
#   default methods): one buffer a communicator for qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad
#   (ring_exchange), proj_fprop, fc2_fprop (pipeline), qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad
#   (bulk): 10 (proj_wgrad and fc2_wgrad, the "external" ones, overlap on the dgrad communicators'
#   buffers); the six all-gather buffers (fp8_buf: qkv_fprop, qkv_dgrad, proj_dgrad, fc1_fprop,
#   fc1_dgrad, fc2_dgrad) hold FP8 under FP8 GEMMs, 1 byte. PyTorch's AsyncTP: one symmetric-memory
#   workspace per TP group, grown to the largest request (torch/distributed/_symmetric_memory
#   get_symm_mem_workspace), the all-gathered input or the matmul's full output before its
#   reduce-scatter: one buffer.
TP_OVERLAP_BUFFERS = {"userbuffers": 10, "async_tp": 1, "none": 0}
TP_OVERLAP_FP8_BUFFERS = {"userbuffers": 6, "async_tp": 0, "none": 0}  # of those, the ones that hold FP8 under FP8 GEMMs
# - caching-allocator fragmentation: a share of the activations, the memory the allocator churns
#   (Megatron keeps weights, gradients and optimizer state in persistent contiguous buffers), by
#   stack (labs.core.engine.eras: allocator_fragmentation; 15% for PyTorch's caching allocator as
#   shipped, GMLake, ASPLOS 2024).

# - the gathered SP input a DTensor stack saves (Era.sp_regathers_input False): torchtitan's TP plan
#   (models/llama3/infra/parallelize.py apply_tp) all-gathers the sequence-parallel norm output in
#   PrepareModuleInput (Shard(1) -> Replicate()) before the attention's wq, wk, wv and the FFN's w1,
#   w3 (an MoE layer's router, experts and shared experts), and F.linear saves that gathered input
#   for its weight gradient: two (tokens, h) tensors a layer, whole, where Megatron's
#   LinearWithGradAccumulationAndAsyncCommunication saves the 1/t shard and gathers it again. Op-level
#   checkpointing recomputes it (torchtitan distributed/activation_checkpoint.py: _save_list holds
#   mm, SDPA and reduce_scatter_tensor, no all-gather), as does recompute that re-runs the norms.
SP_GATHERED_INPUTS = 2

_FULL, _SELECTIVE, _NONE = (RECOMPUTE_MODES.index(x) for x in ("full", "selective", "none"))
_GPIPE, _INTERLEAVED = SCHEDULES.index("gpipe"), SCHEDULES.index("interleaved")
_NORMS_UP, _OPS = ALL_RECOMPUTE_MODES.index("norms_up_proj"), ALL_RECOMPUTE_MODES.index("ops")


def _rank_state(dense, expert, params, model, p, d, cache, accumulated_bytes, xp):
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
    # grad_sync="step" from ZeRO-2: the accumulated gradients stay whole until the step's reduce-scatter,
    # `accumulated_bytes` a parameter (accumulated_grad_bytes)
    g_mem = xp.where(xp.not_(p.reduce_each_mb) & (p.zero >= 2) & xp.not_(p.offload), (dense + expert) * accumulated_bytes, g_mem)
    # ZeRO-3 holds the layer it computes and the one it prefetches, gathered; a low-precision
    # recipe keeps its quantized copies of the layers' weights between micro-batches (Transformer
    # Engine's weight cache, `cache` bytes a parameter: weight_cache_column).
    w_mem = w_mem + xp.where(p.zero == 3, 2 * model.layer_params / p.tp * WEIGHT_BYTES, 0.0)
    w_mem = w_mem + params * cache
    return w_mem, g_mem, o_mem


def rank_model_state(model, cluster, stack, p, d, xp):
    """The first, a middle and the last rank's (weights, gradients, optimizer) bytes (_rank_state)
    from the DP stage's parameters per rank `d` (stages.data): it reads no term of the micro-batch
    size, recompute or SP, so the DP stage evaluates it with its prices, once per group of rows
    that differ only in those (stages.data.data_parallel_stage)."""
    # a stack that quantizes its weights every micro-batch (Era.fp8_weight_cache False: torchao's float8,
    # DeepSeek-V3's online quantization) holds no copy between micro-batches, as compute prices its casts
    cache = weight_cache_column(cluster.gpu, p, xp) if stack.fp8_weight_cache else 0.0
    w_mem, g_mem, o_mem = xp.each(_rank_state, d.rank_dense, d.rank_expert, d.rank_params, model, p, d, cache, accumulated_grad_bytes(stack, d), xp)
    if stack.pp_grad_sync == "step":  # torch's pipelining keeps a ZeRO-3 stage's weights unsharded between its backwards
        w_mem = xp.each(_unsharded_weights, w_mem, d.rank_params, p, xp)
    return w_mem, g_mem, o_mem


def rank_state_bytes(state, xp):
    """Each rank's weights + gradients + optimizer state (rank_model_state's three, added in the
    order memory_stage's total adds them): the DP stage sums them, a sweep once per group of rows."""
    return xp.each(_state_sum, *state)


def _state_sum(w_mem, g_mem, o_mem):
    return w_mem + g_mem + o_mem


def accumulated_grad_bytes(stack, d):
    """Bytes a parameter of the whole gradients a step that reduces once keeps between its
    micro-batches (labs.core.engine.eras: accumulated_grad_dtype): the reduce dtype's, or FSDP1's
    bf16 param dtype (WEIGHT_BYTES: the dtype the backward computes them in)."""
    return WEIGHT_BYTES if stack.accumulated_grad_dtype == "param" else d.grad_bytes


def weight_cache_column(gpu, p, xp):
    """Bytes a parameter's cached low-precision weights take under each row's precision on this
    GPU (labs.core.engine.precision.weight_cache_bytes: Hopper's FP8 cache holds the transpose too)."""
    if xp.scalar:
        return weight_cache_bytes(PRECISIONS[int(p.fp8)], gpu.arch)
    return np.array([weight_cache_bytes(name, gpu.arch) for name in PRECISIONS])[np.asarray(p.fp8, dtype=int)]


def rank_activations(model, p, layer, q, per_layer, xp, stack=None):
    """Bytes of activations the first, a middle and the last pipeline rank hold (stacked:
    labs.core.engine.stages.xp), from a layer's per micro-batch (`per_layer`: layer_activations) and
    the micro-batches each holds in flight under its schedule; no ZeRO term enters them. A stack
    whose pipeline keeps each stage's output until its backward (torch.distributed.pipelining)
    adds one output a chunk in flight; one that frees each chunk's input after its forward
    (Llama 3) takes it away (labs.core.engine.eras: pp_keeps_outputs, pp_frees_stage_inputs)."""
    boundary = ACTIVATION_BYTES * p.tokens * model.hidden / xp.where(p.sp, p.tp, 1.0)  # a chunk's input or output
    keeps = 0.0 if stack is None else float(stack.pp_keeps_outputs) - float(stack.pp_frees_stage_inputs)
    if stack is not None and stack.cuda_graphs != "none":  # the graphs' static inputs (labs.core.engine.eras: cuda_graphs)
        per_layer = per_layer + CUDA_GRAPH_STATIC_INPUTS * boundary
    stored = _stored(p, xp)
    if stack is not None and not stack.sp_regathers_input:
        per_layer = per_layer + gathered_sp_inputs(model, p, xp, stored)
    output = xp.where(p.pp > 1, keeps * boundary, 0.0)
    chunk = q.layers_r[1] / p.v  # a full chunk: a middle rank's layers over its v chunks (pp > 2)
    return xp.each(_rank_activations, q.layers_r, q.last_r, q.rank_index, q.pass_share, model, p, per_layer, stored, layer.written,
                   chunk, output, _per_chunk(p, xp), xp)


def gathered_sp_inputs(model, p, xp, stored=None):
    """Bytes a layer keeps per micro-batch beyond the sequence shards layer_activations counts when
    its stack saves the all-gathered input of the column-parallel GEMMs (SP_GATHERED_INPUTS): the
    other (t - 1)/t of each, on the layers that keep their GEMM inputs (none under full recompute
    but those a block recompute leaves out, none under op-level or norm recompute). stored: _stored,
    when computed already."""
    stored = _stored(p, xp) if stored is None else stored
    whole = SP_GATHERED_INPUTS * ACTIVATION_BYTES * p.tokens * model.hidden * (1.0 - 1.0 / p.tp)
    kept = xp.where(p.full, 1.0 - p.redo, xp.where((stored == _OPS) | (stored == _NORMS_UP), 0.0, 1.0))
    return xp.where(p.sp & (p.tp > 1), whole * kept, 0.0)


def _rank_activations(layers, last, rank, share, model, p, per_layer, stored, working, chunk, output, per_chunk, xp):
    """One rank's activations: p + 1 micro-batches through one chunk under DualPipe (share: half
    the layers the rank holds); full recompute's working layer (`working`: all a layer writes in
    its forward, flash attention's s x s aside: labs.core.engine.stages.compute); interleaving
    counted chunk by chunk (_interleaved_layer_passes, where `per_chunk`: _per_chunk); the stage
    outputs a runtime keeps."""
    held = in_flight_columns(p.sched, p.pp, p.m, p.v, rank, p.group, xp)  # in micro-batches through one chunk's layers
    whole = layers * held
    # chunk-passes in flight, each with an input and an output (none through an empty embedding chunk)
    layer_passes, empty_passes = xp.only_if(per_chunk, _chunk_passes, (layers, last, rank, held, chunk, p, xp), (whole, 0.0))
    activations = per_layer * share * layer_passes + xp.where(stored == _FULL, working, 0.0)
    chunk_passes = xp.where(layers > 0, held * p.v - empty_passes, 0.0)
    return activations + output * chunk_passes


def _chunk_passes(layers, last, rank, held, chunk, p, xp):
    """Where a rank's chunks differ (_per_chunk): its layer-passes (_interleaved_layer_passes) and
    its passes through an empty embedding chunk (_empty_first_chunk_passes)."""
    return _interleaved_layer_passes(layers, last, rank, held, chunk, p, xp), _empty_first_chunk_passes(layers, rank, held, chunk, p, xp)


def _per_chunk(p, xp):
    """Where a rank's chunks may differ: interleaving (m >= p, as in_flight_columns) past two stages."""
    return (p.sched == _INTERLEAVED) & (p.m >= p.pp) & (p.pp > 2) & (p.v > 1)


def _interleaved_layer_passes(layers, last, rank, held, chunk, p, xp):
    """Layer-passes (layers x micro-batches) a rank holds under Megatron's interleaved schedule,
    chunk by chunk. At its peak rank r holds the first W = (p - r - 1) 2 + (v - 1) N + 1 passes
    of its schedule table (labs.core.engine.pipeline.schedule_table: N micro-batches through chunk
    0, then through chunk 1, ..., then the next group; `held` x v of them): of a group's v N
    passes the first N run chunk 0 and the last N chunk v - 1. A middle rank's chunks are alike
    (`chunk` layers each). An end rank with fewer layers takes them out of the chunk that holds
    the embedding (the first rank's chunk 0) or the loss (the last rank's chunk v - 1): Llama 3
    Sec. 3.3.2 ("the first model chunk on the first stage has only the embedding, and the last
    model chunk on the last stage has only output projection and loss calculation"), Megatron's
    --account-for-embedding/loss-in-pipeline-split. That chunk is the first rank's most held
    (in every group) and the last rank's least (once), so the first rank holds less than its
    layers x held and the last more."""
    v = p.v
    n = xp.where(p.group > 0, p.group, p.pp)
    passes = held * v
    first_chunk = _first_chunk_passes(passes, n, v, xp)
    groups = xp.floor(passes / (v * n))
    rest = passes - groups * v * n
    # the last rank's light passes lower its peak only without a later group: the first full
    # forward after them comes in before a full backward leaves
    last_chunk = xp.where(p.m > n, 0.0, groups * n + xp.maximum(rest - (v - 1) * n, 0.0))
    short = v * chunk - layers  # layers the rank's end chunk lacks
    short = xp.where((short > 0) & (short <= chunk), short, 0.0)
    lighter = xp.where(rank == 0, first_chunk, xp.where(last > 0, last_chunk, 0.0))
    return xp.where(short > 0, chunk * passes - short * lighter, layers * held)


def _first_chunk_passes(passes, n, v, xp):
    """Of the first `passes` entries of the schedule table, those through chunk 0: the first N of
    each group of v N."""
    groups = xp.floor(passes / (v * n))
    return groups * n + xp.minimum(passes - groups * v * n, n)


def _empty_first_chunk_passes(layers, rank, held, chunk, p, xp):
    """The first rank's passes through a chunk 0 that holds only the embedding (Llama 3): its
    input is the token ids, no activation to free."""
    n = xp.where(p.group > 0, p.group, p.pp)
    empty = (rank == 0) & (p.v * chunk - layers == chunk)
    return xp.where(empty, _first_chunk_passes(held * p.v, n, p.v, xp), 0.0)


def rank_logits(model, stack, p, q, xp):
    """Bytes the loss keeps on each rank (stacked as the ranks are): the logits of one micro-batch
    (b x s/cp tokens over V/t of the vocabulary) at the loss's peak, and under GPipe each other
    micro-batch's saved part (labs.core.engine.eras: logits_bytes). A rank holding the output layer
    runs one head and loss a micro-batch and one more a depth of MTP (Model.mtp_depth), each
    keeping its saved part until the backward; the peak is one loss's."""
    saved_e, peak_e = stack.logits_bytes
    saved_c, peak_c = logits_bytes(stack, True)
    saved = xp.where(p.torch_compile, saved_c, saved_e)
    peak = xp.where(p.torch_compile, peak_c, peak_e)
    losses = xp.where(p.sched == _GPIPE, p.m, 1.0) * (1 + model.mtp_depth)  # each MTP depth its own head and loss
    per_logit = peak + (losses - 1) * saved
    logits = p.b * p.s * model.vocab / p.tp * per_logit
    return xp.each(_times, q.last_r, logits)


def _times(a, b):
    return a * b


def _stored(p, xp):
    """What a layer keeps for its backward, as a recompute mode: flash attention keeps no s x s
    scores, so without recompute it keeps what selective recompute does."""
    return xp.where(p.flash & (p.rc == _NONE), _SELECTIVE, p.rc)


def _state_and_activations(state, activations, logits):
    return state + activations + logits


def saved_input_savings(name: str) -> float:
    """Bytes an element of a saved GEMM input frees under precision `name`, against bf16's 2, on
    the share of layers its recipe quantizes. Transformer Engine saves the quantized input, one
    usage only (module/linear.py and layernorm_linear.py: inputmat.update_usage(rowwise_usage=False,
    columnwise_usage=True), or the row-wise data where the input is gathered): its values and block
    scales, GemmPrecision.activation_bytes. NVFP4 (tensor/nvfp4_tensor.py inner_tensor_specs: uint8
    data of half the last dimension, one uint8 E4M3 scale per 16, one fp32 amax a tensor): 0.5 +
    1/16 = 0.5625 bytes, so 1.4375 freed an element on the 85% of layers in NVFP4 (arXiv:2509.25149
    Sec. 4 keeps 15% in BF16, which save BF16): 1.2219. MXFP8 and blockwise FP8 keep 1 + 1/32 (an
    E8M0 scale per 32, an fp32 scale per 128): 0.96875; per-tensor FP8 1."""
    if name == "bf16":
        return 0.0
    spec = GEMM_PRECISIONS[name]
    return (ACTIVATION_BYTES - spec.activation_bytes) * (1.0 - spec.bf16_layer_share)


_SAVINGS_BY_CODE = np.array([saved_input_savings(name) for name in PRECISIONS])


def saved_input_savings_column(p, xp):
    """saved_input_savings at each row's precision code (p.fp8)."""
    if xp.scalar:
        return float(_SAVINGS_BY_CODE[int(p.fp8)])
    return _SAVINGS_BY_CODE[np.asarray(p.fp8, dtype=int)]


def layer_activations(model, p, written, xp):
    """Bytes of activations one layer keeps per micro-batch for its backward, from what its
    forward writes (`written`: everything, flash attention's s x s aside: layer_activation_columns
    at what selective recompute keeps with flash attention, at no recompute without, as
    labs.core.engine.stages.compute.layer_kernels counts it)."""
    tp, s, b, sp = p.tp, p.s, p.b, p.sp
    stored = _stored(p, xp)
    # a layer that keeps what `written` counts (no recompute, or selective with flash attention) keeps `written`
    per_layer = xp.only_if(stored != xp.where(p.flash, _SELECTIVE, _NONE), layer_activation_columns, (model, s, b, tp, sp, stored, xp), written)
    low = p.fp8 > 0  # a precision code (labs.core.engine.precision)
    kept_saved, written_saved = xp.only_if(low, _low_precision_savings, (model, p, stored, low, xp), (0.0, 0.0))
    kept_whole = written - written_saved
    per_layer = per_layer - kept_saved
    return xp.where(p.full, p.redo * per_layer + (1 - p.redo) * kept_whole, per_layer)  # layers a block recompute leaves out keep everything


def _low_precision_savings(model, p, stored, low, xp):
    """Bytes a layer's low-precision saved GEMM inputs free (where p.fp8 > 0, `low`): of what it
    keeps at its recompute mode `stored` (layer_activations), and of everything its forward writes."""
    tp, s, b, sp = p.tp, p.s, p.b, p.sp
    fp8_saved = fp8_activation_savings(model, s, b, tp, sp, xp) * saved_input_savings_column(p, xp)
    kept_saved = xp.where(low & (stored == _NORMS_UP), fp8_norms_up_proj_savings(model, s, b, tp, xp), xp.where(low & (stored != _FULL), fp8_saved, 0.0))
    return kept_saved, xp.where(p.fp8, fp8_saved, 0.0)


def zero_free_memory(model, cluster, dp_algorithm, stack, p, q, tpcp, held, xp) -> SimpleNamespace:
    """What of memory_stage no ZeRO term enters, computed before the DP stage (a sweep: once per
    group of rows that differ only in the ZeRO stage, labs.core.engine.step.evaluate): the ranks'
    activations (`held`: rank_activations) and logits (rank_logits), and the runtime's buffers but
    fragmentation (the CUDA context, NCCL communicators, TP overlap buffers) and their sum."""
    stack = stack_of(None) if stack is None else stack
    tp = p.tp
    f = SimpleNamespace(held=held, logits=rank_logits(model, stack, p, q, xp))
    communicators = sum(xp.where(x > 1, 1.0, 0.0) for x in (tp, p.pp, p.dp, p.cp))
    nvls = float(bool(cluster.intra.nvls_bytes_per_s) and dp_algorithm in ("auto", "nvls"))
    kind = stack.tp_overlap_kind
    buffer_bytes = TP_OVERLAP_BUFFERS[kind] * ACTIVATION_BYTES - TP_OVERLAP_FP8_BUFFERS[kind] * xp.where(p.fp8, ACTIVATION_BYTES - 1, 0.0)
    f.cuda_context = xp.full_like(tp, CUDA_CONTEXT_BYTES)
    f.communicators = communicators * NCCL_COMMUNICATOR_BYTES + nvls * NCCL_NVLS_BYTES * xp.where((tp > 1) | (p.dp > 1), 1.0, 0.0)
    f.tp_overlap = xp.where(tpcp.overlap, buffer_bytes * p.tokens * model.hidden, 0.0)
    f.runtime = f.cuda_context + f.communicators + f.tp_overlap
    return f


def memory_stage(p, q, d, f, xp, stack=None, brief=False) -> SimpleNamespace:
    """Weights, gradients, optimizer state, activations, the loss's logits and the runtime's
    buffers (CUDA context, NCCL communicators, TP overlap buffers, fragmentation) on the busiest
    rank, and the first, a middle and the last rank's state, activations and logits (rank_total,
    rank_activations: the stage totals of stage_memory); `f`: what of them no ZeRO term enters
    (zero_free_memory). `brief`: only the total (and the busiest rank's activations)."""
    stack = stack_of(None) if stack is None else stack
    held, logits = f.held, f.logits
    rank_total = xp.each(_state_and_activations, d.rank_state_bytes, held, logits)  # the state: rank_model_state, summed by the DP stage
    busiest = xp.argmax(rank_total)
    r = SimpleNamespace()
    r.activations = xp.pick(held, busiest)
    if not brief:
        r.busiest_rank = xp.pick(q.rank_index, busiest)  # the first, a middle and the last rank (stages.pipe)
        r.weights, r.gradients, r.optimizer, r.logits = (xp.pick(x, busiest) for x in (*d.rank_state, logits))
        r.cuda_context, r.communicators, r.tp_overlap = f.cuda_context, f.communicators, f.tp_overlap
    computed = xp.pick(rank_total, busiest)  # the busiest rank's weights + gradients + optimizer + activations + logits
    r.fragmentation = stack.allocator_fragmentation * r.activations
    r.buffers = f.runtime + r.fragmentation
    r.total = computed + r.buffers
    r.fragmentation_share = stack.allocator_fragmentation
    r.rank_total, r.rank_activations = rank_total, held
    return r


def _unsharded_weights(w_mem, params, p, xp):
    return xp.where((p.zero == 3) & (p.pp > 1), xp.maximum(w_mem, WEIGHT_BYTES * params), w_mem)


def stage_memory(r, xp):
    """Memory of the first, a middle (the second, the fullest of them under 1F1B) and the last
    stage, from memory_stage's namespace `r`."""
    return xp.each(_stage_total, r.rank_total, r.rank_activations, r.buffers, r.activations, r.fragmentation_share)


def _stage_total(total, activations, buffers, busiest_activations, fragmentation):
    return total + buffers - fragmentation * busiest_activations + fragmentation * activations

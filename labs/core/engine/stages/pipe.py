"""PP stage: the pipeline's ranks, its compute with the bubble, and its send/recv.

Layers per rank: an even split (the heaviest stage holds ceil(L / (p v)) per chunk), or the
plan's first/last stage layers with the rest spread over the middle (Megatron-Core's
--decoder-first/last-pipeline-num-layers; Llama 3 405B: 7 + 14 x 8 + 7 on 16 stages). The first
rank also holds the input embedding, the last the output layer, logits and loss. The first, a
middle and the last rank ride on a leading axis of 3 (labs.core.engine.stages.xp); the slowest sets
the pace.

DualPipe (deepseek-ai/DualPipe, examples/example_dualpipe.py): rank r holds two chunks, stage r
for the micro-batches entering at rank 0 and stage p - 1 - r for those entering at rank p - 1,
each an nn.Module with its own parameters and gradients, so the ranks' layers, embedding and
output layer are held twice over (the README's "Parameter 2x"; the first and last ranks hold
both the embedding and the output layer, as DeepSeek-V3 Sec. 3.2.3 places them). Half of a
rank's m micro-batches pass through each chunk: a micro-batch's pass costs the mean of the
two. In its overlapped forward-and-backward pairs (labs.core.engine.pipeline.dualpipe_overlapped_pairs)
each one's expert all-to-alls run under the other's compute (DeepSeek-V3 Sec. 3.2.1, Fig. 4) on
DUALPIPE_COMM_SMS of the GPU's SMs, which the compute beside them loses (the engine's one
contention charge, labs.core.engine.stages.parallel.overlap_contention); the other passes expose them.
"""

from __future__ import annotations

from functools import lru_cache
from types import SimpleNamespace

from labs.core.engine.eras import loss_bytes_per_logit
from labs.core.engine.gemm import gemm_time
from labs.core.engine.pipeline import SCHEDULES, dualpipe_overlapped_pairs, idle_time, message_idle
from labs.core.engine.stages.parallel import _seconds, overlap_contention
from labs.core.engine.stages.xp import NUMPY, SCALAR

_ZB_H1, _ZB_H2, _DUALPIPE = SCHEDULES.index("zb-h1"), SCHEDULES.index("zb-h2"), SCHEDULES.index("dualpipe")
_1F1B, _INTERLEAVED = SCHEDULES.index("1f1b"), SCHEDULES.index("interleaved")
# SMs DeepSeek-V3's all-to-all kernels take while the other chunk computes: "only 20 SMs are
# sufficient to fully utilize the bandwidths of IB and NVLink" (arXiv:2412.19437 Sec. 3.2.2).
DUALPIPE_COMM_SMS = 20


def stage_layers(L, pp, v, first, last, dual=False, xp=NUMPY):
    """(layers, holds the embedding, holds the output layer) for the first, a middle and the last
    rank, stacked on a leading axis of 3. first/last < 0: that end takes the even share. dual
    (DualPipe): each rank also holds its mirror stage p - 1 - r (the last's for the first rank,
    the first's for the last; a middle one's for a middle rank, which at pp = 2 is the last)."""
    pp = xp.floats(pp)
    even = xp.ceil(L / (pp * v)) * v
    custom = (first >= 0) | (last >= 0)
    f = xp.where(first >= 0, first, xp.where(pp == 2, L - xp.maximum(last, 0), even))
    e = xp.where(last >= 0, last, xp.where(pp == 2, L - f, even))
    middle = xp.where(custom, xp.ceil((L - f - e) / xp.maximum(pp - 2, 1)), even)
    first_layers = xp.where(pp == 1, L, xp.where(custom, f, even))
    middle_layers = xp.where(pp == 1, L, xp.where(pp == 2, xp.where(custom, e, even), middle))
    last_layers = xp.where(pp == 1, L, xp.where(custom, e, even))
    mirror = xp.where(dual, 1.0, 0.0)
    layers = xp.stack(
        first_layers + mirror * last_layers,
        middle_layers + mirror * xp.where(pp == 2, first_layers, middle_layers),
        last_layers + mirror * first_layers,
    )
    ones = xp.full_like(pp, 1.0)
    single = xp.where(pp == 1, 1.0, 0.0)
    ends = xp.where(pp <= 2, 1.0, 0.0)
    first_rank = xp.stack(ones, single + mirror * ends, single + mirror)
    last_rank = xp.stack(single + mirror, ends, ones)
    return layers, first_rank, last_rank


@lru_cache(maxsize=4096)
def _stage_layers_of_one(L, pp, v, first, last, dual):
    """stage_layers of one plan: a few layer counts, the same for most plans of a space."""
    return stage_layers(L, pp, v, first, last, dual, SCALAR)


def _with_mtp(layers, last, depth):
    """A rank's layers with the MTP blocks the rank holding the output layer adds."""
    return layers + depth * last


def _rank_times(layers, last, share, fwd, layer_b, layer_w, layer_comm, logits, loss):
    """One rank's forward, input-gradient, weight-gradient and layer-communication seconds per
    micro-batch (a `share` of what it holds: 1/2 under DualPipe, whose micro-batches each pass
    one of its two chunks), and their sum."""
    f = share * (layers * fwd + last * (logits + 0.5 * loss))
    b = share * (layers * layer_b + last * (logits + 0.5 * loss))
    w = share * (layers * layer_w + last * logits)
    comm = share * layers * layer_comm
    return f, b, w, comm, f + b + w + comm


def _rank_comm(rank, pp, m, v, dual, a2a_1f1b, layer_comm, layer_a2a, redo, fwd, bwd, sms, xp):
    """A rank's layer communication per micro-batch and the expert all-to-all part of it: all of
    it exposed, or under DualPipe and 1F1B with the stack's all-to-all overlap (`a2a_1f1b`) what
    _dualpipe_comm leaves exposed."""
    pairs = xp.where(dual, dualpipe_overlapped_pairs(pp, m, rank, xp), one_f_one_b_overlapped_pairs(pp, m, v, rank, xp))
    return xp.only_if(dual | a2a_1f1b, _dualpipe_comm, (rank, pp, m, layer_comm, layer_a2a, redo, fwd, bwd, sms, xp, pairs),
                      (layer_comm, layer_a2a))


def one_f_one_b_overlapped_pairs(pp, m, v, rank, xp=NUMPY):
    """Forward-and-backward pairs of rank `rank` under (interleaved) 1F1B with Megatron-Core's EP
    A2A overlap, in micro-batches: the steady state merges each forward with the backward beside
    it, all but the first; the warm-up's forwards and the cool-down's backwards run alone. 1F1B
    warms up with pp - rank - 1 forwards, interleaving with 2 (pp - rank - 1) + (v - 1) pp chunk
    passes of m v (Megatron's get_pp_rank_microbatches), so (m v - warm-up - 1) / v."""
    pp, m, v, rank = xp.floats(pp), xp.floats(m), xp.floats(v), xp.floats(rank)
    warmup = xp.where(v > 1, 2 * (pp - rank - 1) + (v - 1) * pp, pp - rank - 1)
    return xp.maximum(m * v - warmup - 1, 0.0) / v


def _dualpipe_comm(rank, pp, m, layer_comm, layer_a2a, redo, fwd, bwd, sms, xp, pairs=None):
    """_rank_comm under DualPipe: the mean over the step's m passes where, in each overlapped
    pair, only what exceeds the other pass's compute waits (a forward's dispatch and combine
    under the backward's compute, the backward's and the re-run forward's under the forward's),
    plus what the hidden part cost that compute in SMs; a pass that runs alone exposes its own."""
    a2a_f = layer_a2a / (2 + redo)
    a2a_b = layer_a2a - a2a_f
    pairs = dualpipe_overlapped_pairs(pp, m, rank, xp) if pairs is None else pairs
    exposed = xp.maximum(a2a_f - bwd, 0.0) + xp.maximum(a2a_b - fwd, 0.0)
    paired = exposed + overlap_contention(sms, layer_a2a - exposed, DUALPIPE_COMM_SMS)
    a2a = (pairs * paired + (m - pairs) * layer_a2a) / m
    return layer_comm - layer_a2a + a2a, a2a


def pipeline_stage(model, cluster, stack, p, layer, tpcp, xp) -> SimpleNamespace:
    """The slowest rank's pass times (stage_f, stage_bwd), the pipeline's compute with its bubble
    (pipeline), the exposed send/recv (pp_comm) and the exposed expert all-to-alls (ep_exposed)."""
    gpu, h, V = cluster.gpu, model.hidden, model.vocab
    pp, m, v, tp, sched = p.pp, p.m, p.v, p.tp, p.sched
    q = SimpleNamespace()
    dual = sched == _DUALPIPE
    q.pass_share = xp.where(dual, 0.5, 1.0)  # of a rank's layers, what one micro-batch passes through
    q.layers_r, q.first_r, q.last_r = (_stage_layers_of_one(model.layers, pp, v, p.first_layers, p.last_layers, dual) if xp.scalar
                                       else stage_layers(model.layers, pp, v, p.first_layers, p.last_layers, dual, xp))
    if model.mtp_depth:  # DeepSeek-V3's MTP blocks sit with the output layer (labs.core.engine.models: mtp_depth)
        q.layers_r = xp.each(_with_mtp, q.layers_r, q.last_r, model.mtp_depth)
    logits = gemm_time(gpu, p.tokens, V / tp, h, xp=xp)
    # The cross entropy streams the logits through HBM (the stack's passes, fp32 in most).
    hbm_rate = gpu.hbm_bytes_per_s * gpu.hbm_efficiency
    loss = p.tokens * V / tp * xp.where(p.torch_compile, loss_bytes_per_logit(stack, True), loss_bytes_per_logit(stack, False)) / hbm_rate
    if model.mtp_depth:  # one more output head and loss per MTP depth
        logits, loss = logits * (1 + model.mtp_depth), loss * (1 + model.mtp_depth)
    # the first, a middle (the second) and the last rank's index, for the per-rank stages
    q.rank_index = rank_index = xp.stack(xp.full_like(pp, 0.0), xp.minimum(1.0, pp - 1), pp - 1)
    # Megatron-Core's EP A2A overlap pairs 1F1B's and interleaving's steady passes (labs.core.engine.eras: moe_a2a_overlap)
    a2a_1f1b = ((sched == _1F1B) | (sched == _INTERLEAVED)) if stack.moe_a2a_overlap and model.experts else None
    if a2a_1f1b is None:  # all of it exposed, but under DualPipe: what _dualpipe_comm leaves exposed on each rank
        layer_comm_r, a2a_r = xp.only_if(dual, xp.each, (_dualpipe_comm, rank_index, pp, m, tpcp.layer_comm, tpcp.layer_a2a, p.redo, layer.fwd,
                                                         layer.layer_b + layer.layer_w, gpu.sms, xp), (tpcp.layer_comm, tpcp.layer_a2a))
    else:
        layer_comm_r, a2a_r = xp.each(_rank_comm, rank_index, pp, m, v, dual, a2a_1f1b, tpcp.layer_comm, tpcp.layer_a2a, p.redo, layer.fwd,
                                      layer.layer_b + layer.layer_w, gpu.sms, xp)
    stage_f, stage_b, stage_w, stage_comm, total = xp.each(
        _rank_times, q.layers_r, q.last_r, q.pass_share, layer.fwd, layer.layer_b, layer.layer_w, layer_comm_r, logits, loss)
    slowest = xp.argmax(total)
    stage_f, stage_b, stage_w, q.stage_comm = xp.pick(stage_f, slowest), xp.pick(stage_b, slowest), xp.pick(stage_w, slowest), xp.pick(stage_comm, slowest)
    q.layers_slowest = xp.pick(q.layers_r, slowest) * q.pass_share
    q.ep_exposed = m * q.layers_slowest * xp.pick(a2a_r, slowest)
    q.stage_f, q.stage_b, q.stage_w, q.stage_bwd = stage_f, stage_b, stage_w, stage_b + stage_w
    q.per_mb = stage_f + q.stage_bwd + q.stage_comm
    zb = (sched == _ZB_H1) | (sched == _ZB_H2) | dual  # DualPipe defers weight passes as zero-bubble does
    idle = idle_time(pp, m, sched, v, stage_f, xp.where(zb, stage_b, q.stage_bwd), xp.where(zb, stage_w, 0.0), xp=xp)
    q.work = stage_f + q.stage_bwd
    q.bubble = xp.where(pp > 1, idle / (m * q.work + idle), 0.0)
    q.pipeline = m * q.per_mb / (1 - q.bubble)

    # Send/recv: Megatron's scatter/gather sends 1/t per NIC and all-gathers on NVLink.
    pp_bytes = tpcp.act  # one micro-batch's activations cross each stage boundary
    q.stage_stride = p.stride["pp"]  # neighbouring stages sit this many ranks apart (tp x cp x dp in Megatron's order)
    crosses = q.stage_stride >= cluster.domain_gpus  # neighbouring stages in different NVLink domains
    scatter = stack.pp_p2p == "scatter_gather"  # DeepSpeed 2021: every TP rank sends the whole activation
    q.message_split = tp if scatter else 1.0  # a message carries the activation over this
    hop = _seconds("p2p", pp_bytes / q.message_split, cluster, 2, q.stage_stride, xp)
    if scatter:  # the receiving TP group all-gathers the activation its ranks got a slice of each
        gathered = crosses & (tp > 1)
        hop = hop + xp.where(gathered, _seconds("all_gather", xp.where(gathered, pp_bytes, 0.0), cluster, tp, p.s_tp, xp), 0.0)
    q.hop = hop
    # The messages' share of the pipeline's idle time (labs.core.engine.pipeline.message_idle): the ramp's
    # 2 (p - 1) hops, and under interleaving a stall at each chunk change that a micro-batch group
    # N larger than p covers; without overlap every message also waits in line.
    ramp = message_idle(pp, v, xp.where(p.group > 0, p.group, pp), stage_f, q.stage_bwd, q.hop, xp)
    q.pp_comm = xp.where(pp > 1, ramp + xp.where(p.pp_overlap, 0.0, 2 * m * v * q.hop), 0.0)
    # the step time's first two terms (labs.core.engine.step), added here: a sweep runs this stage once
    # per group of rows that differ only in the ZeRO stage and spreads one column, not two
    q.pipeline_and_pp = q.pipeline + q.pp_comm
    return q


def pp_sent(p, q, tpcp, xp):
    """Bytes each GPU sends to its pipeline neighbours a step (pipeline_stage's messages: one
    micro-batch's activations each way per chunk, a TP slice each under scatter/gather): only
    evaluate()'s full outputs show them."""
    return xp.where(p.pp > 1, 2 * p.m * p.v * tpcp.act / q.message_split, 0.0)

"""PP stage: the pipeline's ranks, its compute with the bubble, and its send/recv.

Layers per rank: an even split (the heaviest stage holds ceil(L / (p v)) per chunk), or the
plan's first/last stage layers with the rest spread over the middle (Megatron-Core's
--decoder-first/last-pipeline-num-layers; Llama 3 405B: 7 + 14 x 8 + 7 on 16 stages). The first
rank also holds the input embedding, the last the output layer, logits and loss. The first, a
middle and the last rank ride on a leading axis of 3 (labs.core.stages.xp); the slowest sets
the pace.
"""

from __future__ import annotations

from types import SimpleNamespace

from labs.core.eras import loss_bytes_per_logit
from labs.core.gemm import gemm_time
from labs.core.pipeline import SCHEDULES, idle_time, message_idle
from labs.core.stages.parallel import _seconds
from labs.core.stages.xp import NUMPY

_ZB_H1, _ZB_H2 = SCHEDULES.index("zb-h1"), SCHEDULES.index("zb-h2")


def stage_layers(L, pp, v, first, last, xp=NUMPY):
    """(layers, holds the embedding, holds the output layer) for the first, a middle and the last
    rank, stacked on a leading axis of 3. first/last < 0: that end takes the even share."""
    pp = xp.floats(pp)
    even = xp.ceil(L / (pp * v)) * v
    custom = (first >= 0) | (last >= 0)
    f = xp.where(first >= 0, first, xp.where(pp == 2, L - xp.maximum(last, 0), even))
    e = xp.where(last >= 0, last, xp.where(pp == 2, L - f, even))
    middle = xp.where(custom, xp.ceil((L - f - e) / xp.maximum(pp - 2, 1)), even)
    layers = xp.stack(
        xp.where(pp == 1, L, xp.where(custom, f, even)),
        xp.where(pp == 1, L, xp.where(pp == 2, xp.where(custom, e, even), middle)),
        xp.where(pp == 1, L, xp.where(custom, e, even)),
    )
    ones = xp.full_like(pp, 1.0)
    single = xp.where(pp == 1, 1.0, 0.0)
    first_rank = xp.stack(ones, single, single)
    last_rank = xp.stack(single, xp.where(pp <= 2, 1.0, 0.0), ones)
    return layers, first_rank, last_rank


def _rank_times(layers, last, fwd, layer_b, layer_w, layer_comm, logits, loss):
    """One rank's forward, input-gradient, weight-gradient and layer-communication seconds per
    micro-batch, and their sum."""
    f = layers * fwd + last * (logits + 0.5 * loss)
    b = layers * layer_b + last * (logits + 0.5 * loss)
    w = layers * layer_w + last * logits
    comm = layers * layer_comm
    return f, b, w, comm, f + b + w + comm


def pipeline_stage(model, cluster, stack, p, layer, tpcp, xp) -> SimpleNamespace:
    """The slowest rank's pass times (stage_f, stage_bwd), the pipeline's compute with its bubble
    (pipeline), and the exposed send/recv (pp_comm)."""
    gpu, h, V = cluster.gpu, model.hidden, model.vocab
    pp, m, v, tp, sched = p.pp, p.m, p.v, p.tp, p.sched
    q = SimpleNamespace()
    q.layers_r, q.first_r, q.last_r = stage_layers(model.layers, pp, v, p.first_layers, p.last_layers, xp)
    logits = gemm_time(gpu, p.tokens, V / tp, h, xp=xp)
    # The cross entropy streams the logits through HBM (the stack's passes, fp32 in most).
    hbm_rate = gpu.hbm_bytes_per_s * gpu.hbm_efficiency
    loss = p.tokens * V / tp * xp.where(p.torch_compile, loss_bytes_per_logit(stack, True), loss_bytes_per_logit(stack, False)) / hbm_rate
    stage_f, stage_b, stage_w, stage_comm, total = xp.each(
        _rank_times, q.layers_r, q.last_r, layer.fwd, layer.layer_b, layer.layer_w, tpcp.layer_comm, logits, loss)
    slowest = xp.argmax(total)
    stage_f, stage_b, stage_w, q.stage_comm = (xp.pick(x, slowest) for x in (stage_f, stage_b, stage_w, stage_comm))
    q.layers_slowest = xp.pick(q.layers_r, slowest)
    q.stage_f, q.stage_bwd = stage_f, stage_b + stage_w
    q.per_mb = stage_f + q.stage_bwd + q.stage_comm
    zb = (sched == _ZB_H1) | (sched == _ZB_H2)
    idle = idle_time(pp, m, sched, v, stage_f, xp.where(zb, stage_b, q.stage_bwd), xp.where(zb, stage_w, 0.0), xp=xp)
    q.work = stage_f + q.stage_bwd
    q.bubble = xp.where(pp > 1, idle / (m * q.work + idle), 0.0)
    q.pipeline = m * q.per_mb / (1 - q.bubble)

    # Send/recv: Megatron's scatter/gather sends 1/t per NIC and all-gathers on NVLink.
    pp_bytes = tpcp.act  # one micro-batch's activations cross each stage boundary
    q.stage_stride = p.stride["pp"]  # neighbouring stages sit this many ranks apart (tp x cp x dp in Megatron's order)
    crosses = q.stage_stride >= cluster.gpus_per_node
    scatter = stack.pp_p2p == "scatter_gather"  # DeepSpeed 2021: every TP rank sends the whole activation
    hop = _seconds("p2p", pp_bytes / (tp if scatter else 1.0), cluster, 2, q.stage_stride, xp)
    if scatter:  # the receiving TP group all-gathers the activation its ranks got a slice of each
        gathered = crosses & (tp > 1)
        hop = hop + xp.where(gathered, _seconds("all_gather", xp.where(gathered, pp_bytes, 0.0), cluster, tp, p.s_tp, xp), 0.0)
    q.hop = hop
    # The messages' share of the pipeline's idle time (labs.core.pipeline.message_idle): the ramp's
    # 2 (p - 1) hops, and under interleaving a stall at each chunk change that a micro-batch group
    # N larger than p covers; without overlap every message also waits in line.
    ramp = message_idle(pp, v, xp.where(p.group > 0, p.group, pp), stage_f, q.stage_bwd, q.hop, xp)
    q.pp_comm = xp.where(pp > 1, ramp + xp.where(p.pp_overlap, 0.0, 2 * m * v * q.hop), 0.0)
    q.pp_sent = xp.where(pp > 1, 2 * m * v * pp_bytes / (tp if scatter else 1.0), 0.0)
    return q

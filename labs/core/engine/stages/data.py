"""DP / ZeRO stage: gradient reduction and weight gathers, and what of them the step waits for.

Parameters on each candidate rank; the whole model when pp = 1. DP/ZeRO traffic and the
optimizer follow the rank with the most. Hybrid sharding shards the state over groups of
`shard` ranks and replicates it across the n / shard groups; the replicas all-reduce their
gradient shard once a step. Routed experts' gradients reduce over the expert-data-parallel group
(n / ep ranks, tp x ep apart), the rest over all n = dp x cp.
"""

from __future__ import annotations

from types import SimpleNamespace

from labs.core.engine.eras import fp8_param_gathered
from labs.core.engine.memory import WEIGHT_BYTES
from labs.core.engine.pipeline import SCHEDULES
from labs.core.engine.stages.inputs import BATCH_TERMS
from labs.core.engine.stages.memory import rank_model_state, rank_state_bytes
from labs.core.engine.stages.parallel import NCCL_COLLECTIVE_SMS, overlap_contention
from labs.core.engine.stages.xp import at_rows, spread_groups
from labs.core.engine.topology import collective_columns

_DUALPIPE = SCHEDULES.index("dualpipe")
# Megatron-LM's DDP bucket: max(40M, 1M x dp) parameters (DistributedDataParallelConfig).
MEGATRON_BUCKET_PARAMS = 40_000_000
# ZeRO-3's all-gathers per layer and pass (labs.core.engine.eras.Era.zero3_unit). DeepSpeed's stage 3
# gathers each weight of at least stage3_param_persistence_threshold (1e5) elements on its own:
# the four weight matrices of a Megatron layer (QKV, projection, fc1, fc2; biases and norms stay
# whole); its activation checkpointing re-runs the forward hooks, so with full recompute it
# gathers a third time. "module": the same four, asynchronous and prefetched. FSDP gathers one
# flat parameter per wrapped block, once in forward and once in backward (the recompute runs
# inside the backward's unsharded block).
ZERO3_GATHERS_PER_LAYER = {"parameter": 4, "module": 4, "layer": 1}
# FSDP's root unit ("layer"): the outermost FSDP / fully_shard holds what no block does, the
# embedding, the final norm and the output layer (llama-recipes' transformer_auto_wrap_policy,
# torchtitan's apply_fsdp). The root is not resharded after forward (FSDP1 _post_forward_reshard:
# `not state._is_root`; FSDP2 FSDPState._lazy_init sets the root's post_forward_mesh_info to None),
# so it is gathered once a micro-batch, first, with nothing to hide behind; its gradients are
# complete only after the embedding's backward, the pass's last op, so its reduce-scatter waits in
# full as well (FSDP1's _post_backward_final_callback and FSDP2's finalize_backward wait for it).


def _plus(a, b):
    return a[0] + b[0], a[1] + b[1]


def _rank_params(layers, first, last, pp, tp, ep, model, xp):
    """One pipeline rank's dense parameters (after TP), routed-expert ones (after EP: experts are
    split over EP ranks, not over TP) and their sum."""
    embed = model.vocab * model.hidden
    expert_layer = model.layer_expert_params
    dense = xp.where(pp > 1, layers * (model.layer_params - expert_layer) + (first + last) * embed, float(model.params) - (model.layers + model.mtp_depth) * expert_layer) / tp
    expert = layers * expert_layer / ep
    return dense, expert, dense + expert


def data_parallel_stage(model, cluster, stack, p, q, dp_algorithm, xp, groups=None) -> SimpleNamespace:
    """Reduce and gather seconds (wire and exposed), bytes sent, and the collectives' counts.
    groups (numpy rows only): (a row of each group, every row's group) of rows that differ only
    in the terms of the micro-batch size, recompute and SP (stages.inputs.BATCH_TERMS), on which
    no collective's price depends: they are priced once per group."""
    if groups is None:
        d = _collective_prices(model, cluster, stack, p, q, dp_algorithm, xp)
    else:
        ranks = at_rows(q, groups, only=("layers_r", "first_r", "last_r", "rank_index"))
        d = spread_groups(_collective_prices(model, cluster, stack, at_rows(p, groups, BATCH_TERMS), ranks, dp_algorithm, xp), groups)
    return _exposed(cluster, p, q, d, xp)


def _collective_prices(model, cluster, stack, p, q, dp_algorithm, xp) -> SimpleNamespace:
    """The parameters on each pipeline rank (q: its stage layers) and the seconds of each DP/ZeRO
    collective a step repeats: a bucket's (or unit's) reduction and gather, as (latency,
    bandwidth) pairs, before the micro-batches multiply them."""
    d = SimpleNamespace()
    d.rank_dense, d.rank_expert, d.rank_params = xp.each(_rank_params, q.layers_r, q.first_r, q.last_r, p.pp, p.tp, p.ep, model, xp)
    heaviest = xp.argmax(d.rank_params)
    d.dense_params, d.expert_params = xp.pick(d.rank_dense, heaviest), xp.pick(d.rank_expert, heaviest)
    d.layers = layers = xp.pick(q.layers_r, heaviest)
    n, shard = d.n, d.shard = p.n, p.shard  # the sharding groups (stages.inputs.read_plan)
    s_cp, ep, zero = p.s_cp, p.ep, p.zero
    replicas = n / shard
    d.grad_bytes = grad_bytes = xp.where(p.grad_fp32, 4.0, 2.0)
    grads = d.dense_params * grad_bytes
    weights_bytes = d.dense_params * WEIGHT_BYTES
    gather_bytes = WEIGHT_BYTES  # a weight's bytes in its all-gather
    if stack.fp8_param_gather:  # the layers' linear weights gathered in FP8 (labs.core.engine.eras: fp8_param_gather)
        gather_bytes = xp.where(fp8_param_gathered(stack, p.fp8, xp), 1.0, WEIGHT_BYTES)
        linear = xp.where(p.pp > 1, d.layers, model.layers + model.mtp_depth) * (model.layer_params - model.layer_expert_params) / p.tp
        weights_bytes = weights_bytes - linear * (WEIGHT_BYTES - gather_bytes)
    d.expert_shard = expert_shard = p.expert_shard  # routed experts replicate over n / ep ranks only
    bucket = xp.where(p.bucket_bytes > 0, p.bucket_bytes, xp.maximum(MEGATRON_BUCKET_PARAMS, 1_000_000 * p.dp) * grad_bytes)
    calls = d.calls = xp.maximum(1.0, xp.ceil(grads / bucket))

    z0, z1, z2, z3 = zero == 0, zero == 1, zero == 2, zero == 3
    d.z0, d.z2, d.z3 = z0, z2, z3

    def bucketed(op, runs, nbytes, k, group=n, stride=s_cp):
        """k collectives of nbytes / k each over the group, priced in the rows where `runs` (ZeRO-0
        all-reduces, ZeRO-1/2 reduce-scatter and gather per bucket, ZeRO-3 per module) and on no
        bytes elsewhere: those rows never use the time."""
        return xp.only_if(runs, _bucket_prices, (op, runs, nbytes, k, group, stride), (0.0, 0.0))

    def _bucket_prices(op, runs, nbytes, k, group, stride):
        lat, bw = collective_columns(op, xp.where(runs, nbytes / k, 0.0), cluster, group, stride, dp_algorithm, xp)
        return lat * k, bw * k

    def sharded_reduce(runs, nbytes, k, group, stride, copies):
        """k reduce-scatters of nbytes over a shard group of `group` ranks `stride` apart, each
        followed by the all-reduce of its shard across the `copies` replicas of that group
        (hybrid sharding; one replica: no bytes, no time)."""
        scatter = bucketed("reduce_scatter", runs, nbytes, k, group, stride)
        return _plus(scatter, bucketed("all_reduce", runs & (copies > 1), nbytes / group, k, copies, stride * group))

    scatters, gathers = xp.not_(z0), z1 | z2
    ar = bucketed("all_reduce", z0, grads, calls)
    rs, ag = sharded_reduce(scatters, grads, calls, shard, s_cp, replicas), bucketed("all_gather", gathers, weights_bytes, calls, shard)
    dense_grads, dense_weights = grads, weights_bytes
    expert_grads = expert_weights = 0.0
    expert_rs = (0.0, 0.0)
    expert_replicas = d.expert_replicas = n / ep / expert_shard
    if model.experts:  # routed experts' gradients reduce over the expert-data-parallel group (n / ep ranks, tp x ep apart)
        expert_grads, expert_weights = d.expert_params * grad_bytes, d.expert_params * gather_bytes
        ar = _plus(ar, bucketed("all_reduce", z0, expert_grads, calls, n / ep, s_cp * ep))
        expert_rs = sharded_reduce(scatters, expert_grads, calls, expert_shard, s_cp * ep, expert_replicas)
        rs = _plus(rs, expert_rs)
        ag = _plus(ag, bucketed("all_gather", gathers, expert_weights, calls, expert_shard, s_cp * ep))
        grads, weights_bytes = grads + expert_grads, weights_bytes + expert_weights
    # a pipeline rank holding no layer (first/last_stage_layers=0) still gathers what it holds, in one call
    module_calls = d.module_calls = xp.maximum(layers * ZERO3_GATHERS_PER_LAYER[stack.zero3_unit], 1.0)
    root_unit = stack.zero3_unit == "layer"
    # PyTorch's FSDP under ZeRO-2 frees the gathered units after a backward (labs.core.engine.eras:
    # fsdp_reshard_after_backward): it gathers unit by unit like ZeRO-3's forward, p.forward_unshards
    # times a micro-batch.
    regather = stack.fsdp_reshard_after_backward != "never"
    unit_rows = (z3 | z2) if regather else z3
    root_bytes, root_ag, root_rs_t = 0.0, (0.0, 0.0), 0.0
    expert_units = 0.0
    if root_unit:
        first_r, last_r = xp.pick(q.first_r, heaviest), xp.pick(q.last_r, heaviest)
        d.root_params = xp.where(p.pp > 1, (first_r + last_r) * model.vocab * model.hidden, float(model.params - (model.layers + model.mtp_depth) * model.layer_params)) / p.tp
        root_bytes, root_grads = d.root_params * WEIGHT_BYTES, d.root_params * grad_bytes
        root_ag = bucketed("all_gather", unit_rows, root_bytes, 1.0, shard)
        # FSDP gathers and reduce-scatters each unit on its own (not in Megatron's buckets): a block's
        # dense parameters over the shard group, the root's last; an MoE layer's routed experts are a
        # unit of their own over the expert-data-parallel ranks (torchtitan's apply_fsdp: fully_shard
        # of each block's moe.experts on the dp_shard_mod_ep mesh, then of the block). Under hybrid
        # sharding each unit's reduced shard is all-reduced across the replicas right after its
        # reduce-scatter (FSDP1 _runtime_utils._reduce_grad: dist.all_reduce on _inter_node_pg;
        # FSDP2 _fsdp_collectives.foreach_reduce: all_reduce on the replicate group), unit by unit.
        unit_ag = bucketed("all_gather", unit_rows, dense_weights - root_bytes, module_calls, shard)
        unit_rs = sharded_reduce(unit_rows, dense_grads - root_grads, module_calls, shard, s_cp, replicas)
        if model.experts:
            expert_units = xp.maximum(layers * model.moe_share, 1.0)
            unit_ag = _plus(unit_ag, bucketed("all_gather", unit_rows, expert_weights, expert_units, expert_shard, s_cp * ep))
            unit_rs = _plus(unit_rs, sharded_reduce(unit_rows, expert_grads, expert_units, expert_shard, s_cp * ep, expert_replicas))
        root_rs = sharded_reduce(unit_rows, root_grads, 1.0, shard, s_cp, replicas)
        root_rs_t = root_rs[0] + root_rs[1]
        rs = xp.where(unit_rows, unit_rs[0] + root_rs[0], rs[0]), xp.where(unit_rows, unit_rs[1] + root_rs[1], rs[1])
        module_ag = unit_ag
    else:
        module_ag = bucketed("all_gather", unit_rows, weights_bytes, module_calls, shard)
    per_parameter = d.per_parameter = stack.zero3_unit == "parameter"
    if per_parameter:
        # DeepSpeed's 2021 stage 3 (deepspeed/runtime/zero/partition_parameters.py at c814abd,
        # _allgather_param): torch.cuda.synchronize() before every parameter's all-gather, so no
        # gather overlaps compute; a Python loop of one narrow() per rank builds the output list,
        # and torch.distributed.all_gather into a list copies the flat result out rank by rank
        # (one copy kernel each; _all_gather_base came in PyTorch 1.10). Gradients leave the same
        # way, reduce-scattered parameter by parameter from a list of per-rank views. Both cost
        # the host 2 ops per rank of the group, every call: linear in the number of GPUs.
        host = 2 * shard * stack.cpu_s_per_kernel
        module_ag = (module_ag[0] + module_calls * host, module_ag[1])
        # (the dense parameters one by one over the shard group, then across any replicas; the
        # routed experts as in buckets, over their own group)
        param_rs = _plus(sharded_reduce(z3, dense_grads, module_calls, shard, s_cp, replicas), expert_rs)
        rs = xp.where(zero == 3, param_rs[0] + module_calls * host, rs[0]), xp.where(zero == 3, param_rs[1], rs[1])
    # DualPipe: a rank's two chunks are copies of the stages its mirror rank (p - 1 - r) holds too
    # (deepseek-ai/DualPipe examples/example_dualpipe.py adds each chunk's gradient to its mirror's
    # copy after the step): once a step each reduced shard is all-reduced with the mirror's, a pair
    # of ranks in one NVLink domain or two (rank r's position, r x the stages' stride, against p - 1 - r's).
    dual = p.sched == _DUALPIPE
    d.mirror_bytes = mirror_bytes = xp.where(dual, xp.where(z0, grads, dense_grads / shard + expert_grads / expert_shard), 0.0)
    rank, gpn = xp.pick(q.rank_index, heaviest), cluster.domain_gpus
    same_node = xp.floor(rank * p.stride["pp"] / gpn) == xp.floor((p.pp - 1 - rank) * p.stride["pp"] / gpn)
    d.mirror_stride = mirror_stride = xp.where(same_node, 1.0, float(gpn))
    d.mirror = xp.only_if(dual, bucketed, ("all_reduce", dual, mirror_bytes, calls, 2.0, mirror_stride), (0.0, 0.0))
    d.ar, d.rs, d.ag, d.module_ag, d.root_ag, d.root_rs_t = ar, rs, ag, module_ag, root_ag, root_rs_t
    d.gathers = gathers
    # what dp_traffic reads (the bytes sent and the collectives' counts: only the full outputs show them)
    d.replicas, d.root_bytes = replicas, root_bytes
    d.dense_grads, d.dense_weights, d.expert_grads, d.expert_weights = dense_grads, dense_weights, expert_grads, expert_weights
    d.root_unit, d.regather, d.unit_rows, d.expert_units = root_unit, regather, unit_rows, expert_units
    d.rank_state = rank_model_state(model, cluster, stack, p, d, xp)  # what the memory stage reads of the ZeRO stage's sharding
    d.rank_state_bytes = rank_state_bytes(d.rank_state, xp)
    return d


def _exposed(cluster, p, q, d, xp) -> SimpleNamespace:
    """data_parallel_stage's seconds a step from the collectives' prices `d`: on the wire, and
    what the step waits for of them."""
    gpu, m = cluster.gpu, p.m
    # (the ZeRO tests from the plan's terms: d's, which a sweep would spread from its groups of rows)
    zero = p.zero
    z0, z2, z3, calls, module_calls = zero == 0, zero == 2, zero == 3, d.calls, d.module_calls
    ar, rs, ag, module_ag, root_ag, root_rs_t = d.ar, d.rs, d.ag, d.module_ag, d.root_ag, d.root_rs_t
    gathers, root_unit, regather, per_parameter = (zero == 1) | z2, d.root_unit, d.regather, d.per_parameter
    z3_passes = d.z3_passes = 2.0 + p.redo if per_parameter else 2.0  # gathers per micro-batch
    # gradients reduced every micro-batch or once a step (stages.inputs.read_plan)
    d.reduce_each_mb, d.syncs = reduce_each_mb, syncs = p.reduce_each_mb, p.syncs
    # (FSDP's root unit only where the stack has one: without it its terms are 0, added to nothing)
    unit_lat, unit_bw = z3_passes * m * module_ag[0], z3_passes * m * module_ag[1]
    if root_unit:
        unit_lat, unit_bw = unit_lat + m * root_ag[0], unit_bw + m * root_ag[1]
    reduce_lat = xp.where(z0, syncs * ar[0], syncs * rs[0] + xp.where(z3, unit_lat, 0.0))
    reduce_bw = xp.where(z0, syncs * ar[1], syncs * rs[1] + xp.where(z3, unit_bw, 0.0))
    if regather:  # FSDP's ZeRO-2: the units (root included) gathered m x forward_unshards times a step
        unshards = m * p.forward_unshards
        ag = xp.where(z2, unshards * (module_ag[0] + root_ag[0]), ag[0]), xp.where(z2, unshards * (module_ag[1] + root_ag[1]), ag[1])
    gather_lat = xp.where(gathers, ag[0], 0.0)
    gather_bw = xp.where(gathers, ag[1], 0.0)
    reduce_t, gather_t = reduce_lat + reduce_bw, gather_lat + gather_bw
    # What hides it: the last micro-batch's backward (ZeRO 0-1), every backward (ZeRO-2); the
    # last bucket always waits. ZeRO-3 prefetches the next module's weights behind the current
    # module's compute, pass by pass: a forward gathers, a backward gathers and reduce-scatters,
    # and the first module gather of each pass waits; FSDP's root unit waits in full (above), and
    # the last block's reduce-scatter after its backward.
    stage_f, stage_bwd, dp_overlap = q.stage_f, q.stage_bwd, p.dp_overlap
    window = xp.where(reduce_each_mb, m * stage_bwd, stage_bwd)
    plain = xp.where(dp_overlap, xp.maximum(reduce_t - window, reduce_t / calls), reduce_t)
    gather_pass = module_ag[0] + module_ag[1]
    first = gather_pass / module_calls
    root_ag_t = root_ag[0] + root_ag[1]
    z3_forward = xp.maximum(gather_pass - stage_f, first)
    if root_unit:
        z3_forward = z3_forward + root_ag_t
    backward_gathers = (z3_passes - 1) * gather_pass  # the recompute's gathers run in the backward
    last = (rs[0] + rs[1] - root_rs_t) / xp.maximum(d.layers, 1.0) if root_unit else first
    ar_t, rs_t = ar[0] + ar[1], rs[0] + rs[1]
    prefetched = dp_overlap & (not per_parameter)
    z3_exposed, z3_gathers, z3_gather_exposed = xp.only_if(z3, _zero3_exposure, (
        m, syncs, z3_passes, gather_pass, root_ag_t, z3_forward, backward_gathers, rs, rs_t, root_rs_t, stage_bwd, first, last, prefetched, root_unit, xp),
        (0.0, 0.0, 0.0))
    if regather:  # FSDP's ZeRO-2: ZeRO-3's forward and backward without the backward's gathers
        plain = xp.where(z2 & dp_overlap, syncs * (xp.maximum(rs[0] + rs[1] - root_rs_t - stage_bwd, last) + root_rs_t), plain)
    exposed_reduce = xp.where(z3, xp.where(prefetched, z3_exposed, reduce_t), plain)
    # ZeRO-1/2 gather the updated weights bucket by bucket ahead of the next forward
    # (Megatron-LM --overlap-param-gather): only the first bucket waits in full.
    exposed_gather = xp.where(dp_overlap, xp.maximum(gather_t - stage_f, gather_t / calls), gather_t)
    if regather:
        exposed_gather = xp.where(z2 & dp_overlap, unshards * z3_forward, exposed_gather)
    d.active = active = p.n > 1  # (d.n: p.n)
    # DualPipe's mirror sum (_collective_prices), once a step whatever the DP group, bucket by bucket
    # behind the reduction's: the last bucket's waits (none but under DualPipe)
    # (d.mirror read only where a row runs DualPipe: elsewhere its terms are 0)
    mirror_t, d.mirror_exposed, mirror_lat = xp.only_if(p.sched == _DUALPIPE, _mirror_exposure, (d, calls, dp_overlap, gpu.sms, xp), (0.0, 0.0, 0.0))
    d.mirror_wire = mirror_t
    d.dp_total = xp.where(active, reduce_t + gather_t, 0.0) + mirror_t
    d.dp_latency = xp.where(active, reduce_lat + gather_lat, 0.0) + mirror_lat

    # Each collective on its own, for the communication map. ZeRO-3's prefetch hides gathers and
    # reduce-scatters together: its exposed time is split between them in proportion to their wire
    # time. What ran hidden slowed the compute beside it (overlap_contention): charged to each.
    d.reduce_only = syncs * xp.where(z0, ar_t, rs_t)
    reduce_exposed = xp.where(z3, exposed_reduce - z3_gather_exposed, plain)
    gather_exposed = xp.where(z3, z3_gather_exposed, exposed_gather)
    d.gather_wire = xp.where(z3, z3_gathers, gather_t)
    d.reduce_exposed = reduce_exposed + overlap_contention(gpu.sms, xp.maximum(d.reduce_only - reduce_exposed, 0.0), NCCL_COLLECTIVE_SMS)
    d.gather_exposed = gather_exposed + xp.where(xp.not_(z0), overlap_contention(gpu.sms, xp.maximum(d.gather_wire - gather_exposed, 0.0), NCCL_COLLECTIVE_SMS), 0.0)
    d.dp_exposed = xp.where(active, d.reduce_exposed + d.gather_exposed, 0.0) + d.mirror_exposed
    return d


def _zero3_exposure(m, syncs, z3_passes, gather_pass, root_ag_t, z3_forward, backward_gathers, rs, rs_t, root_rs_t, stage_bwd, first, last, prefetched, root_unit, xp):
    """_exposed's ZeRO-3 terms (where zero = 3): the step's exposed gathers and reduce-scatters
    under prefetch, its gathers on the wire, and the exposed share of those gathers (FSDP's root
    unit's terms only where the stack has one: 0 elsewhere)."""
    reduced, reducing = backward_gathers + rs[0] + rs[1], backward_gathers + rs_t
    if root_unit:
        reduced, reducing = reduced - root_rs_t, reducing - root_rs_t
    z3_backward = xp.maximum(reduced - stage_bwd, last)
    backward_exposed = z3_backward
    if root_unit:
        z3_backward = z3_backward + root_rs_t
        backward_exposed = z3_backward - root_rs_t
    z3_backward_only = xp.maximum(backward_gathers - stage_bwd, first)  # a micro-batch that does not reduce
    z3_exposed = m * z3_forward + syncs * z3_backward + (m - syncs) * z3_backward_only
    z3_gathers = z3_passes * m * gather_pass
    if root_unit:
        z3_gathers = z3_gathers + m * root_ag_t
    z3_share = backward_gathers / xp.maximum(reducing, 1e-300)
    z3_gather_exposed = xp.where(prefetched, m * z3_forward + syncs * backward_exposed * z3_share + (m - syncs) * z3_backward_only, z3_gathers)
    return z3_exposed, z3_gathers, z3_gather_exposed


def _mirror_exposure(d, calls, dp_overlap, sms, xp):
    """_exposed's DualPipe mirror sum (where the schedule is DualPipe): its seconds on the wire,
    exposed (the last bucket's, overlapped, and what the hidden rest cost the compute), and its
    latency part (d.mirror: its latency and bandwidth seconds, 0 where the schedule is not DualPipe)."""
    mirror = d.mirror
    mirror_t = mirror[0] + mirror[1]
    exposed = xp.where(dp_overlap, mirror_t / calls, mirror_t)
    return mirror_t, exposed + overlap_contention(sms, mirror_t - exposed, NCCL_COLLECTIVE_SMS), mirror[0]


def dp_traffic(p, d, xp) -> None:
    """The bytes each GPU sends a step (reduce_sent, gather_sent, sent) and the collectives' counts
    (reduce_calls, gather_calls), added to data_parallel_stage's `d`: the full outputs' and the
    communication map's, which sweep() does not show."""
    n, shard, replicas, m, syncs = d.n, d.shard, d.replicas, p.m, d.syncs
    z0, z2, z3 = d.z0, d.z2, d.z3
    dense_grads, dense_weights, root_bytes = d.dense_grads, d.dense_weights, d.root_bytes
    expert_grads, expert_weights, expert_shard, expert_replicas = d.expert_grads, d.expert_weights, d.expert_shard, d.expert_replicas
    root_unit, regather, unit_rows, expert_units = d.root_unit, d.regather, d.unit_rows, d.expert_units
    unshards = m * p.forward_unshards  # FSDP's ZeRO-2 gathers a step (data_parallel_stage)
    calls, module_calls, z3_passes, per_parameter = d.calls, d.module_calls, d.z3_passes, d.per_parameter
    # Each part over its own groups: the dense parameters over all n ranks (sharded over `shard`,
    # replicated across the rest), the routed experts over the n / ep expert-data-parallel ranks.
    expert_n = n / p.ep
    frac, sfrac = (n - 1) / n, (shard - 1) / shard
    expert_frac, expert_sfrac = (expert_n - 1) / expert_n, (expert_shard - 1) / expert_shard
    replica_sent = (2 * (replicas - 1) / replicas * dense_grads / shard
                    + 2 * (expert_replicas - 1) / expert_replicas * expert_grads / expert_shard)
    # bytes each GPU sends a step: the gradient reduction (once a step up to ZeRO-1, per
    # micro-batch from ZeRO-2) and the weight gathers (once a step, or twice per micro-batch at ZeRO-3)
    d.reduce_sent = syncs * xp.where(z0, 2 * frac * dense_grads + 2 * expert_frac * expert_grads,
                                     sfrac * dense_grads + expert_sfrac * expert_grads + replica_sent)
    d.mirror_calls = xp.where(d.mirror_bytes > 0, calls, 0.0)
    gathered = sfrac * dense_weights + expert_sfrac * expert_weights  # one gather of everything
    if root_unit:  # the root gathered once a micro-batch, the blocks once a pass; FSDP's ZeRO-2 all once an unshard
        once = xp.where(z2, unshards, 1.0) if regather else 1.0
        d.gather_sent = xp.where(z0, 0.0, xp.where(z3, (gathered * z3_passes - sfrac * root_bytes * (z3_passes - 1)) * m, gathered * once))
    else:
        d.gather_sent = xp.where(z0, 0.0, gathered * xp.where(z3, z3_passes * m, 1.0))
    d.sent = d.reduce_sent + d.gather_sent
    # Collectives a step, as data_parallel_stage prices them (the communication map reads these): Megatron's buckets,
    # DeepSpeed's parameters, or FSDP's units (the blocks' dense parameters, the MoE layers'
    # experts and the root, each gathered per unshard and reduce-scattered per reduction); under
    # hybrid sharding each reduce-scatter is followed by its all-reduce across the replicas.
    across, expert_across = 1.0 + xp.where(replicas > 1, 1.0, 0.0), 1.0 + xp.where(expert_replicas > 1, 1.0, 0.0)
    if root_unit:
        units = module_calls + expert_units + 1.0
        d.reduce_calls = syncs * xp.where(unit_rows, (module_calls + 1.0) * across + expert_units * expert_across, calls * across)
        zero2_gathers = xp.where(z2, unshards * units, calls) if regather else calls
        d.gather_calls = xp.where(z3, m * (z3_passes * (module_calls + expert_units) + 1.0), zero2_gathers)
    else:
        d.reduce_calls = syncs * xp.where(z3 & per_parameter, module_calls, calls) * xp.where(z0, 1.0, across)
        d.gather_calls = xp.where(z3, z3_passes * m * module_calls, calls)


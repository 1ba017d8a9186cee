"""Eras: what the software of a published run could do, so the engine never credits a 2021 run
with 2024 features. Each era lists, per Plan field, the values it allows; the first is its
default. `era=None` allows everything the engine knows, with Plan's own defaults.

Sources: Narayanan et al. 2021 (Megatron-LM: 1F1B or interleaved with the scatter/gather
optimisation, interleaving needs more than two stages, full recompute, gradients reduced after
the backward with --DDP-impl local, blocking send/recv); DeepSpeed 2021 (ZeRO stages with
overlap_comm, its own 1F1B pipeline); Korthikanti et al. 2022 (+ sequence parallelism and
selective recompute); Megatron-Core 2024 (+ flash attention, the distributed optimizer = ZeRO-1,
gradient-reduce / param-gather / p2p / TP overlap, fp32 gradient reduction under bf16,
interleaving from two stages, NVLS); The Llama 3 Herd of Models 2024 Sec. 3.3.2 (FSDP sharding
gradients and optimizer state, fp32 gradient reduce-scatter, interleaving, no recomputation at
8K). Zero-bubble schedules (Qi et al. 2024) belong to no published era here: only era=None.

An era is also a software stack: besides what it allows, each row carries what its kernels and
runtime cost outside the GEMMs (engine v3), from the kernels' benchmarks and the frameworks'
code, never from an end-to-end run:
- attention_kernel: the fused attention it runs (labs.core.engine.gemm.ATTENTION_EFFICIENCY per GPU
  architecture): cuDNN through Transformer Engine (Megatron-Core), FlashAttention-2 (PyTorch's
  SDPA flash backend, flash-attn 2 in 2023 recipes).
- attention by sequence length: each kernel's rate rises with the length of a call
  (labs.core.engine.gemm.attention_rate); ring context parallelism calls it once a ring step on one
  chunk (s / cp tokens), so its calls are short ones.
- cp_merge_bytes: HBM bytes per attention output element, per ring step, that ring context
  parallelism spends merging the steps' partial results: (forward, backward). Transformer Engine
  (AttnFuncWithCPAndKVP2P, 2024): a fused correction kernel reads the step's BF16 output and reads
  and writes the FP32 accumulator (2 + 4 + 4 = 10); backward, the Q gradient and the K and V
  gradients travelling the ring accumulate in FP32 the same way (3 x 10 = 30). PyTorch
  (torch/distributed/tensor/experimental/_attention.py, 2.5-2.6: _SDPAMerger.step in eager ops):
  the step's output to FP32 (2 + 4), out - block_out (4 + 4 + 4), times sigmoid(lse difference)
  (4 + 4), out minus that (4 + 4 + 4) = 38; backward its gradient accumulations as TE's, 30
  (both counted from the code; the log-sum-exp's own bytes, one value a row of a head, left out).
- fp8_scaling and fp8_weight_cache: how the FP8 recipe quantizes (labs.core.engine.gemm.fp8_cast_time).
  Megatron-Core 2024 with Transformer Engine: delayed scaling (DelayedScaling, the amax history of
  past steps: the cast kernel reduces the amax in the same pass) and the FP8 weight cache (weights
  quantized on the first micro-batch of a step, is_first_microbatch). torchtitan with torchao's
  Float8Linear (2024-25): dynamic (current) tensor-wise scaling, an amax pass before each cast, and
  the weights quantized in every forward.
- grouped_gemm: how an MoE layer's local experts run (labs.core.engine.experts). "per_expert": one
  GEMM call an expert, each with its own waves and fixed cost and the loop's host time between
  calls (labs.core.engine.experts.PER_EXPERT_CALL_S): Megatron-Core 2024's GroupedMLP on the
  grouped_gemm library's default cuBLAS backend (tgale96/grouped_gemm, a loop of cuBLAS calls) and TE's
  GroupedLinear (cuBLAS per expert on several streams), torchtitan's 2024 MoE (a loop over experts).
  "grouped": one launch whose tiles share the waves (DeepGEMM's grouped kernels, CUTLASS grouped
  GEMM): today's stacks (era=None). "grouped_mm": torch._grouped_mm (torchtitan 2025), one launch
  at a measured share of DeepGEMM's rate (labs.core.engine.gemm.GROUPED_LAUNCH_SHARE).
- fused_elementwise: Megatron's and TE's hand-fused norms, RoPE, bias-GeLU/SwiGLU and
  bias-dropout-add, or eager PyTorch ops (labs.core.engine.gemm.elementwise_bytes_per_token); a plan's
  torch_compile=True fuses them too.
- kernels_per_layer and cpu_s_per_kernel: the kernels a layer's forward launches (its backward
  about twice as many) and the host time to issue each (PyTorch's dispatcher, autograd and
  cudaLaunchKernel: about 5-25 us an op on current CPUs and CUDA 12, the PyTorch dispatcher's
  layers summed). When a layer's kernels are shorter than that the GPU waits for the CPU: what a
  1-2B model pays on an H100 and a 100B one does not.
- loss_bytes_per_logit: HBM bytes the cross entropy moves per logit, forward and backward
  (Megatron's vocab-parallel cross entropy upcasts the logits to fp32 and makes about eight
  passes: 60; PyTorch's F.cross_entropy on .float() logits: 40; fused (torch.compile): 8).
- logits_bytes: (saved, peak) bytes per logit the loss keeps on the last pipeline rank, for the
  logits of b x s/cp tokens over V/t of the vocabulary. Megatron's vocab-parallel cross entropy
  (megatron/core/tensor_parallel/cross_entropy.py: calculate_logits_max upcasts the bf16 logits to
  an fp32 copy, exp and div run in place in it, ctx.save_for_backward(exp_logits, ...); backward
  turns the saved softmax into the gradient in place and the cast back to bf16 writes 2 bytes):
  4 saved, 6 at the peak (the bf16 logits beside the fp32 copy in the forward, the fp32 gradient
  beside its bf16 cast in the backward). PyTorch's F.cross_entropy(pred.float(), ...)
  (torchtitan components/loss.py): the fp32 copy (4) and log_softmax's output (4, the tensor its
  backward saves) beside the bf16 logits in the forward (10), and in the backward nll_loss's fp32
  gradient (4), log_softmax's (4) and the saved output (4): 4 saved, 12 at the peak.
  torch.compile fuses the loss (COMPILED_LOGITS_BYTES): the partitioner saves the bf16 logits and
  the per-token logsumexp, and the backward kernel writes the bf16 gradient: 2 saved, 4 at the peak.
  One micro-batch's loss is in flight under 1F1B and interleaving (the last rank runs each loss's
  backward right after its forward); GPipe keeps every micro-batch's saved part.
- tp_overlap_kind: "userbuffers" (TE: pipelined chunks on 16 SMs, all-gathers on copy engines),
  "async_tp" (PyTorch's micro-pipelined TP, torch.distributed._symmetric_memory: each all-gather
  + matmul and matmul + reduce-scatter split into tp steps on copy engines; the first step of
  each stays exposed; needs torch.compile in torchtitan) or "none".
- sp_regathers_input: whether, under sequence parallelism, the backward all-gathers again the
  inputs of the column-parallel linears (QKV, the dense MLP's first) for their weight gradients.
  Megatron (megatron/core/tensor_parallel/layers.py, LinearWithGradAccumulationAndAsyncCommunication
  saves only the sequence shard of its input and re-gathers it in backward, "overlapped" with the
  input-gradient GEMM) and Transformer Engine's Linear/LayerNormLinear (ub_bulk_dgrad) do; PyTorch's
  DTensor plans (torchtitan's ColwiseParallel after SequenceParallel) save the gathered input that
  the matmul used, so nothing is re-gathered (labs.core.engine.stages.parallel prices it) and the
  gathered input stays in memory (labs.core.engine.stages.memory: gathered_sp_inputs).
- dgrad_comm_behind_wgrad: whether the column-parallel linears' (QKV's, the dense MLP's first)
  backward launches the collective of its input gradient (the all-reduce, a reduce-scatter under
  SP) asynchronously and computes its weight gradient meanwhile, waiting for it after
  (labs.core.engine.stages.parallel prices it). Megatron: megatron/core/tensor_parallel/layers.py,
  LinearWithGradAccumulationAndAsyncCommunication.backward ("Asynchronous all-reduce" / "reduce
  scatter is scheduled before the weight gradient computation", then handle.wait()); in
  Megatron-LM since 2021-08-30 (NVIDIA/Megatron-LM cf7efd4, "allreduce overlap with wgrad gemm",
  on by default from 3f65246, 2021-09-02: --no-async-tensor-model-parallel-allreduce), the
  reduce-scatter since sequence parallelism (02bb1f5, 2022-03-02). Transformer Engine the same
  (transformer_engine/pytorch/module/linear.py and layernorm_linear.py, backward: "Overlap
  dgrad-RS/AR with wgrad"). Not in the code Narayanan et al. 2021 ran (their runs predate it:
  megatron-2021, and DeepSpeed's 2021 copy of it). Off for megatron-2022 too: until 2022-10-14
  the code only tried to get the collective scheduled before the GEMM, by a 3 us no-op kernel
  (bdd9731, "Remove noop used to try to force scheduling and check for environment variable
  instead": since then Megatron refuses to run without CUDA_DEVICE_MAX_CONNECTIONS=1, which
  makes the GPU start kernels in launch order), and Korthikanti et al.'s Table 4 layer times
  (A100, TP 8, no SP) are met with the backward's all-reduces waited for (backward +3.2%) and
  missed with them hidden (-9.3%; selective recompute +1.4% against -9.9%). PyTorch's DTensor
  plans do not: autograd's matmul backward computes both gradients in one node, and the
  redistribution of the input gradient (the reduce-scatter) runs after it. Llama 3's framework:
  not published, not credited.
- zero3_unit: what one ZeRO-3 all-gather fetches: "parameter" (DeepSpeed stage 3: every weight of
  at least stage3_param_persistence_threshold = 1e5 elements on its own; smaller ones stay
  whole on every rank; prefetch bounded by stage3_prefetch_bucket_size = 5e7 elements, so a
  weight of a 100B model is fetched one ahead: deepspeed/runtime/zero/config.py and
  partition_parameters.py, 2021), "module" (each of a layer's four weight matrices gathered on
  its own, asynchronously, the next one prefetched behind the current one's compute: the
  engine's ZeRO-3 where no stack says otherwise) or "layer" (FSDP: one flat parameter per
  wrapped transformer block, the next block's gathered during the current one's compute, and a
  root unit, the embedding, final norm and output layer, gathered first and reduce-scattered
  last, each waited for in full: labs.core.engine.stages.data).
- pp_p2p: "scatter_gather" (Megatron: each TP rank sends 1/t of the activation and the next
  stage all-gathers it over NVLink) or "full" (DeepSpeed's 2021 pipeline engine: every TP rank
  sends the whole activation).
- pipeline_overlaps_dp: DeepSpeed's 2021 PipelineEngine reduces gradients in a ReduceGrads
  instruction after the last micro-batch's backward (deepspeed/runtime/pipe/schedule.py,
  TrainSchedule, at c814abd), so with pp > 1 nothing of the reduction hides.
- optimizer_bytes_per_param: what the optimizer step streams per parameter it updates. Megatron's
  fused Adam with its fp32 main gradients: 42 (labs.core.engine.stages.optimizer.OPTIMIZER_BYTES_PER_PARAM).
  torch.optim.AdamW's default foreach path (torch/optim/adamw.py, _multi_tensor_adamw, PyTorch
  2.0-2.1) over fp32 shards: weight decay 8, lerp of m 12, v scaled 8 and addcmul 12, sqrt 8,
  div 8, add eps 8, addcdiv 16 = 80, plus clip_grad_norm_ (read 4, scale 8) and FSDP's bf16 cast
  of the shard (6): 98. fused=True (torchtitan): Adam reads weight, gradient, m, v and writes
  weight, m, v (28), plus clipping and the cast: 46.
- fsdp_s_per_unshard and fsdp_s_per_param: the host time FSDP's hooks take each time a unit (one
  wrapped transformer block) is unsharded for a pass and resharded after it (ZeRO-3: both passes):
  a fixed part per unit and a part per original parameter of the block
  (labs.core.engine.stages.compute.block_parameters). FSDP1 (PyTorch 2.1, use_orig_params=True, as
  torch.compile and per-parameter optimizer groups need): _writeback_orig_params (pre_unshard),
  _use_unsharded_views (unshard) and _use_sharded_views (reshard) loop over the original
  parameters, 1.071, 4.268 and 2.75 ms for 400 parameters, 20 us each in all (pytorch/pytorch#96958,
  a maintainer's microbenchmark; with the default safe setattr the unsharded views took 6.112 ms,
  so 20 us is the low end); around them the unit's host ops (flat_param.py and
  _runtime_utils.py: the low-precision shard's allocation and cast, the stream waits, the rate
  limiter's event sync, the unsharded flat parameter's allocation, the all-gather, the shard's free;
  after the pass record_stream, the free and the limiter's event record): 11 ops at
  cpu_s_per_kernel. FSDP2 (PyTorch 2.5): 0.37 ms of host time for one Llama 3 8B block's
  all-gather (copy-in as three foreach dispatches, the collective, copy-out), measured in
  pytorch/pytorch#133369; its copy-in and copy-out are foreach ops (the copy-out's per-parameter
  storage allocations are inside the measured 0.37 ms), so nothing per parameter in the unshard.
  Its reshard (FSDPParamGroup.reshard -> FSDPParam.to_sharded, PyTorch 2.4-2.5) loops over the
  parameters: the sharded DTensor put back in the module's _parameters (a dict store) and
  free_unsharded_param, one storage resize_(0) a parameter through the caching allocator. No
  maintainer has measured it: charged as 1 op a parameter at HOST_S_PER_OP, as FSDP1's fixed ops are.
  Not charged: both stacks' post-backward reduce-scatter host work (FSDP1's 2.0 code, before #96958,
  was slower still: 12.6 ms for the 400 parameters) and FSDP1's gradient-view loops
  (_use_sharded_grad_views, _use_unsharded_grad_views), for want of a measurement. Other
  stacks: 0 (Megatron's contiguous buffers run no per-module hooks).
- fsdp_kept_s_per_param and fsdp_kept_s_per_pass: the same hooks in each forward and backward of a
  unit kept unsharded from its forward to its backward (ZeRO-2: SHARD_GRAD_OP,
  reshard_after_forward=False), whose gathers (fsdp_s_per_unshard, labs.core.engine.stages.inputs:
  forward_unshards) are not every pass's. FSDP1 (PyTorch 2.1, after pytorch/pytorch#98250):
  every forward writes back and swaps to the unsharded views, gathered or not (FlatParamHandle.unshard
  switches to them when needs_unshard() is False); the post-forward reshard skips
  _use_sharded_views (_use_sharded_flat_param: skip_use_sharded_views), so the pre-backward hook,
  which still calls _unshard (_needs_pre_backward_unshard is set for every unit whose output needs a
  gradient), runs only the writeback loop (#98250's profile of that hook: 4.356 ms before the skip,
  1.044 ms after, its model not stated, so the charge takes #96958's loops), and every post-backward
  reshard, freeing or not, switches to the sharded views: (1.071 + 4.268, 1.071 + 2.75) ms per 400
  parameters. A pass that does not gather still runs 2 ops (post_unshard's record_stream of the
  freed low-precision shard, the compute stream's wait on the unshard stream); the gather's 11 are
  charged to the forward that gathers, though its last three (record_stream, free, event record)
  run in the backward that frees. FSDP2: pre_backward's unshard is a no-op on an unsharded group and the
  post-forward reshard returns at once (not _reshard_after_forward); post_backward reshards
  (reshard_after_backward, default True: fsdp_reshard_after_backward) as under ZeRO-3: (0, 1 op)
  a parameter, nothing fixed.
- fsdp_unshard_bytes, fsdp_shard_bytes and fsdp_grad_bytes: HBM bytes FSDP's own copies move per
  parameter of a unit, outside the collectives (labs.core.engine.stages.compute charges them to the
  layer). Each unshard: fsdp_unshard_bytes per parameter of the whole unit and fsdp_shard_bytes per
  parameter of this rank's shard; each gradient reduction: fsdp_grad_bytes per parameter of the
  unit, (bf16, fp32) by the reduce dtype. Counted from the code: FSDP1 (torch/distributed/fsdp,
  PyTorch 2.1: _flat_param.py, _runtime_utils.py) casts the fp32 shard to the bf16 all-gather input
  (_use_low_precision_shard: read 4, write 2 = 6 a shard parameter) and gathers straight into the
  flat parameter, whose original parameters are views (nothing per unit parameter); its backward
  runs through torch.split's backward, a torch.cat of the views' gradients into the flat gradient
  (read 2, write 2), then on the post-backward stream the cast to an fp32 reduce dtype (read 2,
  write 4) and the pre-divide (tensor.div_ by _gradient_predivide_factor, > 1 for any world size
  above 1: read and write the reduce dtype): 2 + 2 + 2 + 2 = 8 in bf16, 4 + 6 + 8 = 18 in fp32.
  FSDP2 (torch/distributed/_composable/fsdp/_fsdp_collectives.py, foreach_all_gather and
  foreach_all_gather_copy_out) casts each fp32 shard to bf16 (read 4, write 2) and copies it into
  the all-gather input with torch._foreach_copy_ (read 2, write 2): 10 a shard parameter; after the
  gather, torch.split_with_sizes_copy copies the whole output into each parameter's own storage
  on the compute stream (read 2, write 2 = 4 a unit parameter, every unshard); its
  foreach_reduce_scatter_copy_in torch.cats the bf16 gradients into the reduce-scatter input in
  the reduce dtype (read 2, write 2 or 4: 4 in bf16, 6 in fp32), with no divide kernel in bf16 or
  fp32 (_get_gradient_divide_factors: NCCL's ReduceOp.AVG; the 2024 code pre-divided). The copies
  that run on FSDP's side streams (the casts, the copy-ins, the divides) run on streams created
  with high priority, so their blocks take the SMs ahead of the GEMM's: each is charged its own
  HBM time. Not charged: the shard-sized accumulation of a second micro-batch's gradient shard.
- fsdp_reshard_after_backward: after which backwards PyTorch's FSDP frees a unit's gathered weights,
  so that under ZeRO-2 (SHARD_GRAD_OP, reshard_after_forward=False) the next forward gathers them
  again, unit by unit, the root unit first (labs.core.engine.stages.inputs: forward_unshards). "reducing":
  FSDP1 frees them after a backward that reduces (_runtime_utils._should_free_in_backward:
  `state._sync_gradients or` a reshard-after-forward strategy), so under no_sync it gathers once a
  step. "every": FSDP2's FSDPParamGroup.post_backward reshards whenever reshard_after_backward is
  set, its default, whether or not the backward reduces (set_requires_gradient_sync(False) only
  skips the reduce-scatter), so it gathers every micro-batch. "never": the weights stay gathered
  through the step (Llama 3's FSDP, Megatron's distributed optimizer).
- grad_sync: gradients reduced once a step (DDP no_sync, Megatron's accumulation into main_grad)
  or every micro-batch; None is the ZeRO stage's own way (once a step up to ZeRO-1, every
  micro-batch from ZeRO-2, DeepSpeed's and FSDP's default).
- accumulated_grad_dtype: the dtype of the whole gradients a step that reduces once (grad_sync
  "step" from ZeRO-2) keeps between its micro-batches. "reduce": the reduce dtype (FSDP2's
  FSDPParam.to_accumulated_grad_if_needed casts the unsharded gradient to reduce_dtype before
  accumulating; Megatron accumulates into its main_grad buffer). "param": FSDP1 leaves each unit's
  unsharded gradient in flat_param.grad in the dtype the backward computed it in, the low-precision
  param_dtype (torch/distributed/fsdp/_runtime_utils.py, _post_backward_hook returns before the
  cast to _reduce_dtype when not state._sync_gradients; _finalize_params: "`.grad` remains the
  unsharded gradient from prior `no_sync()` iterations"; _flat_param.py _use_unsharded_grad_views:
  "`view` can have the parameter low precision dtype"): 2 bytes a parameter under bf16 mixed
  precision whatever the reduce dtype.
- pp_grad_sync: how the stack's pipeline schedules reduce gradients when pp > 1 and the plan leaves
  grad_sync to the stack (None: the ZeRO stage's own way, as above). "step": torch.distributed.
  pipelining (PyTorch 2.4+, torchtitan) runs every backward but a stage's last one with FSDP's
  set_requires_gradient_sync(False) and set_reshard_after_backward(False)
  (stage.py, _PipelineStageBase.backward_maybe_with_nosync), so the unsharded gradients accumulate
  (in the reduce dtype: FSDPParam.to_accumulated_grad_if_needed) and are reduce-scattered once a
  step, and the weights stay unsharded through the step's backwards.
- pp_keeps_outputs: whether a pipeline stage's output stays allocated until that chunk's backward.
  torch.distributed.pipelining keeps it: forward_one_chunk stores (output_tuple, its inputs) in
  fwd_cache until backward_one_chunk pops them (stage.py), one output (b x s/cp x h in bf16, over
  t under SP) a chunk in flight. Megatron frees the output's storage once it is sent
  (schedules.py deallocate_output_tensor, deallocate_pipeline_outputs set by Megatron-LM's
  training arguments; the autograd graph needs only its grad_fn), and Llama 3 frees "the input and
  output tensors of each pipeline stage, that will not be used for future computation" (Sec.
  3.3.2). A stage's input is its first layer's input, which that layer keeps anyway (counted in
  the layer's activations).
- pp_frees_stage_inputs: whether each chunk's input (its first layer's input, the residual
  stream: b x s/cp x h in bf16, over t under SP) is freed once the chunk's forward has run. Llama 3
  deallocates "the input and output tensors of each pipeline stage, that will not be used for
  future computation" (Sec. 3.3.2): the first layer's norm can run its backward from its output
  (which the next GEMM keeps) and its statistics, as a memory-efficient norm does (apex's
  FusedRMSNorm memory_efficient=True saves the output instead of the input), so the input is
  not needed. Megatron and torch keep it (input_tensors / fwd_cache).
- allocator_fragmentation: memory the caching allocator holds beyond what is allocated, as a share
  of the activations (the memory it churns). PyTorch's caching allocator as shipped: 15% on
  average across eight LLM trainings on A100 80GB (GMLake, ASPLOS 2024, the share its virtual-
  memory stitching recovers). torchtitan launches with PYTORCH_ALLOC_CONF="expandable_segments:True"
  (run_train.sh), PyTorch's own virtual-memory segments (c10/cuda/CUDACachingAllocator.cpp,
  ExpandableSegment: one reserved range that grows by mapped pages), the mechanism GMLake measured:
  0. Llama 3 (Sec. 3.3.2) profiled its allocations and freed what no later computation used, and
  set TORCH_NCCL_AVOID_RECORD_STREAMS against the memory that asynchronous send/recv kept in the
  allocator: charged 0 too (what it still held is not published).
- nccl_pat: whether the stack's NCCL has PAT, the logarithmic reduce-scatter and all-gather for
  groups of one GPU per node (labs.core.engine.topology). PAT came with NCCL 2.23.4 (NVIDIA/nccl commit
  68b5423, 2024-09-10, "Add PAT algorithms for Allgather and ReduceScatter"; nvidia-nccl-cu12
  2.23.4 on PyPI 2024-09-11). No named stack has it: the 2021-2023 stacks predate it; PyTorch's
  wheels pinned NCCL 2.20.5 (2.4) and 2.21.5 (2.5) until pytorch/pytorch#146073 moved to 2.25.1
  in 2025 (FSDP2 2024); Llama 3's runs (NCCLX, a fork of NCCL, before its July 2024 paper) and
  Megatron-Core's 2024 recipes ran before it (if a late-2024 NeMo container shipped 2.23, that
  one recipe is not told apart). era=None (today's software, TODAY_STACK) has it.
- hybrid_sharding: whether Plan.shard_group_size (ZeRO/FSDP state sharded over a group, replicated
  across groups) existed: "all", "dense" (not with routed experts) or "none". DeepSpeed's stage 3
  of 2021 sharded over the whole data-parallel group; its hybrid forms came later (MiCS,
  arXiv:2205.00119, 2022; ZeRO++'s hpZ, arXiv:2306.10209, 2023). Megatron-Core added hybrid
  sharding for MoE models in Core v0.13, 2025/07 (--num-distributed-optimizer-instances;
  megatron/core/transformer/moe/README.md); its dense form is not dated here and stays allowed.
  PyTorch FSDP1 has had HYBRID_SHARD since 2.0 and FSDP2 HSDP from its start.

The stacks of 2025-26 (issue #36 item 6) add five mechanisms, each a field:
- cuda_graphs: "none", "layer" or "iteration". Megatron-Core's --cuda-graph-impl local (CudaGraphManager)
  or transformer_engine (TE make_graphed_callables) captures each transformer layer's forward and
  backward as a graph (NVIDIA/Megatron-LM docs/user-guide/features/cuda_graph.md); full_iteration
  captures the step but the optimizer. A replayed graph costs the host one launch
  (CUDA_GRAPH_LAUNCH_S) instead of a dispatch per kernel. MoE layers are captured only in part
  (attention, router and preprocess: "expert dispatch involves dynamic shapes and cannot be
  captured"), so their expert part launches eagerly (MOE_EAGER_KERNELS), under "iteration" too
  (whole-step capture of MoE needs the dev branch's paged stash). Memory: TE's path keeps static
  input tensors for each (layer, micro-batch) pair in flight, reused only after that micro-batch's
  backward (megatron/core/transformer/cuda_graphs.py, TECudaGraphHelper._get_sample_arguments):
  CUDA_GRAPH_STATIC_INPUTS layer inputs per layer and micro-batch held
  (labs.core.engine.stages.memory.rank_activations).
- a2a_link_share: (scale-up, scale-out) rate of the stack's expert dispatch and combine over the
  link's achieved rate (Link.effective_bytes_per_s: NCCL's large-message ring bus bandwidth).
  NCCL's own all-to-all (torch.distributed.all_to_all_single, Megatron's alltoall dispatcher) runs
  below the ring inside an NVLink domain: on 8 H100s, 128 tokens a GPU of DeepSeek-V3's layer
  padded to every expert (256 x 128 x 7,392 B = 242,221,056 B a GPU), 699.9 us (ppl-ai/pplx-kernels
  README, "Torch AtA", EP 8; tests/bench_all_to_all.py sizes the buffer), a bus bandwidth of 7/8 x
  242.2 MB / 699.9 us = 302.8 GB/s against the ring's 370 (hardware.LINKS nvlink4): NCCL_LINK_SHARE's
  0.818, measured on NVLink 4 and taken for every NVLink generation. Across nodes it reaches the
  NIC: nccl-tests all-to-all on 2 DGX H100s with NVLink off, 46 GB/s bus bandwidth over 400G NICs
  (deepseek-ai/DeepEP#3) against the engine's 47 (1.0). DeepEP's normal kernels on H800 (deepseek-ai/DeepEP
  docs/legacy.md, "Normal kernels with NVLink and RDMA forwarding", 4,096 tokens, hidden 7,168,
  top-8, FP8 dispatch, BF16 combine): intranode EP 8 dispatch 153 and combine 158 GB/s of "~160 GB/s
  NVLink maximum"; internode EP 16 / 32 / 64 dispatch 43 / 58 / 51, combine 43 / 57 / 50 GB/s of
  CX7's "~50 GB/s maximum" (the README's bottleneck bandwidth is logical: above 50 where local
  traffic is counted). DEEPEP_LINK_SHARE holds the rows and the shares derived from them: inside a
  node DeepEP moves 0.972 / 0.818 = 1.19 times NCCL's all-to-all's bytes a second. DeepEP's
  IB-then-NVLink forwarding the engine credits every stack with (labs.core.engine.experts._routes).
  RCCL's all-to-all over Instinct's mesh (a direct send on each of the 7 links) has no row: the
  ROCm stack keeps the links' achieved rate (1, 1).
- moe_a2a_overlap: Megatron-Core's EP A2A overlap (--overlap-moe-expert-parallel-comm
  --delay-wgrad-compute, megatron/core/transformer/moe/README.md: "merging FWD-BWD passes of
  adjacent microbatches"; Core 2025-08, !3470 "Support EP A2A overlap at PP=1"): under 1F1B the
  steady state's forward of one micro-batch runs beside the backward of another, each one's
  dispatch and combine hidden behind the other's compute, as DualPipe's pairs are
  (labs.core.engine.stages.pipe).
- fp8_param_gather: under FP8 GEMMs the weights are all-gathered in FP8 (1 byte a parameter instead
  of 2) and cast on the shard before the gather: Megatron's --fp8-param-gather ("perform the param
  all-gather in fp8", megatron/training/arguments.py; the MoE README: "50% parameter all-gather with
  FP8 primary weights (except MXFP8)") and torchao's Float8LinearConfig.enable_fsdp_float8_all_gather
  under FSDP2 (torchao/float8/fsdp_utils.py: WeightWithDynamicFloat8CastTensor's
  fsdp_pre_all_gather casts the shard, precompute_float8_dynamic_scale_for_fsdp one all-reduce of the
  amaxes). The embedding, the output layer and the norms are no Float8Linear and stay in BF16.
- vendor: "nvidia" or "amd": the GPUs a stack's kernels are built for
  (labs.core.engine.eras.check_stack_on_gpu). The ROCm stack runs Megatron-LM on AMD's forks
  (ROCm/Megatron-LM, ROCm/TransformerEngine: "Fused Attention with AOTriton and CK backends", FP8
  recipes, hipBLASLt "the only" GEMM backend, HipGraph "partially supported", no userbuffers
  TP overlap listed) over RCCL (no NVLS: no NVLink switch; no PAT).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from labs.core.engine.collectives import busbw_from_algbw
from labs.core.engine.gemm import ATTENTION_KERNELS
from labs.core.engine.hardware import LINKS
from labs.core.engine.validation import check_choice, check_positive


# Host time to issue one op: PyTorch's dispatcher, autograd and cudaLaunchKernel (module docstring).
HOST_S_PER_OP = 10e-6
# FSDP's hooks (module docstring): host ops per unit around an unshard + reshard in FSDP1, the time
# per original parameter of its three loops (pytorch/pytorch#96958, 400 parameters: the writeback,
# the unsharded views, the sharded views) and FSDP2's measured all-gather host time for a Llama 3
# 8B block (pytorch/pytorch#133369); FSDP2's reshard, unmeasured, as one op (a storage free) a parameter.
FSDP1_OPS_PER_UNSHARD = 11
FSDP1_WRITEBACK_S, FSDP1_UNSHARDED_VIEWS_S, FSDP1_SHARDED_VIEWS_S = 1.071e-3 / 400, 4.268e-3 / 400, 2.75e-3 / 400
FSDP1_S_PER_PARAM = FSDP1_WRITEBACK_S + FSDP1_UNSHARDED_VIEWS_S + FSDP1_SHARDED_VIEWS_S
# ZeRO-2 keeps the unit unsharded from forward to backward: the forward writes back and swaps to the
# unsharded views, the backward writes back and swaps to the sharded views; a pass that does not
# gather runs 2 host ops (record_stream of the freed bf16 shard, the wait on the unshard stream).
FSDP1_KEPT_S_PER_PARAM = (FSDP1_WRITEBACK_S + FSDP1_UNSHARDED_VIEWS_S, FSDP1_WRITEBACK_S + FSDP1_SHARDED_VIEWS_S)
FSDP1_KEPT_OPS_PER_PASS = 2
FSDP2_S_PER_UNSHARD = 0.37e-3
FSDP2_OPS_PER_PARAM_RESHARD = 1
# FSDP's HBM copies per parameter (module docstring): per unshard, of the whole unit and of this
# rank's shard; per gradient reduction, of the unit, with a bf16 and an fp32 reduce dtype.
FSDP1_SHARD_BYTES, FSDP1_GRAD_BYTES = 4 + 2, (2 + 2 + 2 + 2, 2 + 2 + 2 + 4 + 4 + 4)
FSDP2_UNSHARD_BYTES, FSDP2_SHARD_BYTES, FSDP2_GRAD_BYTES = 2 + 2, 4 + 2 + 2 + 2, (2 + 2, 2 + 4)

# CUDA graphs (module docstring: cuda_graphs). A replayed graph: about 15 us of fixed cost (and
# 0.58 us a node, the kernels' own GPU time covers it) against 6.4 us a kernel launched one by one,
# on chains of 8-117 kernels (ahrefs/ocannl#488: graph + sync 19.4 us at 8 nodes, 82.9 us at 117;
# RTX 5070 Ti, CUDA 13.3; the sync inside the fixed part, so an upper bound on the host's share).
CUDA_GRAPHS = ("none", "layer", "iteration")
CUDA_GRAPH_LAUNCH_S = 15e-6
CUDA_GRAPH_REPLAY_ROWS = ((8, 51.9e-6, 19.4e-6), (16, 119.3e-6, 25.6e-6), (24, 159.1e-6, 28.7e-6), (36, 233.5e-6, 37.9e-6),
                          (64, 411.7e-6, 49.1e-6), (117, 735.4e-6, 82.9e-6))  # (kernels, launched one by one, one graph), s
# An MoE layer's part no graph captures, one kernel a stage of MoELayer's forward with the flex
# dispatcher and fused permutation (megatron/core/transformer/moe/moe_layer.py: token_dispatch,
# dispatch_postprocess's permute, the experts' grouped fc1, activation and grouped fc2,
# combine_preprocess's unpermute, token_combine; combine_postprocess a reshape, no kernel); its
# graphs: attention and router + preprocess (cuda_graph.md's MoE example), two a layer.
MOE_EAGER_KERNELS = 7
MOE_LAYER_GRAPHS = 2
# TE's graphs keep a static copy of each layer's input per micro-batch in flight (module docstring).
CUDA_GRAPH_STATIC_INPUTS = 1.0
# DeepEP's normal kernels on H800 (module docstring: a2a_link_share): (EP, dispatch GB/s, combine
# GB/s) and each link's maximum as DeepEP's README states it. The scale-up share is the mean of
# dispatch and combine over NVLink's maximum; the scale-out share the median over the EP sizes,
# capped at the NIC's line (logical bandwidth above it counts traffic that stays on the node).
DEEPEP_NVLINK_ROWS, DEEPEP_NVLINK_MAX = ((8, 153.0, 158.0),), 160.0
DEEPEP_RDMA_ROWS, DEEPEP_RDMA_MAX = ((16, 43.0, 43.0), (32, 58.0, 57.0), (64, 51.0, 50.0)), 50.0


def _deepep_link_share() -> tuple[float, float]:
    nvlink = sum(d + c for _, d, c in DEEPEP_NVLINK_ROWS) / (2 * len(DEEPEP_NVLINK_ROWS)) / DEEPEP_NVLINK_MAX
    rdma = sorted((d + c) / 2 for _, d, c in DEEPEP_RDMA_ROWS)[len(DEEPEP_RDMA_ROWS) // 2] / DEEPEP_RDMA_MAX
    return nvlink, min(1.0, rdma)


DEEPEP_LINK_SHARE = _deepep_link_share()  # (0.972, 1.0)
# NCCL's all-to-all on 8 H100s (module docstring: a2a_link_share): pplx-kernels' "Torch AtA" row, EP 8,
# 128 tokens a GPU: (bytes a GPU, seconds); its bus bandwidth over NVLink 4's achieved ring rate.
NCCL_A2A_H100_ROW = (256 * 128 * (7168 + 7168 // 128 * 4), 699.9e-6)  # FP8 values and an fp32 scale per 128


def nccl_a2a_busbw(row=NCCL_A2A_H100_ROW, ranks: int = 8) -> float:
    """nccl-tests' bus bandwidth of an all-to-all row: (ranks - 1) / ranks of the buffer over the time."""
    nbytes, seconds = row
    return busbw_from_algbw("all_to_all", nbytes / seconds, ranks)


NCCL_LINK_SHARE = (nccl_a2a_busbw() / LINKS["nvlink4"].effective_bytes_per_s, 1.0)  # (0.818, 1.0)
LINK_RATE_SHARE = (1.0, 1.0)  # the links' achieved rate, where no all-to-all row prices the stack's own (RCCL)
VENDORS = ("nvidia", "amd")


@dataclass(frozen=True)
class Era:
    name: str
    schedule: tuple[str, ...]
    interleave_min_pp: int
    recompute: tuple[str, ...]
    sequence_parallel: tuple[bool, ...]
    flash_attention: tuple[bool, ...]
    zero_stage: tuple[int, ...]
    tp_comm_overlap: tuple[bool, ...]
    grad_reduce_dtype: tuple[str, ...]
    dp_overlap: tuple[bool, ...]
    pp_overlap: tuple[bool, ...]
    dp_algorithm: tuple[str, ...]
    cp_algorithm: tuple[str, ...] = ("ring", "all_gather")
    max_cp: int = 1  # context parallelism came with Megatron-Core / TE (2024) and Llama 3
    precision: tuple[str, ...] = ("bf16",)  # FP8 GEMMs: Transformer Engine on Hopper
    grad_sync: tuple = (None, "step", "microbatch")
    torch_compile: tuple[bool, ...] = (False,)
    max_pp: int = 1 << 20
    # ---- the stack's costs outside the GEMMs (see the module docstring) ----
    attention_kernel: str = "cudnn"
    fused_elementwise: bool = True
    kernels_per_layer: int = 12
    cpu_s_per_kernel: float = HOST_S_PER_OP
    loss_bytes_per_logit: float = 60.0
    logits_bytes: tuple[float, float] = (4.0, 6.0)  # (saved, peak) per logit: Megatron's vocab-parallel cross entropy
    tp_overlap_kind: str = "userbuffers"
    sp_regathers_input: bool = True  # SP's backward all-gathers the column-parallel linears' inputs again (module docstring)
    dgrad_comm_behind_wgrad: bool = True  # the column-parallel linears' input-gradient collective runs beside their weight-gradient GEMM
    zero3_unit: str = "module"
    pp_p2p: str = "scatter_gather"
    pipeline_overlaps_dp: bool = True  # False: a pipelined step reduces gradients after the flush
    optimizer_bytes_per_param: float = 42.0  # HBM bytes the optimizer step moves per parameter it updates
    fsdp_s_per_unshard: float = 0.0  # host seconds of FSDP's hooks per unit, per unshard + reshard
    fsdp_s_per_param: float = 0.0  # and per original parameter of the unit
    fsdp_kept_s_per_param: tuple[float, float] = (0.0, 0.0)  # (forward, backward), per parameter, of a unit kept unsharded (ZeRO-2)
    fsdp_kept_s_per_pass: float = 0.0  # and per unit, each such pass that does not gather
    fsdp_unshard_bytes: float = 0.0  # HBM bytes of FSDP's copies per unit parameter, per unshard
    fsdp_shard_bytes: float = 0.0  # and per parameter of the rank's shard, per unshard
    fsdp_grad_bytes: tuple[float, float] = (0.0, 0.0)  # per unit parameter, per gradient reduction (bf16, fp32)
    fsdp_reshard_after_backward: str = "never"  # ZeRO-2's gathers: after "every" backward, a "reducing" one, or "never"
    accumulated_grad_dtype: str = "reduce"  # whole gradients kept under grad_sync "step": "reduce" or "param" dtype (module docstring)
    nccl_pat: bool = False  # NCCL 2.23+: PAT for reduce-scatter and all-gather at one GPU per node (module docstring)
    hybrid_sharding: str = "all"  # Plan.shard_group_size: "all", "dense" (no routed experts) or "none" (module docstring)
    cp_merge_bytes: tuple[float, float] = (10.0, 30.0)  # ring CP's merges, bytes per output element a step (forward, backward)
    fp8_scaling: str = "delayed"  # "delayed" (TE's DelayedScaling) or "current" (an amax pass before each cast)
    fp8_weight_cache: bool = True  # FP8 weights quantized once a step (TE, is_first_microbatch) or every micro-batch
    grouped_gemm: str = "per_expert"  # MoE experts: "per_expert" (a GEMM call each), "grouped" or "grouped_mm" (one launch)
    pp_grad_sync: str | None = None  # under pp > 1, grad_sync=None's meaning: None (the ZeRO stage's own) or "step"
    pp_keeps_outputs: bool = False  # a stage's output allocated until its backward (torch.distributed.pipelining)
    pp_frees_stage_inputs: bool = False  # each chunk's input freed after its forward (Llama 3)
    allocator_fragmentation: float = 0.15  # of the activations (module docstring)
    cuda_graphs: str = "none"  # "none", "layer" (a graph a layer a pass) or "iteration" (module docstring)
    a2a_link_share: tuple[float, float] = NCCL_LINK_SHARE  # expert dispatch/combine rate over the link's achieved (scale-up, scale-out)
    moe_a2a_overlap: bool = False  # 1F1B pairs a forward with another micro-batch's backward to hide their all-to-alls
    fp8_param_gather: bool = False  # under FP8 GEMMs the weights are all-gathered in FP8
    vendor: str = "nvidia"  # the GPUs its kernels run on: "nvidia" (CUDA) or "amd" (ROCm)
    source: str = ""
    unconfirmed: tuple[str, ...] = ()  # "field: assumption", each constant no row backs (tests/test_unconfirmed.py)

    def __post_init__(self):
        check_choice("attention_kernel", self.attention_kernel, ATTENTION_KERNELS)
        check_choice("tp_overlap_kind", self.tp_overlap_kind, TP_OVERLAP_KINDS)
        check_choice("zero3_unit", self.zero3_unit, ZERO3_UNITS)
        check_choice("pp_p2p", self.pp_p2p, PP_P2P)
        check_positive("kernels_per_layer", self.kernels_per_layer, integer=True, maximum=10_000)
        check_positive("cpu_s_per_kernel", self.cpu_s_per_kernel, allow_zero=True, maximum=1.0)
        check_positive("loss_bytes_per_logit", self.loss_bytes_per_logit, allow_zero=True, maximum=1000)
        check_positive("optimizer_bytes_per_param", self.optimizer_bytes_per_param, maximum=1000)
        check_positive("fsdp_s_per_unshard", self.fsdp_s_per_unshard, allow_zero=True, maximum=1.0)
        check_positive("fsdp_s_per_param", self.fsdp_s_per_param, allow_zero=True, maximum=1.0)
        if not isinstance(self.fsdp_kept_s_per_param, tuple) or len(self.fsdp_kept_s_per_param) != 2:
            raise ValueError(f"fsdp_kept_s_per_param must be a pair (forward, backward) of seconds >= 0, got {self.fsdp_kept_s_per_param!r}")
        for seconds in self.fsdp_kept_s_per_param:
            check_positive("fsdp_kept_s_per_param", seconds, allow_zero=True, maximum=1.0)
        check_positive("fsdp_kept_s_per_pass", self.fsdp_kept_s_per_pass, allow_zero=True, maximum=1.0)
        check_positive("fsdp_unshard_bytes", self.fsdp_unshard_bytes, allow_zero=True, maximum=1000)
        check_positive("fsdp_shard_bytes", self.fsdp_shard_bytes, allow_zero=True, maximum=1000)
        if not isinstance(self.fsdp_grad_bytes, tuple) or len(self.fsdp_grad_bytes) != 2:
            raise ValueError(f"fsdp_grad_bytes must be a pair (bf16, fp32) of numbers >= 0, got {self.fsdp_grad_bytes!r}")
        for grad_bytes in self.fsdp_grad_bytes:
            check_positive("fsdp_grad_bytes", grad_bytes, allow_zero=True, maximum=1000)
        check_choice("fsdp_reshard_after_backward", self.fsdp_reshard_after_backward, FSDP_RESHARDS)
        check_choice("accumulated_grad_dtype", self.accumulated_grad_dtype, ACCUMULATED_GRAD_DTYPES)
        check_choice("hybrid_sharding", self.hybrid_sharding, HYBRID_SHARDINGS)
        check_choice("fp8_scaling", self.fp8_scaling, FP8_SCALINGS)
        check_choice("grouped_gemm", self.grouped_gemm, GROUPED_GEMMS)
        if not isinstance(self.cp_merge_bytes, tuple) or len(self.cp_merge_bytes) != 2:
            raise ValueError(f"cp_merge_bytes must be a pair (forward, backward) of bytes >= 0, got {self.cp_merge_bytes!r}")
        for merge_bytes in self.cp_merge_bytes:
            check_positive("cp_merge_bytes", merge_bytes, allow_zero=True, maximum=1000)
        check_choice("pp_grad_sync", self.pp_grad_sync, GRAD_SYNCS)
        check_positive("allocator_fragmentation", self.allocator_fragmentation, allow_zero=True, maximum=1.0)
        if not isinstance(self.logits_bytes, tuple) or len(self.logits_bytes) != 2 or not self.logits_bytes[0] <= self.logits_bytes[1]:
            raise ValueError(f"logits_bytes must be a pair (saved, peak) of bytes per logit with saved <= peak, got {self.logits_bytes!r}")
        for logit_bytes in self.logits_bytes:
            check_positive("logits_bytes", logit_bytes, maximum=100)
        check_choice("cuda_graphs", self.cuda_graphs, CUDA_GRAPHS)
        if not isinstance(self.unconfirmed, tuple) or not all(isinstance(n, str) and ": " in n for n in self.unconfirmed):
            raise ValueError(f"unconfirmed must be a tuple of 'field: assumption' notes, got {self.unconfirmed!r}")
        check_choice("vendor", self.vendor, VENDORS)
        if not isinstance(self.a2a_link_share, tuple) or len(self.a2a_link_share) != 2:
            raise ValueError(f"a2a_link_share must be a pair (scale-up, scale-out) of shares in (0, 1], got {self.a2a_link_share!r}")
        for share in self.a2a_link_share:
            check_positive("a2a_link_share", share, maximum=1.0)
        for name in ("moe_a2a_overlap", "fp8_param_gather", "sp_regathers_input", "dgrad_comm_behind_wgrad"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.fsdp_reshard_after_backward != "never" and self.zero3_unit != "layer":
            raise ValueError("fsdp_reshard_after_backward needs zero3_unit='layer' (FSDP's units)")

    def defaults(self) -> dict:
        return {name: getattr(self, name)[0] for name in ERA_FIELDS}


ERA_FIELDS = (
    "schedule", "recompute", "sequence_parallel", "flash_attention", "zero_stage", "tp_comm_overlap",
    "grad_reduce_dtype", "dp_overlap", "pp_overlap", "dp_algorithm", "cp_algorithm", "precision",
    "grad_sync", "torch_compile",
)
TP_OVERLAP_KINDS = ("userbuffers", "async_tp", "none")
ZERO3_UNITS = ("parameter", "module", "layer")
PP_P2P = ("scatter_gather", "full")
FSDP_RESHARDS = ("never", "reducing", "every")  # Era.fsdp_reshard_after_backward
ACCUMULATED_GRAD_DTYPES = ("reduce", "param")  # Era.accumulated_grad_dtype
HYBRID_SHARDINGS = ("all", "dense", "none")  # Era.hybrid_sharding
FP8_SCALINGS = ("delayed", "current")  # Era.fp8_scaling (labs.core.engine.gemm.FP8_AMAX_READ_BYTES)
GROUPED_GEMMS = ("per_expert", "grouped", "grouped_mm")  # Era.grouped_gemm
GRAD_SYNCS = (None, "step", "microbatch")
# Kernels a transformer layer's forward launches, counted from each stack's layer code (Llama-style
# layer; a GPT layer differs by one or two): Megatron-LM 2021 (LayerNorm, QKV, two baddbmm and the
# fused scale-mask-softmax, dropout, projection, bias-dropout-add, LayerNorm, fc1, bias-GeLU, fc2,
# bias-dropout-add): 14; Transformer Engine (LayerNormLinear, fused RoPE, fused attention,
# projection, bias-dropout-add, LayerNormMLP's norm, fc1, SwiGLU, fc2, bias-dropout-add): 12; eager
# PyTorch (torchtitan / HF Llama: 2 RMSNorms of 7 ops, q, k, v, o, about 10 RoPE ops, SDPA and
# its transposes, 2 residual adds, w1, w3, silu, mul, w2): 40; torch.compile (the 7 GEMMs,
# attention and about 6 fused Triton kernels): 14.
EAGER_KERNELS_PER_LAYER = 40
COMPILED_KERNELS_PER_LAYER = 14
COMPILED_LOSS_BYTES_PER_LOGIT = 8.0  # read bf16 logits, write bf16 gradient, both passes fused
# The loss's memory per logit, (saved, peak) (module docstring: logits_bytes): PyTorch's eager
# F.cross_entropy on .float() logits, and the loss under torch.compile.
EAGER_LOGITS_BYTES = (4.0, 12.0)
COMPILED_LOGITS_BYTES = (2.0, 4.0)

F, T = False, True
ERAS: dict[str, Era] = {
    #                       schedule                             min pp  recompute                        SP      flash   ZeRO          TP ovl  grads              DP ovl  PP ovl  DP algorithm
    "megatron-2021": Era("megatron-2021", ("interleaved", "1f1b"), 3, ("full", "none"), (F,), (F,), (0,), (F,), ("bf16",), (F,), (F,), ("auto", "ring", "tree"),
                         kernels_per_layer=14, tp_overlap_kind="none", dgrad_comm_behind_wgrad=False),
    # DeepSpeed 2021 ran Megatron's fused layer code (Megatron-DeepSpeed) under its own engine.
    "deepspeed-2021": Era("deepspeed-2021", ("1f1b",), 3, ("full", "none"), (F,), (F,), (0, 1, 2, 3), (F,), ("bf16",), (T, F), (F,), ("auto", "ring", "tree"),
                          kernels_per_layer=14, tp_overlap_kind="none", zero3_unit="parameter", pp_p2p="full", pipeline_overlaps_dp=False,
                          hybrid_sharding="none", dgrad_comm_behind_wgrad=False),
    "megatron-2022": Era("megatron-2022", ("interleaved", "1f1b"), 3, ("selective", "full", "none"), (T, F), (F,), (0,), (F,), ("bf16",), (F,), (F,), ("auto", "ring", "tree"),
                         kernels_per_layer=14, tp_overlap_kind="none", dgrad_comm_behind_wgrad=False),
    "megatron-core-2024": Era("megatron-core-2024", ("interleaved", "1f1b"), 2, ("selective", "none", "full"), (T, F), (T, F), (1, 0), (T, F), ("bf16", "fp32"), (T, F), (T, F), ("auto", "ring", "tree", "nvls"), ("ring", "all_gather"), 8, ("bf16", "fp8"),
                              hybrid_sharding="dense"),
    # FSDP that keeps the gathered weights through the step (part 2's reshard_after_forward=False)
    # is ZeRO-2's memory and traffic: sharded gradients and optimizer, whole weights in the step.
    "llama3-2024": Era("llama3-2024", ("interleaved", "1f1b"), 2, ("none", "selective", "full"), (T,), (T,), (2, 1), (F, T), ("fp32",), (T,), (T,), ("auto", "ring", "tree"), ("all_gather", "ring"), 16,
                       zero3_unit="layer", allocator_fragmentation=0.0, pp_frees_stage_inputs=True, dgrad_comm_behind_wgrad=False),
    # PyTorch FSDP1 in 2023 (llama-recipes, HF accelerate): FULL_SHARD (ZeRO-3) or SHARD_GRAD_OP
    # (ZeRO-2) over every GPU, one FSDP unit per transformer block, activation checkpointing per
    # block, flash-attn 2, eager element-wise ops, no pipeline, no TP overlap, no compile.
    "pytorch-fsdp1-2023": Era(
        "pytorch-fsdp1-2023", ("1f1b",), 2, ("none", "full"), (F,), (T,), (3, 2), (F,), ("bf16", "fp32"), (T,), (T,),
        ("auto", "ring", "tree"), max_pp=1, attention_kernel="fa2", fused_elementwise=False, zero3_unit="layer",
        kernels_per_layer=EAGER_KERNELS_PER_LAYER, loss_bytes_per_logit=40.0, logits_bytes=EAGER_LOGITS_BYTES, tp_overlap_kind="none", optimizer_bytes_per_param=98.0,
        dgrad_comm_behind_wgrad=False,
        fsdp_s_per_unshard=FSDP1_OPS_PER_UNSHARD * HOST_S_PER_OP, fsdp_s_per_param=FSDP1_S_PER_PARAM,
        fsdp_kept_s_per_param=FSDP1_KEPT_S_PER_PARAM, fsdp_kept_s_per_pass=FSDP1_KEPT_OPS_PER_PASS * HOST_S_PER_OP,
        fsdp_shard_bytes=FSDP1_SHARD_BYTES, fsdp_grad_bytes=FSDP1_GRAD_BYTES, fsdp_reshard_after_backward="reducing",
        accumulated_grad_dtype="param",
        source="torch.distributed.fsdp (PyTorch 2.1: its hooks after pytorch#98250): ShardingStrategy, transformer_auto_wrap_policy, "
               "limit_all_gathers, BackwardPrefetch.BACKWARD_PRE; meta-llama/llama-recipes; Dao-AILab/flash-attention 2.x"),
    # PyTorch FSDP2 / DTensor in 2024-25 (torchtitan): fully_shard per block (reshard_after_forward),
    # TP and SP as DTensor plans, AsyncTP under torch.compile, pipeline schedules from
    # torch.distributed.pipelining (1F1B, interleaved 1F1B, GPipe), context parallelism (ring),
    # float8 GEMMs through torchao, SDPA's flash backend (FlashAttention-2), fp32 gradient
    # reduction by default (mixed_precision_reduce = float32), op-level selective checkpointing.
    # Its pipeline send/recv is not overlapped (pp_overlap False): PipelineScheduleMulti (interleaved
    # 1F1B, looped BFS; torch 2.4-2.5 schedules.py _step_microbatches) runs each time step's compute,
    # then its sends and the next step's receives as one batch_isend_irecv and waits on it
    # (_batch_p2p(ops).wait()); Schedule1F1B waits for each receive just before the compute it feeds.
    "pytorch-fsdp2-2024": Era(
        "pytorch-fsdp2-2024", ("1f1b", "interleaved", "gpipe"), 2, ("selective", "none", "full"), (T, F), (T,), (3, 2), (F, T), ("fp32", "bf16"),
        (T,), (F,), ("auto", "ring", "tree", "nvls"), ("ring", "all_gather"), 16, ("bf16", "fp8"), torch_compile=(F, T),
        attention_kernel="fa2", fused_elementwise=False, kernels_per_layer=EAGER_KERNELS_PER_LAYER, loss_bytes_per_logit=40.0,
        logits_bytes=EAGER_LOGITS_BYTES, pp_grad_sync="step", pp_keeps_outputs=True, allocator_fragmentation=0.0,
        tp_overlap_kind="async_tp", sp_regathers_input=False, dgrad_comm_behind_wgrad=False, zero3_unit="layer", optimizer_bytes_per_param=46.0, fsdp_s_per_unshard=FSDP2_S_PER_UNSHARD,
        fsdp_s_per_param=FSDP2_OPS_PER_PARAM_RESHARD * HOST_S_PER_OP,
        fsdp_kept_s_per_param=(0.0, FSDP2_OPS_PER_PARAM_RESHARD * HOST_S_PER_OP),
        fsdp_unshard_bytes=FSDP2_UNSHARD_BYTES, fsdp_shard_bytes=FSDP2_SHARD_BYTES, fsdp_grad_bytes=FSDP2_GRAD_BYTES,
        fsdp_reshard_after_backward="every", cp_merge_bytes=(38.0, 30.0), fp8_scaling="current", fp8_weight_cache=False,
        source="pytorch/torchtitan (2024-25): parallelize_llama (fully_shard, parallelize_module, enable_async_tp), "
               "torch.distributed.pipelining schedules, torchao.float8; torch.nn.functional.scaled_dot_product_attention"),
    # Megatron-Core in 2025 (Core 0.12-0.15, NGC containers 25.xx): per-layer CUDA graphs, Megatron-FSDP
    # (--use-megatron-fsdp: ZeRO-2 and -3 as optim_grads and optim_grads_params, one unit a
    # transformer layer), TE's FP8 recipes (delayed, tensorwise, blockwise on Hopper, MXFP8 on
    # Blackwell) and NVFP4 (Fp4Recipe, 2025-09), --fp8-param-gather, DeepEP through the flex
    # dispatcher (2025-02), EP A2A overlap (2025-08), hybrid sharding with MoE (Core 0.13), NCCL 2.23+.
    # Megatron-FSDP leaves modules outside its units (the embedding, the output layer) unsharded
    # (megatron_fsdp.md: "Non-unit modules remain persistently un-sharded"); the engine prices them as
    # FSDP's root unit, gathered once a micro-batch, the nearest of its ZeRO-3 units.
    "megatron-core-2025": Era(
        "megatron-core-2025", ("interleaved", "1f1b"), 2, ("selective", "none", "full"), (T, F), (T, F), (1, 0, 2, 3), (T, F), ("bf16", "fp32"),
        (T, F), (T, F), ("auto", "ring", "tree", "nvls"), ("ring", "all_gather", "ulysses"), 8, ("bf16", "fp8", "mxfp8", "fp8_blockwise", "nvfp4"),
        zero3_unit="layer", nccl_pat=True, cuda_graphs="layer", a2a_link_share=DEEPEP_LINK_SHARE, moe_a2a_overlap=True,
        fp8_param_gather=True,
        unconfirmed=(
            "cuda_graphs: a replay's 15 us measured on a laptop GPU with its sync (ahrefs/ocannl#488), taken for a server's host; "
            "one static layer input per layer and micro-batch in flight (TE's make_graphed_callables; Megatron's local graphs may "
            "write an output straight into the next graph's input); an MoE layer's uncaptured part as 7 kernels, one a stage",
            "a2a_link_share: DeepEP's H800 shares (NVLink 0.972, RDMA 1.0 of the link's achieved rate) applied to every NVLink and "
            "NIC generation (no V1 row on H100, B200 or an NVL72 rack)",
            "moe_a2a_overlap: the hidden all-to-all's SM cost taken as DualPipe's (DeepEP's 20 SMs); no measured share hidden",
        ),
        source="NVIDIA/Megatron-LM (2025): docs/user-guide/features/cuda_graph.md, megatron_fsdp.md, megatron/core/enums.py "
               "(Fp8Recipe, Fp4Recipe), moe/README.md (EP A2A overlap, --fp8-param-gather); deepseek-ai/DeepEP docs/legacy.md"),
    # Megatron-LM on ROCm (AMD's ROCm/Megatron-LM with ROCm/TransformerEngine, 2025) on MI300X/MI325X/MI355X:
    # TE's fused attention on CK/AOTriton kernels (the catalog's rates under the name "cudnn": labs.core.
    # engine.hardware.ATTENTION_KERNELS), hipBLASLt GEMMs, FP8 recipes on CDNA 3/4, RCCL (no NVLS, no
    # PAT), no userbuffers TP overlap, HIP graphs not used by its recipes.
    "rocm-megatron-2025": Era(
        "rocm-megatron-2025", ("interleaved", "1f1b"), 2, ("selective", "none", "full"), (T, F), (T, F), (1, 0), (F,), ("bf16", "fp32"),
        (T, F), (T, F), ("auto", "ring", "tree"), ("ring", "all_gather"), 8, ("bf16", "fp8"),
        tp_overlap_kind="none", hybrid_sharding="dense", vendor="amd", a2a_link_share=LINK_RATE_SHARE,
        unconfirmed=(
            "cpu_s_per_kernel: HIP's launch and PyTorch's dispatch on ROCm assumed CUDA's 10 us an op (no ROCm row)",
            "kernels_per_layer: Transformer Engine's 12 kernels a layer assumed of its ROCm fork",
            "attention_kernel: TE-ROCm's CK / AOTriton fused attention at the catalog's 'cudnn' rate, itself unconfirmed on Instinct "
            "(labs.core.engine.hardware: attention_flops)",
            "a2a_link_share: RCCL's all-to-all over the xGMI mesh at the links' achieved rate (no rccl-tests all-to-all row)",
        ),
        source="ROCm/Megatron-LM and ROCm/TransformerEngine README (feature status: fused attention with AOTriton and CK "
               "backends, hipBLASLt the only GEMM backend, FP8 recipe, HipGraph partial), ROCm/rccl"),
}
# torchtitan in 2025: FSDP2 with torchao's float8 all-gather on (docs/float8.md's recipe:
# --float8.enable_fsdp_float8_all_gather --float8.precompute_float8_dynamic_scale_for_fsdp),
# MXFP8 on Blackwell (torchao MXLinear), grouped expert GEMMs (torch._grouped_mm) and PyTorch's
# NCCL 2.25+ (pytorch/pytorch#146073: PAT); the rest as in 2024.
ERAS["torchtitan-2025"] = replace(
    ERAS["pytorch-fsdp2-2024"], name="torchtitan-2025", precision=("bf16", "fp8", "mxfp8"), fp8_param_gather=True, nccl_pat=True,
    grouped_gemm="grouped_mm", unconfirmed=(
        "fp8_param_gather: torchao's float8 all-gather priced as Megatron's, 1 byte a layer weight; its one amax all-reduce a "
        "step (precompute_float8_dynamic_scale_for_fsdp) not priced",),
    source="pytorch/torchtitan (2025): docs/float8.md, torchao.float8.fsdp_utils, torchao.prototype.mx_formats")
# DeepSeek-V3's own framework (HAI-LLM, arXiv:2412.19437 Sec. 3.2-3.3), as the engine prices its
# published layout: Megatron-Core 2024's kernels and NCCL (no PAT: a 2024 run) with grouped expert
# GEMMs, its FP8 recipe (1 x 128 activation tiles, 128 x 128 weight blocks: fp8_blockwise)
# and its online quantization: scales computed per tile and block as each GEMM runs (Sec. 3.3.2).
ERAS["deepseek-v3-2024"] = replace(
    ERAS["megatron-core-2024"], name="deepseek-v3-2024", grouped_gemm="grouped", precision=("bf16", "fp8_blockwise"),
    fp8_weight_cache=False, schedule=ERAS["megatron-core-2024"].schedule + ("dualpipe",), unconfirmed=(
        "fp8_weight_cache: online quantization read as weights cast per GEMM with no FP8 copy kept between micro-batches (Sec. 3.3.2 "
        "names no weight cache); the layout ran on 80 GB H800s under DualPipe, where Hopper's FP8 copy and transpose would not fit",),
    source="DeepSeek-V3 technical report (arXiv:2412.19437) Sec. 3.2 (DualPipe, memory saving) and 3.3 (fine-grained FP8, online quantization)")
DEFAULT_STACK = "megatron-core-2024"  # the kernels a plan with no era runs (the engine's v2 constants)
ERA_NAMES = tuple(ERAS)


def get_era(name: str | None) -> Era | None:
    if name is None:
        return None
    check_choice("era", name, ERA_NAMES + (None,))
    return ERAS[name]


# era=None: DEFAULT_STACK's kernels with today's NCCL (PAT) and grouped expert GEMMs.
TODAY_STACK = replace(ERAS[DEFAULT_STACK], name="today", nccl_pat=True, grouped_gemm="grouped")


def stack_of(name: str | None) -> Era:
    """The era whose kernel-level constants a plan runs with: its own, or (era=None) DEFAULT_STACK's
    with today's NCCL (PAT) and grouped expert GEMMs."""
    return TODAY_STACK if name is None else ERAS[name]


# Plan precisions whose weights --fp8-param-gather and torchao gather in FP8, by their codes in the
# step model's fp8 column (labs.core.engine.precision.PRECISIONS: 1 "fp8", 4 "fp8_blockwise"; a
# plain bool's True is 1): not MXFP8 (Megatron-Core's MoE README: "except MXFP8"), and NVFP4's
# --fp4-param-gather is not priced (its weights gathered in BF16).
FP8_GATHER_CODES = (1, 4)


def fp8_param_gathered(stack: Era, fp8_column, xp):
    """Where the stack all-gathers the weights in FP8 (module docstring: fp8_param_gather): False
    for a stack that never does, else a column over the rows' precision codes."""
    if not stack.fp8_param_gather:
        return False
    return (fp8_column == FP8_GATHER_CODES[0]) | (fp8_column == FP8_GATHER_CODES[1])


# DeepEP V2 on one B200 node (deepseek-ai/DeepEP README, SM100, EP 8, 64 SMs): dispatch and combine GB/s
# of NVLink 5, logical bandwidth; a check of the H800 share on Blackwell, not a fit.
DEEPEP_V2_B200_NVLINK_ROW = (8, 726.0, 740.0)


def stack_constant_rows() -> list[dict]:
    """The stacks of 2025-26's constants beside the measurements they rest on (module docstring):
    constant, the engine's value, the row's, and their relative difference."""
    rows = []
    n = [r[0] for r in CUDA_GRAPH_REPLAY_ROWS]
    t = [r[2] for r in CUDA_GRAPH_REPLAY_ROWS]
    mean_n, mean_t = sum(n) / len(n), sum(t) / len(t)
    slope = sum((a - mean_n) * (b - mean_t) for a, b in zip(n, t)) / sum((a - mean_n) ** 2 for a in n)
    intercept = mean_t - slope * mean_n  # the replay's fixed part: a least-squares line through the rows
    rows.append({"constant": "CUDA_GRAPH_LAUNCH_S (s)", "engine": CUDA_GRAPH_LAUNCH_S, "row": intercept,
                 "source": "ahrefs/ocannl#488: graph + sync over 8-117 kernels, the line's intercept"})
    h800 = LINKS["nvlink4-h800"].effective_bytes_per_s / 1e9
    for what, (ep, dispatch, combine) in (("H800 NVLink", DEEPEP_NVLINK_ROWS[0]),):
        for kind, measured in (("dispatch", dispatch), ("combine", combine)):
            rows.append({"constant": f"DeepEP {kind} EP {ep}, {what} (GB/s)", "engine": h800 * DEEPEP_LINK_SHARE[0], "row": measured,
                         "source": "deepseek-ai/DeepEP docs/legacy.md, normal kernels"})
    ib = LINKS["ib-ndr"].effective_bytes_per_s / 1e9
    for ep, dispatch, combine in DEEPEP_RDMA_ROWS:
        for kind, measured in (("dispatch", dispatch), ("combine", combine)):
            rows.append({"constant": f"DeepEP {kind} EP {ep}, CX7 RDMA (GB/s)", "engine": ib * DEEPEP_LINK_SHARE[1], "row": measured,
                         "source": "deepseek-ai/DeepEP docs/legacy.md, normal kernels (logical bandwidth)"})
    nvlink5 = LINKS["nvlink5"].effective_bytes_per_s / 1e9
    ep, dispatch, combine = DEEPEP_V2_B200_NVLINK_ROW
    for kind, measured in (("dispatch", dispatch), ("combine", combine)):
        rows.append({"constant": f"DeepEP V2 {kind} EP {ep}, B200 NVLink 5 (GB/s)", "engine": nvlink5 * DEEPEP_LINK_SHARE[0], "row": measured,
                     "source": "deepseek-ai/DeepEP README, SM100, 64 SMs (a check on Blackwell, not fitted)"})
    rows.append({"constant": "NCCL all-to-all EP 8, H100 NVLink 4 (GB/s)", "engine": LINKS["nvlink4"].effective_bytes_per_s * NCCL_LINK_SHARE[0] / 1e9,
                 "row": nccl_a2a_busbw() / 1e9, "source": "ppl-ai/pplx-kernels README, Torch AtA, EP 8, 128 tokens a GPU (fitted on it)"})
    rows.append({"constant": "NCCL all-to-all, 2 DGX H100 over 400G NICs (GB/s)", "engine": LINKS["ib-ndr"].effective_bytes_per_s * NCCL_LINK_SHARE[1] / 1e9,
                 "row": 46.0, "source": "deepseek-ai/DeepEP#3: nccl-tests alltoall with NVLink off, bus bandwidth (a check)"})
    for row in rows:
        row["error"] = row["engine"] / row["row"] - 1
    return rows


def check_stack_on_gpu(stack: Era, gpu) -> None:
    """Refuse a stack whose kernels do not run on this GPU (a ROCm stack on an NVIDIA part, a CUDA one on AMD's)."""
    amd = gpu.arch.startswith("cdna")
    if (stack.vendor == "amd") != amd:
        raise ValueError(f"stack {stack.name!r} runs on {stack.vendor.upper()} GPUs; {gpu.name} is an {'AMD' if amd else 'NVIDIA'} part")


def launches_per_layer(stack: Era, torch_compile: bool, moe_share) -> tuple:
    """(graph replays, kernels launched one by one) of one layer's forward under the stack's CUDA
    graphs (module docstring: cuda_graphs), averaged over the layers (moe_share: the MoE layers' share)."""
    eager = kernels_per_layer(stack, torch_compile)
    if stack.cuda_graphs == "none":
        return 0.0, eager
    dense_graphs = 1.0 if stack.cuda_graphs == "layer" else 0.0
    graphs = (1 - moe_share) * dense_graphs + moe_share * MOE_LAYER_GRAPHS
    return graphs, moe_share * MOE_EAGER_KERNELS


def kernels_per_layer(stack: Era, torch_compile: bool) -> int:
    return COMPILED_KERNELS_PER_LAYER if torch_compile else stack.kernels_per_layer


def loss_bytes_per_logit(stack: Era, torch_compile: bool) -> float:
    return COMPILED_LOSS_BYTES_PER_LOGIT if torch_compile else stack.loss_bytes_per_logit


def logits_bytes(stack: Era, torch_compile: bool) -> tuple[float, float]:
    """(saved, peak) bytes per logit the loss keeps (module docstring: logits_bytes)."""
    return COMPILED_LOGITS_BYTES if torch_compile else stack.logits_bytes


def check_plan_in_era(era: Era, values: dict) -> None:
    """Refuse a plan field value the era's software did not have, naming the field and era."""
    for name in ERA_FIELDS:
        if name in values and values[name] not in getattr(era, name):
            raise ValueError(f"{name}={values[name]!r} is not available in era {era.name!r}; it allows {getattr(era, name)}")
    if values.get("shard_group_size") is not None and (era.hybrid_sharding == "none" or (era.hybrid_sharding == "dense" and values.get("ep", 1) > 1)):
        what = "hybrid sharding" if era.hybrid_sharding == "none" else "hybrid sharding with expert parallelism"
        raise ValueError(f"shard_group_size={values['shard_group_size']!r} is not available in era {era.name!r}: its software had no {what}")
    if values.get("pp", 1) > era.max_pp:
        raise ValueError(f"pp={values['pp']} is not available in era {era.name!r}: its software has no pipeline parallelism (pp <= {era.max_pp})")
    if values.get("schedule") == "interleaved" and values.get("pp", era.interleave_min_pp) < era.interleave_min_pp:
        raise ValueError(f"pp={values.get('pp')} is too few stages for the interleaved schedule in era {era.name!r} (needs pp >= {era.interleave_min_pp})")

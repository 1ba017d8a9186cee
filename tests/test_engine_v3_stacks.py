"""Engine v3: the software stack as an input (labs.core.engine.eras), against the kernels' own
benchmarks, the frameworks' code and counts made by hand."""

import pytest

from conftest import report
from labs.core import Cluster, Model, Plan, estimate, sweep
from labs.core.engine.eras import ERAS, EAGER_KERNELS_PER_LAYER, stack_of
from labs.core.engine.gemm import ATTENTION_EFFICIENCY, FLASH_BACKWARD_OVER_FORWARD, elementwise_bytes_per_token, flash_attention_time, unfused_elementwise_ratio
from labs.core.engine.hardware import GPUS, LINKS
from labs.core.engine.perf import _run

H100 = Cluster.get("dgx-h100", nodes=1)
LLAMA8 = Model.get("llama3-8b")

# Shah et al. 2024 (FlashAttention-3, arXiv:2407.08608) on H100 SXM5, head dim 128, 2k-8k tokens,
# TFLOP/s: Fig. 5 forward (causal) and Fig. 7 backward.
FA3_PAPER = {"fa2": ((298, 333), (291, 318)), "cudnn": ((484, 529), (465, 518)), "fa3": ((521, 602), (501, 559))}


@pytest.mark.parametrize("kernel", sorted(FA3_PAPER))
def test_hopper_attention_efficiency_sits_in_the_kernels_published_range(kernel):
    """Forward and backward together (the backward does 2.5x the forward's FLOPs): the catalog's
    efficiency gives a time-weighted rate between the paper's forward and backward ranges."""
    (f_lo, f_hi), (b_lo, b_hi) = FA3_PAPER[kernel]
    peak = GPUS["h100-sxm"].bf16_flops
    forward, backward = flash_attention_time(GPUS["h100-sxm"], 1e12, kernel)
    rate = (1 + FLASH_BACKWARD_OVER_FORWARD) * 1e12 / (forward + backward) / 1e12
    low = (1 + FLASH_BACKWARD_OVER_FORWARD) / (1 / f_lo + FLASH_BACKWARD_OVER_FORWARD / b_lo)
    high = (1 + FLASH_BACKWARD_OVER_FORWARD) / (1 / f_hi + FLASH_BACKWARD_OVER_FORWARD / b_hi)
    report(f"{kernel} on H100, TFLOP/s fwd+bwd", rate, (low + high) / 2)
    assert low * 0.97 <= rate <= high * 1.03
    assert ATTENTION_EFFICIENCY[(kernel, "hopper")] * peak / 1e12 == pytest.approx(rate)


def test_attention_kernel_belongs_to_the_stack_not_the_gpu():
    """The same layer on H100: FSDP's FlashAttention-2 takes 0.50 / 0.31 the time of Transformer
    Engine's cuDNN attention; on A100 the two kernels are equal (FA2 paper, Sec. 4.1)."""
    model = Model.get("llama3-8b", seq_len=16384)
    kw = dict(tp=1, pp=1, dp=8, micro_batch=1, global_batch=8, zero_stage=3, recompute="none")
    fsdp = _run(model, H100, Plan.for_era("pytorch-fsdp2-2024", torch_compile=True, **kw))
    mcore = _run(model, H100, Plan(stack="megatron-core-2024", **kw))
    assert fsdp["layer_forward_s"] > mcore["layer_forward_s"]
    a100 = Cluster.get("dgx-a100", nodes=1)
    assert flash_attention_time(a100.gpu, 1e12, "fa2") == flash_attention_time(a100.gpu, 1e12, "cudnn")
    fa2, cudnn = (flash_attention_time(H100.gpu, 1e12, k)[0] for k in ("fa2", "cudnn"))
    assert fa2 / cudnn == pytest.approx(0.50 / 0.31)


def test_eager_elementwise_bytes_counted_by_hand():
    """Llama 3 8B (h 4096, K/V 1024, FFN 14336), per token of one layer's forward. Fused: two
    norms 2 x 4h, RoPE 4 (h + kv), SwiGLU 6f, two residual adds 2 x 6h. Eager: norms 2 x 36h
    (fp32 upcast, pow, mean, rsqrt multiply, cast, weight), RoPE 20 (h + kv), SwiGLU 10f."""
    h, kv, f = 4096, 1024, 14336
    fused = 2 * 4 * h + 4 * (h + kv) + 6 * f + 12 * h
    eager = 2 * 36 * h + 20 * (h + kv) + 10 * f + 12 * h
    assert elementwise_bytes_per_token(LLAMA8, True) == fused
    assert elementwise_bytes_per_token(LLAMA8, False) == eager
    report("Llama 3 8B eager / fused element-wise bytes", unfused_elementwise_ratio(LLAMA8), eager / fused)
    assert unfused_elementwise_ratio(Model.get("gpt3-175b")) == 1.0  # LayerNorm and GeLU are one kernel each in eager PyTorch


def test_small_layers_wait_for_the_host_and_large_ones_do_not():
    """A 100M-parameter layer at micro-batch 1 finishes its GPU work before the CPU has issued its
    kernels: its forward takes kernels x cpu_s_per_kernel (40 x 10 us eager, 12 x 10 us under
    Transformer Engine), plus under FSDP2 ZeRO-3 the 0.37 ms of host time each unshard of the
    block takes (pytorch/pytorch#133369) and its reshard's storage free for each of the block's 8
    parameters (FSDPParam.to_sharded, an op at 10 us), once in each pass. A GPT-3 layer's GEMMs
    take far longer than its launches."""
    tiny = Model.get("seed-100m")
    kw = dict(tp=1, pp=1, dp=8, micro_batch=1, global_batch=8, zero_stage=3, recompute="none")
    eager = _run(tiny, H100, Plan.for_era("pytorch-fsdp2-2024", **kw))
    stack = stack_of("pytorch-fsdp2-2024")
    assert eager["layer_forward_s"] == pytest.approx(EAGER_KERNELS_PER_LAYER * 10e-6 + 0.37e-3 + 8 * 10e-6)
    assert eager["layer_backward_s"] == pytest.approx(2 * EAGER_KERNELS_PER_LAYER * 10e-6 + 0.37e-3 + 8 * 10e-6)
    assert stack.cpu_s_per_kernel == 10e-6
    mcore = _run(tiny, H100, Plan(stack="megatron-core-2024", **kw))
    assert mcore["layer_forward_s"] == pytest.approx(ERAS["megatron-core-2024"].kernels_per_layer * 10e-6)
    big = _run(Model.get("gpt3-175b"), Cluster.get("dgx-h100", nodes=1), Plan(tp=8, micro_batch=1, global_batch=1, sequence_parallel=True))
    assert big["layer_forward_s"] > 10 * ERAS["megatron-core-2024"].kernels_per_layer * 10e-6


def test_the_stack_costs_small_models_more_than_large_ones():
    """FSDP2 without compile against Megatron-Core on H100, same layout (FSDP over 8 GPUs, full
    recompute): the smaller the model, the larger the share of its step that eager kernels, host
    launches and the fp32 cross entropy take, so the MFU ratio rises with model size."""
    ratios = {}
    for key, nodes in (("seed-100m", 1), ("llama3-8b", 1), ("llama3-70b", 8)):
        model, cluster = Model.get(key), Cluster.get("dgx-h100", nodes=nodes)
        kw = dict(tp=1, pp=1, dp=cluster.gpus, micro_batch=1, global_batch=4 * cluster.gpus, zero_stage=3, recompute="full")
        fsdp = estimate(model, cluster, Plan.for_era("pytorch-fsdp2-2024", **kw))
        mcore = estimate(model, cluster, Plan(stack="megatron-core-2024", **kw))
        ratios[key] = fsdp.mfu / mcore.mfu
        print(f"{key}: FSDP2 eager MFU {fsdp.mfu:.1%}, Megatron-Core kernels {mcore.mfu:.1%}, ratio {ratios[key]:.2f}")
    assert ratios["seed-100m"] < ratios["llama3-8b"] < ratios["llama3-70b"] < 1


def test_compile_fuses_and_launches_less():
    kw = dict(tp=1, pp=1, dp=8, micro_batch=1, global_batch=8, zero_stage=3, recompute="none")
    eager = _run(LLAMA8, H100, Plan.for_era("pytorch-fsdp2-2024", **kw))
    compiled = _run(LLAMA8, H100, Plan.for_era("pytorch-fsdp2-2024", torch_compile=True, **kw))
    assert compiled["layer_forward_s"] < eager["layer_forward_s"]
    with pytest.raises(ValueError, match="torch_compile"):
        Plan.for_era("megatron-core-2024", torch_compile=True)


def test_grad_sync_once_a_step_or_every_micro_batch():
    """ZeRO-1 with 8 micro-batches: reducing every micro-batch (DDP without no_sync) sends 8x the
    gradient bytes of reducing once. ZeRO-2 reduces every micro-batch by default (DeepSpeed's and
    FSDP's), and once a step keeps whole gradients on the GPU (FSDP's no_sync)."""
    cluster = Cluster.get("dgx-h100", nodes=2)
    kw = dict(tp=1, pp=1, dp=16, micro_batch=1, global_batch=128)
    once = estimate(LLAMA8, cluster, Plan(zero_stage=1, **kw))
    every = estimate(LLAMA8, cluster, Plan(zero_stage=1, grad_sync="microbatch", **kw))
    reduce = lambda e: next(c for c in e.collectives if c.key == "dp_reduce")  # noqa: E731
    assert reduce(every).sent_bytes == pytest.approx(8 * reduce(once).sent_bytes)
    z2 = estimate(LLAMA8, cluster, Plan(zero_stage=2, **kw))
    z2_step = estimate(LLAMA8, cluster, Plan(zero_stage=2, grad_sync="step", **kw))
    assert reduce(z2).sent_bytes == pytest.approx(8 * reduce(z2_step).sent_bytes)
    assert z2_step.memory.gradients == pytest.approx(16 * z2.memory.gradients)
    with pytest.raises(ValueError, match="grad_sync"):
        Plan(grad_sync="sometimes")


def test_deepspeed_pipeline_sends_whole_activations_from_every_tp_rank():
    """Megatron's scatter/gather sends 1/t of a micro-batch's activation per TP rank; DeepSpeed's
    2021 pipeline engine sent the whole of it from each."""
    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-a100", nodes=12)
    kw = dict(tp=4, pp=8, dp=3, micro_batch=1, global_batch=96, recompute="full")
    megatron = estimate(model, cluster, Plan.for_era("megatron-2021", **kw))
    deepspeed = estimate(model, cluster, Plan.for_era("deepspeed-2021", **kw))
    assert deepspeed.comm_bytes_per_gpu["pp"] == pytest.approx(4 * megatron.comm_bytes_per_gpu["pp"])


def test_zero3_gathers_per_parameter_or_per_block():
    """DeepSpeed 2021 gathers the four weight matrices of a layer one by one, a third time under
    activation checkpointing; FSDP gathers one flat parameter per block, in forward and backward,
    and its root unit (embedding, final norm, output layer) once a micro-batch (here m = 1)."""
    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-a100", nodes=48)
    ds = estimate(model, cluster, Plan.for_era("deepspeed-2021", dp=384, micro_batch=4, global_batch=1536, zero_stage=3, recompute="full"))
    fsdp = estimate(model, cluster, Plan.for_era("pytorch-fsdp1-2023", dp=384, micro_batch=4, global_batch=1536, zero_stage=3, recompute="full"))
    gathers = lambda e: next(c for c in e.collectives if c.key == "dp_gather").calls  # noqa: E731
    assert gathers(ds) == 3 * 4 * 96
    assert gathers(fsdp) == 2 * 96 + 1
    assert fsdp.step_time_s < ds.step_time_s


def test_async_tp_leaves_the_backward_exposed():
    """AsyncTP (forward patterns only, copy engines) against TE userbuffers on the same plan:
    its forward hides, its backward's TP collectives stay on the critical path."""
    model, cluster = Model.get("llama3-70b"), Cluster.get("dgx-h100", nodes=8)
    kw = dict(tp=8, pp=1, dp=8, micro_batch=1, global_batch=64, sequence_parallel=True, recompute="full", zero_stage=3)
    off = estimate(model, cluster, Plan.for_era("pytorch-fsdp2-2024", torch_compile=True, **kw))
    on = estimate(model, cluster, Plan.for_era("pytorch-fsdp2-2024", torch_compile=True, tp_comm_overlap=True, **kw))
    assert on.time.tp_comm < off.time.tp_comm
    assert on.time.tp_comm > off.time.tp_comm / 3  # the backward's third stays (forward + recompute + backward)
    with pytest.raises(ValueError, match="torch_compile"):
        Plan.for_era("pytorch-fsdp2-2024", tp=8, dp=8, global_batch=8, sequence_parallel=True, tp_comm_overlap=True)


def test_eras_refuse_what_their_software_did_not_have():
    with pytest.raises(ValueError, match="pp=2"):
        Plan.for_era("pytorch-fsdp1-2023", pp=2, dp=4, global_batch=8)
    with pytest.raises(ValueError, match="stack"):
        Plan(stack="jax-2030")
    with pytest.raises(ValueError, match="stack"):
        Plan.for_era("megatron-2021", stack="pytorch-fsdp2-2024")
    assert Plan.for_era("pytorch-fsdp2-2024").stack == "pytorch-fsdp2-2024"
    assert Plan.for_era("megatron-core-2024").grad_reduce_dtype == "bf16"  # NVIDIA's recipes: grad_reduce_in_fp32=False
    assert Plan.for_era("megatron-core-2024", grad_reduce_dtype="fp32").grad_reduce_dtype == "fp32"
    df = sweep(LLAMA8, Cluster.get("dgx-h100", nodes=2), global_batch=64, era="pytorch-fsdp1-2023")
    assert set(df.pp) == {1} and set(df.zero_stage) <= {2, 3} and set(df["stack"]) == {"pytorch-fsdp1-2023"}


def test_deepseek_v3_fits_at_its_published_layout():
    """DeepSeek-V3 Sec. 3.2: PP16, EP64, ZeRO-1 on 2,048 H800s, FP8, its recomputation (RMSNorm,
    MLA up-projections) and FP8 activation caching: the busiest GPU within 80 GB."""
    model, cluster = Model.get("deepseek-v3"), Cluster.get("h800-ib", nodes=256)
    layout = dict(pp=16, dp=128, ep=64, max_nodes_per_token=4, micro_batch=1, global_batch=15360, zero_stage=1, precision="fp8")
    est = estimate(model, cluster, Plan(recompute="norms_up_proj", **layout))
    plain = estimate(model, cluster, Plan(recompute="none", **layout))
    print(f"DeepSeek-V3: {est.memory.total / 1e9:.1f} GB of {cluster.gpu.hbm_bytes / 1e9:.1f}, margin {est.hbm_margin_bytes / 1e9:+.1f} GB "
          f"(without its savings {plain.memory.total / 1e9:.1f} GB)")
    assert est.fits and est.hbm_margin_bytes > 0 and not plain.fits
    assert est.hardware_flops_per_step > plain.hardware_flops_per_step  # the up-projections run twice


def test_hardware_of_published_runs():
    assert GPUS["a100-sxm-40gb"].hbm_bytes == 40_960 * 2**20 and GPUS["a100-sxm-40gb"].arch == "ampere"
    assert GPUS["h100-nvl-94gb"].hbm_bytes > GPUS["h100-sxm"].hbm_bytes
    assert LINKS["nvlink4-h800"].bandwidth_bytes_per_s == 200e9  # 400 GB/s both ways
    assert LINKS["opa-100"].bandwidth_bytes_per_s == 12.5e9  # 100 Gb/s
    for gpu in GPUS.values():
        assert gpu.source


def test_op_level_checkpointing_keeps_half_the_matmul_outputs_by_hand():
    """Llama 3 8B layer, TP 1, 8,192 tokens: torchtitan's op-level selective checkpointing keeps
    the layer input (2h), the attention output (2h) and its softmax statistics (4 x 32 heads,
    fp32), and every other matmul output of q (2h), k and v (2 x 2 x 1024), o (2h), gate and up
    (2 x 2f) and down (2h): half of 6h + 4 kv + 4f bytes a token."""
    from labs.core.engine.memory import layer_activation_columns
    from labs.core.engine.models import ALL_RECOMPUTE_MODES

    h, kv, f, a, s = 4096, 1024, 14336, 32, 8192
    by_hand = s * (2 * h + 2 * h + 4 * a + (6 * h + 4 * kv + 4 * f) / 2)
    got = float(layer_activation_columns(LLAMA8, s, 1, 1, False, ALL_RECOMPUTE_MODES.index("ops")))
    none = float(layer_activation_columns(LLAMA8, s, 1, 1, False, ALL_RECOMPUTE_MODES.index("selective")))
    report("Llama 3 8B layer, op-level checkpointing, bytes", got, by_hand)
    assert got == pytest.approx(by_hand) and got < 0.5 * none


def test_deepseek_recompute_keeps_latents_and_swiglu_inputs_by_hand():
    """DeepSeek-V3 layer, no TP, 4,096 tokens, recomputing RMSNorm, the MLA up-projections and the
    SwiGLU output: it keeps the two norm inputs (2 x 2h), the latents (2 x (1536 + 512 + 64)),
    the attention output (2 x 128 heads x 128) and softmax statistics (4 x 128); an MoE layer's
    8 routed copies of each token (2h each) with their experts' gate and up (2 x 2 x 2048), the
    shared expert's gate and up and the router's 256 scores (fp32); a dense layer (3 of 61) its
    gate and up (2 x 2 x 18432)."""
    from labs.core.engine.memory import layer_activation_columns
    from labs.core.engine.models import ALL_RECOMPUTE_MODES

    model = Model.get("deepseek-v3")
    h, s = 7168, 4096
    attention = 2 * (1536 + 512 + 64) + 2 * 128 * 128 + 4 * 128
    moe = 8 * (2 * h + 4 * 2048) + 4 * 2048 + 4 * 256
    ffn = (3 / 61) * 4 * 18432 + (58 / 61) * moe
    by_hand = s * (4 * h + attention + ffn)
    got = float(layer_activation_columns(model, s, 1, 1, False, ALL_RECOMPUTE_MODES.index("norms_up_proj")))
    report("DeepSeek-V3 layer, its recomputation, bytes", got, by_hand)
    assert got == pytest.approx(by_hand, rel=1e-3)


def test_recompute_num_layers_interpolates_between_none_and_full():
    """Megatron's --recompute-method block --recompute-num-layers N on Llama 3 70B, TP8 PP4 (20
    layers a stage): N = 10 re-runs half of each stage's layers, so the recomputed time and the
    activations saved are half of full recompute's; N = 20 is full recompute, N = 0 recomputes
    nothing (the hardware FLOPs equal the model's plus flash attention's own re-run)."""
    model, cluster = Model.get("llama3-70b"), Cluster.get("dgx-h100", nodes=8)
    kw = dict(tp=8, pp=4, dp=2, micro_batch=1, global_batch=64, recompute="full")
    est = {n: estimate(model, cluster, Plan.for_era("megatron-core-2024", recompute_layers=n, **kw)) for n in (0, 10, 20)}
    full = estimate(model, cluster, Plan.for_era("megatron-core-2024", **kw))
    assert est[20].step_time_s == pytest.approx(full.step_time_s)
    half_flops = (est[10].hardware_flops_per_step - est[0].hardware_flops_per_step) / (est[20].hardware_flops_per_step - est[0].hardware_flops_per_step)
    half_memory = (est[0].memory.activations - est[10].memory.activations) / (est[0].memory.activations - est[20].memory.activations)
    report("recompute_layers=10 of 20: share of full recompute's FLOPs", half_flops, 0.5)
    report("recompute_layers=10 of 20: share of its activation saving", half_memory, 0.5)
    assert half_flops == pytest.approx(0.5) and half_memory == pytest.approx(0.5, abs=0.02)
    assert est[0].step_time_s < est[10].step_time_s < est[20].step_time_s
    with pytest.raises(ValueError, match="recompute_layers"):
        Plan(recompute_layers=4)

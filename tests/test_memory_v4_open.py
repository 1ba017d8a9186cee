"""Engine v4's open memory and MoE items (issues 37 and 36), each hand-counted from the code it
rests on (the expected values are derived here, the arithmetic shown, not read from the engine):
- FSDP1 under no_sync keeps each unit's unsharded gradient in flat_param.grad, in the bf16 param
  dtype, whatever the reduce dtype (torch/distributed/fsdp/_runtime_utils.py _post_backward_hook,
  _finalize_params), and its backwards cat and accumulate it in HBM between reductions;
- FSDP2's DTensor sequence parallelism saves the all-gathered input of the column-parallel GEMMs
  for their backward (torchtitan's PrepareModuleInput + ColwiseParallel; Era.sp_regathers_input
  False), where Megatron saves the sequence shard and gathers it again;
- the busiest EP rank's sort and unsort of its received tokens scale with Plan.expert_skew
  (Megatron-Core's MoEAlltoAllTokenDispatcher: sort_chunks_by_idxs on the received chunks);
- activations saved under NVFP4 (and MXFP8, blockwise FP8) at their format's bytes: Transformer
  Engine saves a GEMM input's column-wise quantized copy (module/linear.py: update_usage(rowwise_usage=False,
  columnwise_usage=True)), NVFP4's 4-bit values and one E4M3 scale per 16 (tensor/nvfp4_tensor.py).
"""

from types import SimpleNamespace

import pytest

from conftest import report
from labs.core import Cluster, Model, Plan, estimate
from labs.core.engine.eras import ERAS
from labs.core.engine.stages.compute import _fsdp_costs
from labs.core.engine.stages.inputs import model_terms
from labs.core.engine.stages.xp import SCALAR

LLAMA2_7B = Model.get("llama2-7b")
# Llama 2 7B by hand (32 layers, h 4,096, SwiGLU f 11,008, vocab 32,000): a layer's q, k, v, o
# 4 x 4,096^2 = 67,108,864, w1, w2, w3 3 x 4,096 x 11,008 = 135,266,304, two norms 8,192:
# 202,383,360; x 32 = 6,476,267,520; embedding and output 2 x 32,000 x 4,096 = 262,144,000; final
# norm 4,096: 6,738,415,616 parameters.
LLAMA2_7B_PARAMS = 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096
LLAMA2_7B_LAYER = 4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096


@pytest.mark.parametrize("reduce_dtype", ["bf16", "fp32"])
def test_fsdp1_no_sync_keeps_bf16_unsharded_gradients(reduce_dtype):
    """FSDP1, ZeRO-3 over 32 A100s, 8 micro-batches under no_sync: the whole model's unsharded
    gradients stay in flat_param.grad in bf16 (2 bytes a parameter) between micro-batches, with a
    bf16 or an fp32 reduce dtype alike: 2 x 6,738,415,616 = 13.477 GB. Before: 4 bytes a
    parameter with fp32 reduction (26.95 GB)."""
    plan = Plan.for_era("pytorch-fsdp1-2023", tp=1, pp=1, dp=32, micro_batch=1, global_batch=256, zero_stage=3,
                        grad_sync="step", grad_reduce_dtype=reduce_dtype)
    est = estimate(LLAMA2_7B, Cluster.get("dgx-a100", nodes=4), plan)
    by_hand = 2 * LLAMA2_7B_PARAMS
    error = report(f"FSDP1 no_sync gradients ({reduce_dtype} reduce), GB", est.memory.gradients / 1e9, by_hand / 1e9)
    assert abs(error) < 1e-5


def test_fsdp2_accumulates_in_the_reduce_dtype():
    """FSDP2 (to_accumulated_grad_if_needed casts to reduce_dtype before accumulating): with an fp32
    reduce dtype the whole gradients take 4 bytes a parameter, 26.95 GB for Llama 2 7B."""
    plan = Plan.for_era("pytorch-fsdp2-2024", tp=1, pp=1, dp=32, micro_batch=1, global_batch=256, zero_stage=3,
                        grad_sync="step", grad_reduce_dtype="fp32")
    est = estimate(LLAMA2_7B, Cluster.get("dgx-a100", nodes=4), plan)
    by_hand = 4 * LLAMA2_7B_PARAMS
    error = report("FSDP2 no_sync gradients (fp32 reduce), GB", est.memory.gradients / 1e9, by_hand / 1e9)
    assert abs(error) < 1e-5


@pytest.mark.parametrize("grad_fp32, per_param", [
    # bf16 reduce: the first micro-batch's cat 2 + 2; each of the 7 later ones cat 4 and the in-place
    # add 2 + 2 + 2; the reducing one's pre-divide 2 + 2: (4 + 7 x 10 + 4) / 8 = 78 / 8 = 9.75
    (False, (4 + 7 * 10 + 4) / 8),
    # fp32 reduce: as above, but the reducing backward casts to fp32 (2 + 4) and pre-divides in fp32
    # (4 + 4): (4 + 7 x 10 + 14) / 8 = 88 / 8 = 11
    (True, (4 + 7 * 10 + 14) / 8),
])
def test_fsdp1_no_sync_accumulation_hbm_bytes(grad_fp32, per_param):
    """FSDP1 ZeRO-2 under no_sync, 8 micro-batches: each backward's HBM copies of the unit's
    gradient, per micro-batch, for a Llama 2 7B layer (202,383,360 parameters) at an A100's
    streaming rate (2,039 GB/s x 0.9). Before: 0 bytes between reductions."""
    stack = ERAS["pytorch-fsdp1-2023"]
    p = SimpleNamespace(tp=1.0, zero=2, forward_unshards=1.0 / 8, ep=1.0, shard=32.0, expert_shard=32.0, reduce_each_mb=False,
                        grad_fp32=grad_fp32, m=8.0)
    hbm_rate = 2039e9 * 0.9
    copies_b = _fsdp_costs(model_terms(LLAMA2_7B), stack, p, hbm_rate, SCALAR)[3]
    by_hand = LLAMA2_7B_LAYER * per_param / hbm_rate
    error = report(f"FSDP1 no_sync grad copies (fp32={grad_fp32}), us", copies_b * 1e6, by_hand * 1e6)
    assert abs(error) < 1e-9


LLAMA3_8B = Model.get("llama3-8b", seq_len=8192)


def _fsdp2_activations(monkeypatch, regathers, recompute):
    """est.memory.activations of Llama 3 8B under FSDP2 with TP 8 and SP, the stack saving the
    gathered SP input (its own) or, with `regathers`, only the shard as Megatron does."""
    import dataclasses
    if regathers:
        monkeypatch.setitem(ERAS, "pytorch-fsdp2-2024", dataclasses.replace(ERAS["pytorch-fsdp2-2024"], sp_regathers_input=True))
    plan = Plan.for_era("pytorch-fsdp2-2024", tp=8, pp=1, dp=4, micro_batch=1, global_batch=32, zero_stage=3,
                        sequence_parallel=True, recompute="none")
    plan = dataclasses.replace(plan, recompute=recompute)  # op-level checkpointing is not among the era's choices
    return estimate(LLAMA3_8B, Cluster.get("dgx-h100", nodes=4), plan).memory.activations


def test_fsdp2_keeps_the_gathered_sp_input(monkeypatch):
    """Llama 3 8B (32 layers, h 4,096), 8,192 tokens a micro-batch, TP 8 with SP, no pipeline: one
    micro-batch in flight. DTensor saves the gathered input of QKV and of the FFN's w1/w3, so each
    layer keeps 2 tensors x 2 bytes x 8,192 x 4,096 x (1 - 1/8) more than the shards:
    32 x 4 x 8,192 x 3,584 = 3,758,096,384 bytes (3.76 GB). Before: 0."""
    saved = _fsdp2_activations(monkeypatch, False, "none")
    shards = _fsdp2_activations(monkeypatch, True, "none")
    by_hand = 32 * 2 * 2 * 8192 * 4096 * (1 - 1 / 8)
    assert by_hand == 3_758_096_384
    error = report("FSDP2 gathered SP inputs, GB", (saved - shards) / 1e9, by_hand / 1e9)
    assert abs(error) < 1e-9


@pytest.mark.parametrize("recompute", ["full", "ops"])
def test_recompute_drops_the_gathered_sp_input(monkeypatch, recompute):
    """Full recompute keeps only the layer input; op-level checkpointing (torchtitan's _save_list has
    no all-gather) gathers the input again: nothing gathered is kept, as under Megatron."""
    assert _fsdp2_activations(monkeypatch, False, recompute) == _fsdp2_activations(monkeypatch, True, recompute)


def test_busiest_rank_sorts_its_skewed_load():
    """Mixtral 8x7B (h 4,096, top-2 of 8 experts, every layer MoE), EP 4 (2 local experts a rank, so
    the received chunks are sorted by expert and unsorted on the way back), 4,096 tokens a GPU, TP 1.
    Balanced, the sort (read 2k, write 2k bytes an element) and the unsort (as much) move 8k bytes
    an element of the received tokens: 4,096 tokens x 8 x 2 x 4,096 = 268,435,456 bytes; the router, permute and unpermute 12 x 8 + (2 + 4) x 4,096 +
    (4 + 2) x 4,096 = 49,248 bytes a token, 201,719,808 in all. At expert_skew 2 the busiest rank
    receives twice the tokens: the sort doubles (+268,435,456), the rest stays (before: nothing moved)."""
    from labs.core.engine.experts import moe_pass_bytes, received_load

    mixtral = Model.get("mixtral-8x7b")
    tokens = 4096.0
    sort = tokens * (4 + 4) * 2 * 4096
    own = tokens * (12 * 8 + (2 + 2 * 2) * 4096 + (2 * 2 + 2) * 4096)
    assert (sort, own) == (268_435_456, 201_719_808)
    for skew in (1.0, 2.0):
        engine = moe_pass_bytes(mixtral, tokens, 1.0, 4.0, SCALAR, received_load(0.0, skew, SCALAR))
        error = report(f"Mixtral EP 4 MoE pass bytes at skew {skew:g}, MB", engine / 1e6, (own + skew * sort) / 1e6)
        assert abs(error) < 1e-12
    # a capacity factor drops what exceeds it before the dispatch: skew 2 at c = 1.25 receives 1.25x
    assert received_load(1.25, 2.0, SCALAR) == 1.25
    # EP = experts (one expert a rank): nothing to sort, so skew moves none of these bytes
    assert moe_pass_bytes(mixtral, tokens, 1.0, 8.0, SCALAR, 2.0) == moe_pass_bytes(mixtral, tokens, 1.0, 8.0, SCALAR, 1.0)


@pytest.mark.parametrize("precision, freed", [
    # NVFP4: 4-bit values (0.5 byte) and one E4M3 scale per 16 (1/16): 0.5625 saved for bf16's 2,
    # 1.4375 freed, on the 85% of layers the recipe runs in NVFP4: 1.4375 x 0.85 = 1.221875
    ("nvfp4", (2 - (0.5 + 1 / 16)) * 0.85),
    # MXFP8: 1 byte and one E8M0 scale per 32: 2 - 1.03125 = 0.96875
    ("mxfp8", 2 - (1 + 1 / 32)),
    # per-tensor FP8: 1 byte, one fp32 scale a tensor: 1
    ("fp8", 2 - 1),
])
def test_saved_gemm_inputs_at_their_format_bytes(precision, freed):
    """Llama 3 8B (32 layers, h 4,096, f 14,336) at 8,192 tokens on a DGX B200, TP 1, no pipeline,
    selective recompute: the QKV and FC1 inputs (2h) and the FC2 input (f) of each layer are saved
    quantized. Against bf16 the activations fall by 32 x 8,192 x (2 x 4,096 + 14,336) x freed =
    5,905,580,032 x freed bytes (NVFP4: 7.216 GB; before, 5.906 GB, FP8's byte for every format)."""
    def activations(name):
        plan = Plan.for_era("megatron-core-2025", tp=1, pp=1, dp=8, micro_batch=1, global_batch=64, zero_stage=1,
                            recompute="selective", precision=name)
        return estimate(LLAMA3_8B, Cluster.get("dgx-b200", nodes=1), plan).memory.activations

    values = 32 * 8192 * (2 * 4096 + 14336)
    assert values == 5_905_580_032
    by_hand = values * freed
    error = report(f"{precision}: activations freed against bf16, GB", (activations("bf16") - activations(precision)) / 1e9, by_hand / 1e9)
    assert abs(error) < 1e-9

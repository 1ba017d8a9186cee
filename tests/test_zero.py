"""Lab 06's engine: optimizer-state precisions, ZeRO traffic per stage, ZeRO-Offload, the fewest
GPUs that fit, and the seed milestones, each against the paper or formula it comes from."""

import pytest

from conftest import report
from labs.core.engine.memory import model_state_bytes, model_state_split
from labs.core.scenarios.lab06 import FIT_ACTIVATIONS, fit_fewest, zero2_facts
from labs.core.engine.perf import Plan
from labs.core.scenarios.lab06 import (
    Activations,
    DP_SIZES,
    dp_estimate,
    dp_memory,
    fewest_gpus,
    memory_curves,
    memory_wall,
    seed_milestones,
    sized,
    traffic_ratio,
)


@pytest.mark.parametrize("optimizer, per_param", [("fp32", 16), ("bf16-moments", 12), ("8bit", 10)])
def test_optimizer_state_precision(optimizer, per_param):
    """2 + 2 bytes of bf16 weights and gradients plus the optimizer's state: fp32 Adam 12
    (ZeRO Sec. 3.1), bf16 moments 8 (DeepSeek-V3), 8-bit moments 6 (Dettmers et al. 2022)."""
    assert report(f"bytes per parameter, {optimizer}", model_state_bytes(1e9, 0, 1, optimizer=optimizer) / 1e9, per_param) == 0


def test_offload_leaves_the_weights_on_the_gpu():
    """ZeRO-Offload with ZeRO-2 keeps only the 2-byte weights on the GPU (Ren et al. 2021 Sec. 4.1)."""
    assert model_state_split(1e9, 2, 8, offload=True) == (2e9, 0.0, 0.0)
    assert model_state_split(1e9, 1, 8, offload=True)[1] == 2e9  # stage 1 still accumulates full gradients


def test_offload_pcie_volume_is_4_bytes_per_parameter():
    """Ren et al. 2021 Sec. 4: each step moves the fp16 gradients down (2M) and the fp16
    weights up (2M) per parameter of the rank's shard."""
    act = Activations(seq_len=4096, recompute="full")
    est = dp_estimate("llama2-7b", "h100-sxm", 8, 2, act, offload=True)
    shard = sized("llama2-7b", act).params / 8
    assert report("PCIe bytes per step / shard", est.comm_bytes_per_gpu["pcie"] / shard, 4.0) == pytest.approx(0, abs=1e-12)
    assert est.time.optimizer == 0 and est.time.offload == pytest.approx(est.offload.exposed_s)
    assert est.offload.cpu_adam_s > est.offload.up_s  # CPU Adam, not PCIe, is the bottleneck on DGX H100


def test_offload_needs_a_sharded_optimizer():
    with pytest.raises(ValueError, match="offload_optimizer"):
        Plan(dp=8, global_batch=8, offload_optimizer=True)
    with pytest.raises(ValueError, match="optimizer_state"):
        Plan(dp=8, global_batch=8, optimizer_state="fp64")


def test_offload_warns_when_the_host_is_too_small():
    est = dp_estimate("llama3-405b", "h100-sxm", 8, 3, FIT_ACTIVATIONS, offload=True)
    assert any("CPU memory per node" in w for w in est.warnings)


@pytest.mark.parametrize("microbatches", [1, 2, 4, 8])
def test_zero_traffic_per_stage(microbatches):
    """ZeRO Sec. 7: stages 1 and 2 send plain DP's 2 Psi, ZeRO-3 1.5x that, per micro-batch.
    Sharded gradients cannot accumulate locally, so ZeRO-2 reduce-scatters every micro-batch
    and ZeRO-3 repeats all three collectives: (m + 1)/2 and 1.5 m times DP's step traffic."""
    m = microbatches
    assert report(f"ZeRO-1 / DP bytes, m={m}", traffic_ratio(1, 0, m), 1.0) == pytest.approx(0, abs=1e-12)
    assert report(f"ZeRO-2 / ZeRO-1 bytes, m={m}", traffic_ratio(2, 1, m), (m + 1) / 2) == pytest.approx(0, abs=1e-12)
    assert report(f"ZeRO-3 / DP bytes, m={m}", traffic_ratio(3, 0, m), 1.5 * m) == pytest.approx(0, abs=1e-12)


def test_zero2_question_facts():
    facts = zero2_facts()
    assert facts["one"] == pytest.approx(1.0) and facts["accumulated"] == pytest.approx(2.5)


def test_zero_does_not_shard_activations():
    curves = memory_curves("llama2-70b", Activations())
    for stage, points in curves.items():
        assert len({round(p.activations) for p in points}) == 1, f"activations change with DP size under ZeRO-{stage}"


def test_plain_dp_memory_does_not_fall_with_more_gpus():
    """ZeRO-0 keeps the whole model state on every GPU; only NCCL's communicator appears once
    there is a group to talk to."""
    curve = memory_curves("llama2-7b", Activations())[0]
    assert curve[0].model_state == curve[-1].model_state
    assert curve[-1].total >= curve[0].total


def test_fewest_gpus_is_the_first_that_fits():
    """70B, ZeRO-3, full recompute at 4096 tokens on H100s of 81,559 MiB (85.5e9 bytes):
    16 Psi / N + activations + runtime <= HBM. By hand, 1,104 GB / N + ~7 GB of activations and
    ~3 GB of context and NCCL buffers gives N between 14 and 16; the search must return an N
    that fits with N - 1 not fitting."""
    from labs.core.engine.hardware import GPUS

    hbm = GPUS["h100-sxm"].hbm_bytes
    n = fit_fewest()
    report("fewest H100s for 70B ZeRO-3 (full recompute)", n, 1104e9 / (hbm - 10e9))
    assert 14 <= n <= 16
    assert dp_memory("llama2-70b", n, 3, FIT_ACTIVATIONS).total <= hbm < dp_memory("llama2-70b", n - 1, 3, FIT_ACTIVATIONS).total


def test_without_checkpointing_no_number_of_gpus_fits_70b():
    """Selective recompute keeps 34 s b h bytes a layer: 80 layers x 1.14 GB > 80 GB on every GPU."""
    act = Activations(seq_len=4096, recompute="selective")
    assert dp_memory("llama2-70b", 1 << 16, 3, act).activations > 80e9
    assert fewest_gpus("llama2-70b", "h100-sxm", 3, act) is None


def test_memory_wall_ordering_and_size():
    wall = memory_wall(Activations(seq_len=2048, recompute="full"))
    states = {k: m.model_state / 1e9 for k, m in wall.items()}
    report("GPT-3 175B model state under plain DP, GB", states["gpt3-175b"], 16 * 174.6)
    assert abs(states["gpt3-175b"] / (16 * 174.6) - 1) < 0.01
    assert list(states.values()) == sorted(states.values())


def test_seed_milestones_hold():
    for m in seed_milestones():
        assert abs(report(m.claim, m.engine_gb, m.stated_gb)) <= 0.05


def test_vendor_claim_is_impossible():
    """The seed's '70B, ZeRO-3 + checkpointing on 8 GPUs at 50-60 GB': the model state alone is
    16 x 69B / 8 = 138 GB per GPU."""
    mem = dp_memory("llama2-70b", 8, 3, FIT_ACTIVATIONS)
    assert mem.model_state > 130e9


def test_curves_cover_every_dp_size():
    curves = memory_curves("seed-100m", Activations(seq_len=1024), offload=True)
    assert all(len(points) == len(DP_SIZES) for points in curves.values())

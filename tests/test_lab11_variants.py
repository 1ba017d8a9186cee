"""Lab 11's fourth edition (issue 38 items 2 and 5, review P8): the MoE question's key follows the
platform, EP and batch drawn, each of its four options right for about a quarter of the class, at
DeepSeek-V3's own two batches; the all-to-alls' time by hand where they stay inside one node."""

from collections import Counter

import pytest

from labs.core.scenarios import lab11
from labs.variants import variant

IDS = [f"student-{i:03d}" for i in range(200)]


def test_each_moe_answer_is_right_for_about_a_quarter_of_the_class():
    drawn = [variant(lab11.LAB, i, salt="") for i in IDS]
    shares = Counter(v.questions["moe"].spec.correct for v in drawn)
    print({k: n / len(IDS) for k, n in sorted(shares.items())})
    assert set(shares) == set("ABCD") and all(0.18 <= n / len(IDS) <= 0.32 for n in shares.values()), shares
    assert {v.settings["platform"] for v in drawn} == set(lab11.EP_PLATFORMS)


def test_the_moe_batch_is_one_deepseek_ran():
    """P8 (review 38bda0b): no more one sequence per pipeline; the two batches of DeepSeek-V3's ramp (Sec. 4.2)."""
    for sid in IDS[:40]:
        v = variant(lab11.LAB, sid, salt="")
        assert v.settings["moe_batch"] in (3072, 15360)
        assert "grew its batch from 3,072 to 15,360" in v.questions["moe"].spec.prompt
        assert v.settings["moe_batch"] // (v.settings["moe_gpus"] // lab11.PP) >= 24


@pytest.mark.parametrize("answer", sorted(lab11.MOE_TIME_LAYOUTS))
def test_every_layout_gives_its_answer_with_room(answer):
    for layout in lab11.MOE_TIME_LAYOUTS[answer]:
        f = lab11.moe_time_facts(*layout)
        ratio = max(f["a2a"], f["bubble"]) / min(f["a2a"], f["bubble"])
        print(answer, layout, f"all-to-all {f['a2a']:.2f} s, bubble {f['bubble']:.2f} s, x{ratio:.2f}")
        assert lab11.moe_time_answer(*layout) == answer and ratio >= lab11.MOE_TIME_MARGIN


def test_all_to_all_inside_an_h800_node_by_hand():
    """EP 8 on 2,048 H800s at 15,360 sequences: 120 micro-batches of 4,096 tokens per pipeline; the
    busiest stage's 4 layers, 58 of DeepSeek-V3's 61 layers MoE (the engine spreads the 3 dense ones
    over the stages); each token's 7,168-wide bf16 vector goes to its 8 experts' GPUs, 7/8 of them the
    node's other GPUs, in dispatch and combine, forward and backward (4 passes). Over the H800's
    NVLink, 200 GB/s each way at 80% (about the 160 GB/s DeepSeek-V3 measured, Sec. 3.2.2), times
    the 0.818 of that rate NCCL's own all-to-all reaches inside a node (pplx-kernels' "Torch AtA"
    row: 302.8 of 370 GB/s on 8 H100s, eras.NCCL_LINK_SHARE), that is the exposed time, and it
    outlasts the bubble (B)."""
    e = lab11.moe_time_estimate("h800-ib", 2048, 8, 15360)
    a2a = next(c for c in e.collectives if c.key == "ep")
    assert not a2a.crosses_nodes and a2a.link == e.cluster.intra.name
    by_hand = 120 * 4 * 58 / 61 * 4096 * 8 * 7168 * 2 * 7 / 8 * 4
    rate = 200e9 * 0.8 * 302.8 / 370
    print(f"{a2a.sent_bytes / 1e9:,.1f} GB against {by_hand / 1e9:,.1f} GB by hand; {e.time.ep_comm:.2f} s against {by_hand / rate:.2f} s")
    assert a2a.sent_bytes == pytest.approx(by_hand, rel=1e-6)
    assert e.time.ep_comm == pytest.approx(by_hand / rate, rel=0.01)
    assert lab11.moe_time_answer("h800-ib", 2048, 8, 15360) == "B"


# ---- edition 5: the fit question's attention kernel ------------------------------------------------------
def test_each_fit_answer_is_right_for_about_a_quarter_of_the_class():
    drawn = [variant(lab11.LAB, i, salt="") for i in IDS]
    shares = Counter(v.questions["fit"].spec.correct for v in drawn)
    print({k: n / len(IDS) for k, n in sorted(shares.items())})
    assert set(shares) == set("ABCD") and all(0.18 <= n / len(IDS) <= 0.32 for n in shares.values()), shares
    assert {v.settings["flash"] for v in drawn} == {True, False}


@pytest.mark.parametrize("answer", sorted(lab11.FIT_LAYOUTS))
def test_every_fit_setting_gives_its_answer(answer):
    for setting in lab11.FIT_LAYOUTS[answer]:
        e = lab11.fit_estimates_stack(*setting)
        print(answer, setting, {k: f"{x.memory.total / 1e9:,.1f} GB" for k, x in e.items()})
        assert lab11.fit_answer_stack(*setting) == answer


def test_without_flash_attention_the_scores_are_the_overflow_at_4k():
    """At 4,096 tokens without flash attention the busiest GPU is over its 85.5 GB and flash
    attention alone brings it inside: weights, gradients and optimizer state are unchanged, the
    activations (with the s x s scores) three times flash attention's; the key is D, and the page's prompt names the kernel."""
    e = lab11.fit_estimates_stack(4096, 16, False)
    plain, fa = e["plain"], e["flash"]
    hbm = plain.cluster.gpu.hbm_bytes
    assert plain.memory.total > 1.1 * hbm and fa.memory.total < 0.9 * hbm, (plain.memory.total / 1e9, fa.memory.total / 1e9)
    for state in ("weights", "gradients", "optimizer"):
        assert getattr(plain.memory, state) == getattr(fa.memory, state), state
    assert plain.memory.activations > 3 * fa.memory.activations, (plain.memory.activations / 1e9, fa.memory.activations / 1e9)
    spec = lab11.fit_stack_question({"seq_len": 4096, "cp": 16, "flash": False})
    assert spec.correct == "D" and "no flash attention" in spec.prompt

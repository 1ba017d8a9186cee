"""labs.core.engine.exercises for problem sets 6, 7 and 9 (ring attention's K/V hop, block-scaled
formats, the roofline), each against a hand count."""

import pytest

from labs.core.engine import exercises as x
from labs.core.engine.hardware import GPUS
from labs.core.engine.models import Model


def test_ring_kv_block_by_hand():
    m = Model.get("llama3-70b")  # 8 K/V heads of 128: kv_dim 1,024
    assert x.ring_kv_block_bytes(m, 131072, 16, 8) == 2 * 8192 * 1024 / 8 * 2
    with pytest.raises(ValueError, match="seq_len"):
        x.ring_kv_block_bytes(m, 1000, 16)


def test_ring_hiding_tokens_meet_the_hop():
    m = Model.get("gpt3-175b")  # multi-head: kv_dim = score_dim, n* = F / B
    assert x.ring_hiding_tokens(m, 989.4e12, 450e9) == pytest.approx(989.4e12 / 450e9)
    n = x.ring_hiding_tokens(Model.get("llama3-70b"), 989.4e12, 450e9)  # 8 K/V heads of 64 query heads, all of 128
    hop = 2 * n * 1024 * 2 / 450e9  # K and V of n tokens, bf16
    attention = 4 * n * n * 8192 / 989.4e12  # one n x n block
    assert hop == pytest.approx(attention)


def test_block_scaled_bytes_by_hand():
    # MXFP8: 1 byte + one 1-byte E8M0 scale per 32 = 1.03125; NVFP4: half a byte + one E4M3 per 16 (+ 4 bytes a tensor)
    assert x.block_format("mxfp8").bytes_per_element() == 1 + 1 / 32
    assert x.block_format("nvfp4").bytes_per_element() == 0.5 + 1 / 16
    assert x.block_scaled_bytes(4096 * 4096, "nvfp4") == 4096 * 4096 / 2 + 4096 * 4096 / 16 + 4
    assert x.block_scaled_bytes(4096 * 4096, "fp8-128x128") == 4096 * 4096 + 32 * 32 * 4
    with pytest.raises(ValueError, match="format"):
        x.block_format("fp6")


def test_gemm_intensity_and_the_ridge_by_hand():
    # a square bf16 GEMM of side n: 2 n^3 / (3 n^2 x 2) = n / 3 FLOP/byte
    assert x.gemm_arithmetic_intensity(4096, 4096, 4096) == pytest.approx(4096 / 3)
    # one token through a 8192 x 8192 weight: ~1 FLOP/byte (the weight's 2 bytes per 2 FLOPs)
    assert x.gemm_arithmetic_intensity(1, 8192, 8192) == pytest.approx(2 * 8192 * 8192 / (2 * (8192 + 8192 * 8192) + 2 * 8192))
    h100 = GPUS["h100-sxm"]  # 989.4 TFLOP/s over 3.35 TB/s = 295 FLOP/byte
    assert x.ridge_flops_per_byte(h100) == pytest.approx(989.4e12 / 3.35e12)
    assert x.ridge_flops_per_byte(h100, achieved=True) == pytest.approx(794.5e12 / (3.35e12 * 0.9))

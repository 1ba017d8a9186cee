"""The model / cluster / era combinations the engine's equivalence checks draw their plans from:
benchmarks/engine_equivalence.py (one source tree's step model against another's) and
tests/test_compiled_estimate.py (the compiled step model against the interpreted one).

Each is (model, cluster, nodes, global batch, era (the stack; None for the engine's default),
fixed sweep options, DP algorithm). Both draw plans combination by combination with one random
generator, so reordering the list changes which plans they compare."""

COMBOS = [
    ("gpt3-175b", "dgx-a100", 128, 1536, "megatron-2021", {}, "ring"),
    ("gpt3-175b", "dgx-h100", 128, 1536, None, {}, "auto"),
    ("gpt3-175b", "dgx-h100", 64, 1024, "megatron-core-2024", {"precision": "fp8"}, "auto"),
    ("gpt3-175b", "dgx-a100", 96, 1536, "deepspeed-2021", {}, "ring"),
    ("gpt3-175b", "dgx-a100", 64, 1024, "megatron-2022", {}, "tree"),
    ("llama2-7b", "dgx-a100", 4, 256, "pytorch-fsdp1-2023", {}, "auto"),
    ("llama2-7b", "dgx-h100", 8, 512, "pytorch-fsdp2-2024", {"torch_compile": True}, "auto"),
    ("llama2-13b", "pcie-a100", 4, 256, None, {}, "ring"),
    ("llama2-70b", "dgx-h100", 32, 1024, "pytorch-fsdp2-2024", {}, "nvls"),
    ("llama2-70b", "dgx-h200", 16, 512, "megatron-core-2024", {}, "tree"),
    ("llama3-8b", "dgx-h100", 8, 512, None, {"cp_algorithm": "ulysses", "cp": [1, 2, 4, 8]}, "auto"),
    ("llama3-70b", "meta-h100-roce", 64, 2048, "llama3-2024", {"cp_algorithm": "all_gather"}, "auto"),
    ("llama3-405b", "meta-h100-roce", 256, 2048, "llama3-2024", {}, "auto"),
    ("llama3-405b", "dgx-b200", 128, 2048, None, {"cp_algorithm": "ring_contiguous"}, "ring"),
    ("deepseek-v3", "h800-ib", 256, 4096, None, {"precision": "fp8"}, "auto"),
    ("deepseek-v3", "dgx-h100", 128, 2048, "megatron-core-2024", {}, "tree"),
    ("seed-100m", "dgx-a100", 1, 64, None, {}, "auto"),
    ("seed-12l-512", "dgx-h100", 2, 128, "pytorch-fsdp1-2023", {}, "ring"),
    # Instinct: hipBLASLt's GEMMs by shape and RCCL's mesh (GEMM_KERNELS["cdna3"], topology._mesh_priced)
    ("llama3-70b", "mi300x", 16, 1024, "rocm-megatron-2025", {"precision": "fp8"}, "auto"),
    ("mixtral-8x7b", "mi355x", 8, 512, None, {}, "auto"),
    # torchtitan's 2025 MoE: torch._grouped_mm's experts (gemm.GROUPED_LAUNCH_SHARE)
    ("qwen3-30b-a3b", "dgx-h100", 8, 512, "torchtitan-2025", {}, "auto"),
]

# DualPipe's schedule fixed: the compiled-estimate test draws these after the others; the
# equivalence harness does not run them
DUALPIPE_COMBOS = [
    ("deepseek-v3", "h800-ib", 256, 4096, None, {"schedule": "dualpipe", "precision": "fp8"}, "auto"),
    ("llama3-70b", "dgx-h100", 64, 2048, None, {"schedule": "dualpipe"}, "ring"),
]

"""Every catalog value that no measurement or datasheet backs, listed, so that the list can only
change on purpose (issue 36 item 2): a new assumption must be added here by hand, and a
measurement that replaces one must take it out.

The list is labs.core.engine.validate.unconfirmed_constants(): each GPU's `unconfirmed` notes
("field: assumption", one per constant), and every link, host or other sourced catalog entry
(and power-curve point) whose name or source says "unconfirmed" or "assumed". `pytest -s` prints
what each one assumes; `python -m labs.core.engine.validate` prints them per GPU beside the rows.
"""

from __future__ import annotations

from labs.core.engine.hardware import GPUS
from labs.core.engine.validate import unconfirmed_constants

EXPECTED = [
    "gpu a100-sxm-40gb mamf_flops",
    "gpu b200 attention_flops",
    "gpu b200 hbm_efficiency",
    "gpu b300 attention_flops",
    "gpu gb200 attention_flops",
    "gpu gb200 hbm_bytes",
    "gpu gb200 hbm_efficiency",
    "gpu gb200 sms",
    "gpu gb300 attention_flops",
    "gpu gb300 fp8_mamf_flops",
    "gpu gb300 hbm_bytes",
    "gpu gb300 hbm_efficiency",
    "gpu gb300 mamf_flops",
    "gpu gb300 sms",
    "gpu h100-94gb-hbm2e fp8_mamf_flops",
    "gpu h100-94gb-hbm2e mamf_flops",
    "gpu h100-nvl-94gb fp8_mamf_flops",
    "gpu h100-nvl-94gb mamf_flops",
    "gpu h100-sxm-96gb hbm_bytes",
    "gpu h100-sxm-96gb tdp_w",
    "gpu h800-sxm fp8_mamf_flops",
    "gpu h800-sxm mamf_flops",
    "gpu mi300x attention_flops",
    "gpu mi300x fp8_mamf_flops",
    "gpu mi325x attention_flops",
    "gpu mi325x fp8_mamf_flops",
    "gpu mi325x hbm_efficiency",
    "gpu mi355x attention_flops",
    "gpu mi355x fp8_mamf_flops",
    "gpu mi355x hbm_efficiency",
    "host dgx-b200",
    "host gb200-tray",
    "host jean-zay-a100",
    "link ib-hdr-sharp",
    "link ib-ndr-sharp",
    "link ib-xdr",
    "link ib-xdr-sharp",
    "link nvlink-c2c",
    "link nvlink5",
    "link opa-100",
    "link roce-400",
    "link xgmi-mi355x",
    "power_curve gh100 400 W",
    # the stacks of 2025-26 (labs.core.engine.eras: Era.unconfirmed)
    "stack megatron-core-2025 a2a_link_share",
    "stack megatron-core-2025 cuda_graphs",
    "stack megatron-core-2025 moe_a2a_overlap",
    "stack rocm-megatron-2025 a2a_link_share",
    "stack rocm-megatron-2025 attention_kernel",
    "stack rocm-megatron-2025 cpu_s_per_kernel",
    "stack rocm-megatron-2025 kernels_per_layer",
    "stack torchtitan-2025 fp8_param_gather",
    "stack deepseek-v3-2024 fp8_weight_cache",
]


def test_the_unconfirmed_list_changes_only_on_purpose():
    found = unconfirmed_constants()
    for which, assumption in found:
        print(f"{which:36s} {assumption}")
    keys = [which for which, _ in found]
    added, removed = sorted(set(keys) - set(EXPECTED)), sorted(set(EXPECTED) - set(keys))
    assert not added and not removed, (
        f"new unconfirmed constants {added} (add each to EXPECTED with its reason in the catalog), "
        f"now backed {removed} (take them out of EXPECTED)"
    )
    # - 12: SM / CU counts (B200, B300, MI300X, MI325X, MI355X), AMD's HBM in GiB (MI300X, MI325X, MI355X) and TDPs
    # (B300, GB300, MI325X, MI355X) now rest on device queries and vendor pages (kernel_benchmarks_v4.json ds_*_sms,
    # ds_*_vram_*, ds_b300_max_tgp, ds_gb300_max_power, ds_*_typical_board_power; tests/test_gpus_v4.py);
    # - 1: GB300's HBM bandwidth, NVIDIA's NVL72 rack figure over its 72 GPUs (ds_gb300_hbm_tbs);
    # - 2: B300's HBM as nvidia-smi shows it and its BabelStream triad share (ds_b300_smi_mib, hbm_babelstream_b300_triad);
    # - 1: MI300X's HBM efficiency, Azure's STREAM triad (hbm_azure_mi300x_triad);
    # - 1: the MI355X node's host memory, MLPerf's system description (pf_mi355x_host_memory)
    assert len(keys) == len(EXPECTED) == 57 + 7 + 1 + 3 + 1 - 12 - 1 - 2 - 1 - 1  # + 1: RCCL's all-to-all; + 7: the stacks of 2025-26; + 1: DeepSeek-V3's online quantization; + 3: SHARP's reduction rate per switch generation


# The block-scaled formats' assumptions (labs.core.engine.precision.UNCONFIRMED), beside the catalog's.
EXPECTED_PRECISION = [
    "activations block-scaled",
    "cache fp8 cdna",
    "cache fp8_blockwise blackwell",
    "cache nvfp4 blackwell",
    "gemm fp8_blockwise blackwell",
    "gemm mxfp8 blackwell",
    "gemm nvfp4 b200 b300 gb300",
    "quantize block-scaled",
]


def test_the_precision_assumptions_change_only_on_purpose():
    from labs.core.engine.precision import UNCONFIRMED

    for which, assumption in sorted(UNCONFIRMED.items()):
        print(f"{which:36s} {assumption}")
    assert sorted(UNCONFIRMED) == EXPECTED_PRECISION and all(UNCONFIRMED.values())


def test_a_gpu_whose_text_says_unconfirmed_lists_what():
    """A GPU whose name or source still says "unconfirmed", or whose confirmed flag is False, names
    the field and the assumption in its `unconfirmed` notes (GPU.__post_init__ refuses the flag alone)."""
    for key, gpu in GPUS.items():
        if "unconfirmed" in f"{gpu.name} {gpu.source}".lower() or not gpu.confirmed:
            assert gpu.unconfirmed, key

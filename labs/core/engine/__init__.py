"""The physics engine: hardware and model catalogs, collectives and topology, memory, pipelines,
the step model (estimate on one plan, sweep on every plan), eras, calibration and validation.
It imports neither the lab kit (labs.core's ledger, widgets, charts, scenarios) nor marimo.

    from labs.core.engine import Model, Cluster, Plan, estimate, sweep
"""

from importlib import import_module

ENGINE_VERSION = "0.4.6"  # engine v4 (Blackwell, NVLink domains, kernels by shape, collectives at every size, memory as it runs);
# 0.4.1: block-scaled formats, the FP8 copy and transpose on Hopper, SP's backward re-gather, the 2025-26 stacks: outputs moved
# 0.4.2: Lab 14's straggler timings read one jitter field per job (rotated by seed, float32), not a fresh draw per seed: its slowdown and flagged counts moved
# 0.4.3: MoE's sort and unsort of the received tokens each counted (8k bytes an element, not 4k), FSDP1's no_sync gradients, FSDP2's kept
# SP input, block-scaled activations at their own bytes: Lab 11's capacity step, Lab 15's step times and its cost key moved
# 0.4.4: NVLSTree's network term doubles on two NVLink domains and halves past them (NCCL tuning.cc), and a GB200 NVL72
# rack reaches 405.74 GB/s through its NICs (CoreWeave's 20 racks): DP all-reduces over two whole DGX nodes and NVL72 racks moved
# 0.4.4 also: Megatron-Core's and TE's column-parallel linears hide the backward's input-gradient all-reduce / reduce-scatter
# behind their weight-gradient GEMM (Era.dgrad_comm_behind_wgrad): TP plans without userbuffers moved
# 0.4.5: across NVLink domains of several hosts (NVL72 racks) NVLSTree's NIC pipeline carries M / (g (1 + log2 domains))
# and ramps like the ring (collectives.domain_tree_ramp); the rack's scale-out cap is 417 GB/s, both fitted on CoreWeave's
# 2- and 20-rack rows: NVL72 plans' DP reductions moved, and with them Lab 05 edition 6's design options
# 0.4.6: Instinct's GEMMs by shape fitted on MI300X's hipBLASLt FP8 rows (GEMM_KERNELS['cdna3'], was Hopper's), and
# RCCL's 8-channel all-pairs all-reduce at 0.735 of the ring's bandwidth (rccl-tests rows): Instinct plans moved; no lab
# prices an Instinct plan (problem set 9's MI300X ridge reads the MAMF, unchanged)
# 0.4.6 also: torchtitan 2025's experts run torch._grouped_mm at 0.92 of the one grouped launch (H200 kernel rows), and a
# per-expert loop of GEMM calls pays 7.1 us a call beside its kernels (grouped_gemm's cuBLAS loop on H100): MoE plans of those stacks moved;
# B200's and GB200's HBM reach B300's measured 6.567 TB/s (was H100's 0.90 share): their memory-bound kernels moved

# Each public name from the module that defines it, imported when first read (PEP 562): a page
# whose first question needs the step model alone does not load the search (sweep) with it.
_HOMES = {"CLUSTERS": "hardware", "GPUS": "hardware", "LINKS": "hardware", "Cluster": "hardware", "MODELS": "models", "Model": "models",
          "Estimate": "perf", "estimate": "perf", "Plan": "plan", "sweep": "search"}

__all__ = ["CLUSTERS", "GPUS", "LINKS", "MODELS", "Cluster", "Model", "Plan", "Estimate", "estimate", "sweep", "ENGINE_VERSION"]


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})

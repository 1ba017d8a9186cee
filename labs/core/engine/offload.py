"""ZeRO-3 in HBM, ZeRO-Offload (optimizer state in CPU memory) and ZeRO-Infinity (optimizer
state on NVMe): what each keeps where and moves over which link in one step.

ZeRO-Offload is the engine's own (labs.core.engine.stages.optimizer: gradients down PCIe, CPU
Adam streaming host DRAM, bf16 weights up PCIe; perf.OffloadCost). ZeRO-Infinity
(Rajbhandari et al. 2021, arXiv:2104.07857, Sec. 5-6; DeepSpeed `offload_optimizer: {device:
nvme}`) keeps the optimizer state on the node's NVMe: the same PCIe copies and CPU Adam, and in
every step each rank's optimizer shard read from NVMe and written back. DeepSpeed overlaps that
I/O with CPU Adam sub-group by sub-group (its `overlap_events`), so the step waits for the
longer of the two. Its parameter offload (`offload_param`, weights read from NVMe at every
forward and backward) is not priced here.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.core.engine.dp_scaling import server
from labs.core.engine.memory import GRAD_BYTES, OPTIMIZER_STATES
from labs.core.engine.models import Model
from labs.core.engine.perf import Estimate, Plan, estimate
from labs.core.engine.validation import check_choice, check_positive


@dataclass(frozen=True)
class NVMe:
    """A node's local NVMe array as one file system sees it (RAID-0 over its drives)."""

    name: str
    read_bytes_per_s: float
    write_bytes_per_s: float
    source: str

    def __post_init__(self):
        check_positive("read_bytes_per_s", self.read_bytes_per_s)
        check_positive("write_bytes_per_s", self.write_bytes_per_s)


GB = 1e9
NVME = {
    # DeepSpeed's DeepNVMe microbenchmark (deepspeedai/DeepSpeed blogs/deepnvme/08-2024/README.md,
    # Figure 1): an Azure NC96ads_A100_v4 (4 A100 80GB PCIe) has four NVMe SSDs (3.25 GB/s reads each)
    # in RAID-0; ds_io moves 1 GB between them and CPU buffers at 10 GB/s reading and 5 GB/s writing,
    # as fio does. Any other server is assumed to have this array (unconfirmed: a DGX's data drives
    # are not in a stored measurement).
    "deepnvme-nc96ads-a100": NVMe("local NVMe, RAID-0 (Azure NC96ads A100 v4; assumed elsewhere, unconfirmed)", 10 * GB, 5 * GB,
                                  "DeepNVMe blog (deepspeedai/DeepSpeed blogs/deepnvme/08-2024, Fig. 1): 4 NVMe SSDs in RAID-0 to CPU buffers, ds_io"),
}
PLACEMENTS = ("hbm", "cpu", "nvme")
PLACEMENT_NAMES = {"hbm": "ZeRO-3, all in HBM", "cpu": "ZeRO-Offload (optimizer in CPU memory)", "nvme": "ZeRO-Infinity (optimizer on NVMe)"}


def _estimate(model_key: str, cluster_key: str, gpus: int, offload: bool, micro_batch: int, seq_len: int, microbatches: int) -> Estimate:
    model = Model.get(model_key, seq_len=seq_len)
    plan = Plan(dp=gpus, micro_batch=micro_batch, global_batch=micro_batch * gpus * microbatches, zero_stage=3, recompute="full",
                flash_attention=True, offload_optimizer=offload)
    return estimate(model, server(cluster_key, gpus), plan)


def placement_rows(model_key: str, cluster_key: str = "dgx-h100", gpus: int = 8, micro_batch: int = 1, seq_len: int = 4096,
                   microbatches: int = 1, nvme: str = "deepnvme-nc96ads-a100") -> list[dict]:
    """One row per placement of the optimizer state (ZeRO-3 throughout, one server of `gpus`
    GPUs): bytes per GPU in HBM, per node in CPU memory and on NVMe; bytes each step moves over
    PCIe (per GPU) and NVMe (per node); the seconds of each; the step time; whether it fits
    (HBM, and the host's CPU memory; the NVMe array's size is not checked)."""
    check_choice("nvme", nvme, NVME)
    check_positive("microbatches", microbatches, integer=True, maximum=1 << 12)
    drive = NVME[nvme]
    on_gpu = _estimate(model_key, cluster_key, gpus, False, micro_batch, seq_len, microbatches)
    off = _estimate(model_key, cluster_key, gpus, True, micro_batch, seq_len, microbatches)
    o = off.offload
    shard = o.host_bytes_per_node / ((GRAD_BYTES + OPTIMIZER_STATES[off.plan.optimizer_state].bytes_per_param) * gpus)
    state = OPTIMIZER_STATES[off.plan.optimizer_state].bytes_per_param * shard * gpus  # the node's optimizer state
    nvme_read, nvme_write = state / drive.read_bytes_per_s, state / drive.write_bytes_per_s
    waits = max(0.0, nvme_read + nvme_write - o.cpu_adam_s)  # I/O beyond what CPU Adam hides
    host = off.cluster.host.memory_bytes
    base = {"pcie_bytes": 0.0, "nvme_bytes": 0.0, "pcie_s": 0.0, "cpu_adam_s": 0.0, "nvme_s": 0.0}
    return [
        {**base, "placement": "hbm", "name": PLACEMENT_NAMES["hbm"], "hbm_bytes": on_gpu.memory.total, "cpu_bytes": 0.0, "nvme_stored": 0.0,
         "step_s": on_gpu.step_time_s, "fits": on_gpu.fits},
        {**base, "placement": "cpu", "name": PLACEMENT_NAMES["cpu"], "hbm_bytes": off.memory.total, "cpu_bytes": o.host_bytes_per_node, "nvme_stored": 0.0,
         "pcie_bytes": o.pcie_bytes, "pcie_s": o.down_s + o.up_s, "cpu_adam_s": o.cpu_adam_s, "step_s": off.step_time_s, "fits": off.fits and o.host_bytes_per_node <= host},
        {**base, "placement": "nvme", "name": PLACEMENT_NAMES["nvme"], "hbm_bytes": off.memory.total, "cpu_bytes": o.host_bytes_per_node - state,
         "nvme_stored": state, "pcie_bytes": o.pcie_bytes, "nvme_bytes": 2 * state, "pcie_s": o.down_s + o.up_s, "cpu_adam_s": o.cpu_adam_s,
         "nvme_s": nvme_read + nvme_write, "step_s": off.step_time_s + waits, "fits": off.fits and o.host_bytes_per_node - state <= host},
    ]

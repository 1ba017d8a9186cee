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
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.core.validation import check_choice


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

    def defaults(self) -> dict:
        return {name: getattr(self, name)[0] for name in ERA_FIELDS}


ERA_FIELDS = (
    "schedule", "recompute", "sequence_parallel", "flash_attention", "zero_stage", "tp_comm_overlap",
    "grad_reduce_dtype", "dp_overlap", "pp_overlap", "dp_algorithm", "cp_algorithm", "precision",
)

F, T = False, True
ERAS: dict[str, Era] = {
    #                       schedule                             min pp  recompute                        SP      flash   ZeRO          TP ovl  grads              DP ovl  PP ovl  DP algorithm
    "megatron-2021": Era("megatron-2021", ("interleaved", "1f1b"), 3, ("full", "none"), (F,), (F,), (0,), (F,), ("bf16",), (F,), (F,), ("auto", "ring", "tree")),
    "deepspeed-2021": Era("deepspeed-2021", ("1f1b",), 3, ("full", "none"), (F,), (F,), (0, 1, 2, 3), (F,), ("bf16",), (T, F), (F,), ("auto", "ring", "tree")),
    "megatron-2022": Era("megatron-2022", ("interleaved", "1f1b"), 3, ("selective", "full", "none"), (T, F), (F,), (0,), (F,), ("bf16",), (F,), (F,), ("auto", "ring", "tree")),
    "megatron-core-2024": Era("megatron-core-2024", ("interleaved", "1f1b"), 2, ("selective", "none", "full"), (T, F), (T, F), (1, 0), (T, F), ("fp32", "bf16"), (T, F), (T, F), ("auto", "ring", "tree", "nvls"), ("ring", "all_gather"), 8, ("bf16", "fp8")),
    # FSDP that keeps the gathered weights through the step (part 2's reshard_after_forward=False)
    # is ZeRO-2's memory and traffic: sharded gradients and optimizer, whole weights in the step.
    "llama3-2024": Era("llama3-2024", ("interleaved", "1f1b"), 2, ("none", "selective", "full"), (T,), (T,), (2, 1), (F, T), ("fp32",), (T,), (T,), ("auto", "ring", "tree"), ("all_gather", "ring"), 16),
}
ERA_NAMES = tuple(ERAS)


def get_era(name: str | None) -> Era | None:
    if name is None:
        return None
    check_choice("era", name, ERA_NAMES + (None,))
    return ERAS[name]


def check_plan_in_era(era: Era, values: dict) -> None:
    """Refuse a plan field value the era's software did not have, naming the field and era."""
    for name in ERA_FIELDS:
        if name in values and values[name] not in getattr(era, name):
            raise ValueError(f"{name}={values[name]!r} is not available in era {era.name!r}; it allows {getattr(era, name)}")
    if values.get("schedule") == "interleaved" and values.get("pp", era.interleave_min_pp) < era.interleave_min_pp:
        raise ValueError(f"pp={values.get('pp')} is too few stages for the interleaved schedule in era {era.name!r} (needs pp >= {era.interleave_min_pp})")

"""Context parallelism: who does how much causal attention, and what Ulysses may split.

Context parallelism (CP) cuts one sequence of s tokens over cp ranks. Under a causal mask a
query attends only to the keys before it, so the work a rank does depends on which tokens it
holds (work counted in query-key pairs, the diagonal block's half included):

- "contiguous": rank i holds the i-th block of s/cp tokens (Liu et al. 2023, Ring Attention, as
  first written): it does i + 1/2 blocks of (s/cp)^2 pairs, the last rank cp - 1/2, the mean
  cp/2, so the last rank does 2 - 1/cp times the mean and every ring step waits for it.
- "zigzag": the sequence in 2 cp chunks, rank i holding chunks i and 2 cp - 1 - i (Transformer
  Engine's context-parallel attention, Megatron-Core; Llama 3 Sec. 3.3.2 uses the same split for
  its all-gather CP): (i + 1/2) + (2 cp - 1 - i + 1/2) = 2 cp chunk-pairs on every rank, balanced.
- "striped": token t to rank t mod cp (Brandon et al. 2023, Striped Attention): rank i's n = s/cp
  queries see n (i + 1) + cp n (n - 1)/2 keys, within (cp - 1)/(2 (n - 1) + ...) of the mean.

DeepSpeed-Ulysses (Jacobs et al. 2023) instead re-shards attention by heads: an all-to-all turns
each rank's s/cp tokens x all heads into all s tokens x heads/cp before attention, another turns
the output back. Each rank must then hold whole K/V heads: with grouped-query attention the KV
heads left on a TP rank (kv_heads / tp), not the query heads, bound the degree (Llama 3 405B: 8
KV heads at TP 8 leave one per rank, so Ulysses cannot go past 1 there without replicating KV).
"""

from __future__ import annotations

import numpy as np

from labs.core.models import Model
from labs.core.validation import check_choice, check_positive

CP_SPLITS = ("contiguous", "zigzag", "striped")


def causal_work(cp: int, split: str, seq_len: int) -> np.ndarray:
    """Query-key pairs of causal attention each of the cp ranks computes for one sequence of
    seq_len tokens (the diagonal's own pair counted: t + 1 keys for query t)."""
    check_positive("cp", cp, integer=True, maximum=1 << 16)
    check_choice("split", split, CP_SPLITS)
    check_positive("seq_len", seq_len, integer=True, maximum=1 << 40)
    parts = 2 * cp if split == "zigzag" else cp
    if seq_len % parts:
        raise ValueError(f"seq_len must be a multiple of {parts} for the {split} split over cp={cp}, got {seq_len}")
    rank = np.arange(cp, dtype=float)
    if split == "striped":
        n = seq_len / cp  # rank i holds tokens i, i + cp, ...: query i + k cp sees i + k cp + 1 keys
        return n * (rank + 1) + cp * n * (n - 1) / 2
    c = seq_len / parts  # tokens per chunk; chunk j holds queries jc..jc+c-1: j c^2 + c(c+1)/2 pairs
    chunk = lambda j: j * c * c + c * (c + 1) / 2  # noqa: E731
    return chunk(rank) + (chunk(2 * cp - 1 - rank) if split == "zigzag" else 0.0)


def causal_imbalance(cp: int, split: str, seq_len: int) -> float:
    """The busiest rank's attention work over the mean: what the ring waits for (1 is balanced)."""
    work = causal_work(cp, split, seq_len)
    return float(work.max() / work.mean())


def contiguous_imbalance_columns(cp):
    """causal_imbalance of the contiguous split in the large-block limit, 2 - 1/cp, over numpy
    columns (labs.core.step prices the contiguous ring with it)."""
    cp = np.asarray(cp, dtype=float)
    return 2.0 - 1.0 / cp


def _check_model(model) -> None:
    if not isinstance(model, Model):
        raise ValueError(f"model must be a Model, got {model!r}")


def kv_heads_per_tp_rank(model: Model, tp: int) -> float:
    """K/V heads each TP rank holds: kv_heads / tp under GQA (MLA decompresses a K and V per
    query head, so heads / tp)."""
    _check_model(model)
    check_positive("tp", tp, integer=True, maximum=1 << 20)
    return model.kv_head_count / tp


def ulysses_fits(kv_per_tp_rank, cp):
    """Where Ulysses can run at degree cp (numpy columns welcome): each CP rank needs a whole
    number of the KV heads a TP rank holds; cp = 1 always runs."""
    kv, cp = np.asarray(kv_per_tp_rank, dtype=float), np.asarray(cp, dtype=float)
    return (cp == 1) | ((kv >= cp) & (kv % cp == 0))


def check_ulysses(model: Model, tp: int, cp: int) -> None:
    """Refuse a Ulysses degree the KV heads left on each TP rank cannot cover, naming it."""
    _check_model(model)
    check_positive("tp", tp, integer=True, maximum=1 << 20)
    check_positive("cp", cp, integer=True, maximum=1 << 20)
    per_rank = kv_heads_per_tp_rank(model, tp)
    if not ulysses_fits(per_rank, cp):
        raise ValueError(
            f"cp={cp} with cp_algorithm='ulysses' needs a whole number of KV heads per CP rank, but {model.name} leaves "
            f"{per_rank:g} KV head(s) on each TP rank ({model.kv_head_count} KV heads / tp={tp}): Ulysses' degree must divide that; "
            "use cp_algorithm='ring' or 'all_gather', or a smaller TP"
        )

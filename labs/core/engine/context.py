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
the output back. Each CP rank must hold whole query heads, so the query heads left on a TP rank
(heads / tp) bound the degree: cp must divide them. Under grouped-query attention a TP rank may
hold fewer K/V heads than cp; implementations then repeat each K/V head cp / n_kv times before
the all-to-all, so that every CP rank receives the K/V head its query heads share (NVlabs/Long-RL
verl/utils/sequence_parallel/ulysses_attn.py, _ExpandKVFunction, "Repeat the KV head to extend
sequence parallel support for Ulysses"; verl #1226: "sp_size can be divisible by
num_key_value_heads ... since kv head can be repeated"). n_kv and cp must then divide one
another, and the K and V the all-to-all carries grow by max(1, cp / n_kv): Llama 3 405B at TP 8
(16 query heads, 1 K/V head per rank) runs Ulysses up to CP 16, its K/V bytes 16-fold.
"""

from __future__ import annotations

import numpy as np

from labs.core.engine.models import Model
from labs.core.engine.stages.xp import NUMPY
from labs.core.engine.validation import check_choice, check_positive

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


def contiguous_imbalance_columns(cp, xp=NUMPY):
    """causal_imbalance of the contiguous split in the large-block limit, 2 - 1/cp, over numpy
    columns (labs.core.engine.step prices the contiguous ring with it)."""
    return 2.0 - 1.0 / xp.floats(cp)


def _check_model(model) -> None:
    if not isinstance(model, Model):
        raise ValueError(f"model must be a Model, got {model!r}")


def kv_heads_per_tp_rank(model: Model, tp: int) -> float:
    """K/V heads each TP rank holds: kv_heads / tp under GQA (MLA decompresses a K and V per
    query head, so heads / tp)."""
    _check_model(model)
    check_positive("tp", tp, integer=True, maximum=1 << 20)
    return model.kv_head_count / tp


def query_heads_per_tp_rank(model: Model, tp: int) -> float:
    """Query heads each TP rank holds: heads / tp."""
    _check_model(model)
    check_positive("tp", tp, integer=True, maximum=1 << 20)
    return model.heads / tp


def ulysses_fits(q_per_tp_rank, kv_per_tp_rank, cp):
    """Where Ulysses can run at degree cp (numpy columns welcome): cp divides the query heads a TP
    rank holds, and its K/V heads either split evenly over the CP ranks or repeat a whole number
    of times (each to cp / n_kv of them); cp = 1 always runs."""
    q, kv, cp = (np.asarray(x, dtype=float) for x in (q_per_tp_rank, kv_per_tp_rank, cp))
    whole_q = (q >= cp) & (q % cp == 0)
    kv_ok = (kv >= 1) & (kv % 1 == 0) & (((kv >= cp) & (kv % cp == 0)) | ((kv < cp) & (cp % np.maximum(kv, 1.0) == 0)))
    return (cp == 1) | (whole_q & kv_ok)


def ulysses_kv_replication(kv_per_tp_rank, cp, xp=NUMPY):
    """How many times the all-to-all carries each K/V head: max(1, cp / n_kv) (module docstring)."""
    kv, cp = xp.floats(kv_per_tp_rank), xp.floats(cp)
    return xp.maximum(1.0, cp / xp.maximum(kv, 1e-300))


def check_ulysses(model: Model, tp: int, cp: int) -> None:
    """Refuse a Ulysses degree the heads left on each TP rank cannot cover, naming it."""
    _check_model(model)
    check_positive("tp", tp, integer=True, maximum=1 << 20)
    check_positive("cp", cp, integer=True, maximum=1 << 20)
    q, kv = query_heads_per_tp_rank(model, tp), kv_heads_per_tp_rank(model, tp)
    if not ulysses_fits(q, kv, cp):
        raise ValueError(
            f"cp={cp} with cp_algorithm='ulysses' needs whole query heads per CP rank and K/V heads that split over or repeat across "
            f"the CP ranks, but {model.name} leaves {q:g} query head(s) and {kv:g} K/V head(s) on each TP rank ({model.heads} / tp={tp}, "
            f"{model.kv_head_count} / tp={tp}): Ulysses' degree must divide the query heads, and divide or be a multiple of the K/V heads; "
            "use cp_algorithm='ring' or 'all_gather', or a smaller TP"
        )


def ulysses_qkv_bytes(model: Model, tokens, tp, cp, value_bytes: float = 2.0, xp=NUMPY):
    """Bytes of Q, K and V one rank holds before Ulysses' first all-to-all (numpy columns): its
    `tokens` (b s / cp) x (score_dim + 2 kv_dim) / tp values, K and V counted once per CP rank
    that needs them (ulysses_kv_replication)."""
    tokens, tp, cp = xp.floats(tokens), xp.floats(tp), xp.floats(cp)
    repeat = ulysses_kv_replication(model.kv_head_count / tp, cp, xp)
    return tokens * (model.score_dim + 2 * model.kv_dim * repeat) / tp * value_bytes

"""Transformer specs, their parameter counts and their FLOPs per iteration.

FLOPs follow Korthikanti et al. 2022 (arXiv:2205.05198) Appendix A: a layer's forward pass
does 2 FLOPs per weight per token in its GEMMs plus 4 b s^2 h in attention (QK^T and AV);
backward does twice the forward. For a GPT layer this is 72 B L s h^2 (1 + s/(6h) + V/(12hL))
model FLOPs per iteration, and 96 B L s h^2 (1 + s/(6h) + V/(16hL)) with full recomputation
(Narayanan et al. 2021 eq. 3). The same counting extends to GQA and SwiGLU layers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from labs.core.engine.validation import check_bool, check_choice, check_positive, check_str, short, unknown_key_error

RECOMPUTE_MODES = ("none", "selective", "full")
# Finer grains (engine v3), codes after the classic three so those keep theirs; the labs' menus and
# the sweep's default space keep the classic three:
# - "ops": op-level selective checkpointing as torchtitan applies it (torch.utils.checkpoint's
#   selective policy saving every other matmul's output and the attention output): the rest of
#   the layer is re-run in the backward, half its GEMMs among it.
# - "norms_up_proj": DeepSeek-V3's (arXiv:2412.19437 Sec. 3.2.3): the RMSNorms, the MLA
#   up-projections and the SwiGLU outputs are recomputed; their inputs are what is kept.
ALL_RECOMPUTE_MODES = RECOMPUTE_MODES + ("ops", "norms_up_proj")
# A layer's attention (Model.attention_pattern): causal over the sequence, over a sliding window
# (Mistral 7B, Gemma 2/3, GPT-OSS), or inside fixed chunks (Llama 4's chunked attention).
ATTENTION_KINDS = ("full", "sliding", "chunked")
# A fused attention kernel's rate falls with the keys each query sees (fewer key tiles per query
# block to hide the prologue and epilogue behind). Measured: cuDNN forward, head dim 64, causal, on
# B200 (tests/data/kernel_benchmarks_v4.json attn_cudnn_b200_hd64_causal_s1024 .. s16384: 627, 826,
# 977, 1,071, 1,115 TFLOP/s), by the mean keys per query of causal attention over s tokens (s / 2).
# The engine's full layers run at one rate per kernel whatever s; a windowed or chunked layer runs
# at that rate times this curve's ratio between its mean keys and a full layer's at the same s
# (Model.attention_time_share). Unconfirmed below 512 mean keys (a window under ~512 tokens): no
# kernel row measures it; the 512 point is used, an upper bound on the rate (GPT-OSS's 128-token
# windows run at least this slow). The same curve serves every GPU: FA3 on H100 falls alike
# (attn_fa3_h100_pytorchbench_s512..s4096: 430 to 590 TFLOP/s).
ATTENTION_RATE_BY_MEAN_KEYS = ((512.0, 627.0), (1024.0, 826.0), (2048.0, 977.0), (4096.0, 1071.0), (8192.0, 1115.0))


def _rate_at(mean_keys: float) -> float:
    """ATTENTION_RATE_BY_MEAN_KEYS, linear in log2 of the mean keys per query, flat beyond its ends."""
    keys, rates = zip(*ATTENTION_RATE_BY_MEAN_KEYS)
    return float(np.interp(np.log2(max(mean_keys, 1.0)), np.log2(keys), rates))


@dataclass(frozen=True)
class Model:
    name: str
    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int
    ffn_hidden: int | None = None  # None: 4 * hidden
    kv_heads: int | None = None  # None: multi-head attention (kv_heads == heads)
    gated_ffn: bool = False  # SwiGLU: three FFN matrices instead of two
    tied_embeddings: bool = True
    source: str = ""
    # Mixture of experts (0 experts: dense). `dense_layers` layers keep the dense FFN of width
    # ffn_hidden (DeepSeek-V3: the first 3; Llama 4 Maverick: every other one; the engine
    # averages layers, so where they sit does not enter); the others route each token to
    # experts_per_token (top-k) of `experts` experts of width expert_ffn (gated, Megatron's
    # moe_ffn_hidden_size), plus `shared_experts` every token goes through.
    experts: int = 0
    experts_per_token: int = 0
    expert_ffn: int | None = None
    shared_experts: int = 0
    dense_layers: int = 0
    # Multi-head latent attention (DeepSeek-V2/V3; kv_lora_rank > 0): Q through a rank-q_lora_rank
    # bottleneck, K and V from a shared rank-kv_lora_rank latent plus a decoupled RoPE key;
    # per-head query/key width qk_head_dim (of which qk_rope_dim is RoPE) and value width v_head_dim.
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_dim: int = 0
    qk_head_dim: int = 0
    v_head_dim: int = 0
    # Engine v4 shapes (issue 36 item 5), every default today's behaviour:
    # - head_dim: each attention head's width (None: hidden // heads). Qwen3 and GPT-OSS set it
    #   apart from hidden / heads; the attention width is heads x head_dim (q_dim), K and V
    #   kv_heads x head_dim (kv_dim), the residual stream stays `hidden`.
    # - attention_pattern: each layer's attention kind, the tuple repeated over the layers
    #   ("full": causal over the sequence; "sliding": causal over the last `window` tokens;
    #   "chunked": causal inside blocks of `attention_chunk` tokens, Llama 4's). GPT-OSS:
    #   ("sliding", "full") with window 128. The engine averages layers (as it does MoE and dense
    #   ones), so only the counts of each kind enter.
    # - attention_sinks: a learned logit per head (GPT-OSS) that joins each softmax's denominator:
    #   `heads` parameters a layer; its FLOPs (one exp and add per query and head, against 4 x
    #   keys x head_dim in QK^T and AV) are left out as negligible.
    # - mtp_depth: DeepSeek-V3's multi-token prediction modules (0: off, as trained models are
    #   served); each is one more transformer block with its own norms and a 2h x h projection,
    #   sharing the embedding and output head, and one more output head's logits and loss.
    head_dim: int | None = None
    attention_pattern: tuple = ("full",)
    window: int = 0
    attention_chunk: int = 0
    attention_sinks: bool = False
    mtp_depth: int = 0

    def __post_init__(self):
        check_str("name", self.name)
        check_str("source", self.source)
        for name in ("gated_ffn", "tied_embeddings"):
            check_bool(name, getattr(self, name))
        for name in ("layers", "hidden", "heads", "seq_len", "vocab"):
            check_positive(name, getattr(self, name), integer=True)
        if self.ffn_hidden is not None:
            check_positive("ffn_hidden", self.ffn_hidden, integer=True)
        if self.kv_heads is not None:
            check_positive("kv_heads", self.kv_heads, integer=True)
            if self.heads % self.kv_heads:
                raise ValueError(f"kv_heads must divide heads ({self.heads}), got {self.kv_heads}")
        if self.head_dim is None:
            if self.hidden % self.heads:
                raise ValueError(f"heads must divide hidden ({self.hidden}), got {self.heads} (or give head_dim)")
        else:
            check_positive("head_dim", self.head_dim, integer=True, maximum=1 << 16)
            if self.kv_lora_rank:
                raise ValueError("head_dim does not apply to multi-head latent attention (kv_lora_rank > 0): set qk_head_dim and v_head_dim")
        self._check_attention_pattern()
        check_bool("attention_sinks", self.attention_sinks)
        check_positive("mtp_depth", self.mtp_depth, integer=True, allow_zero=True, maximum=64)
        for name in ("experts", "experts_per_token", "shared_experts", "dense_layers", "q_lora_rank", "kv_lora_rank", "qk_rope_dim", "qk_head_dim", "v_head_dim"):
            check_positive(name, getattr(self, name), integer=True, allow_zero=True, maximum=1 << 20)
        if self.experts:
            if not 0 < self.experts_per_token <= self.experts:
                raise ValueError(f"experts_per_token must be in 1..experts ({self.experts}), got {self.experts_per_token}")
            check_positive("expert_ffn", self.expert_ffn, integer=True)
            if not self.gated_ffn:
                raise ValueError("experts are modelled as gated (SwiGLU) FFNs: set gated_ffn=True")
            if self.dense_layers >= self.layers:
                raise ValueError(f"dense_layers must be fewer than layers ({self.layers}), got {self.dense_layers}")
        if self.kv_lora_rank and not (self.qk_head_dim > self.qk_rope_dim >= 0 and self.v_head_dim > 0):
            raise ValueError("multi-head latent attention needs qk_head_dim > qk_rope_dim and v_head_dim > 0")

    def _check_attention_pattern(self) -> None:
        """The pattern's kinds, and a window or chunk for each kind that needs one, no larger than
        the sequence (a larger one attends to the whole sequence: write "full" instead)."""
        pattern = self.attention_pattern
        if isinstance(pattern, list):
            pattern = tuple(pattern)
            object.__setattr__(self, "attention_pattern", pattern)
        if not isinstance(pattern, tuple) or not pattern or len(pattern) > self.layers or any(k not in ATTENTION_KINDS for k in pattern):
            raise ValueError(f"attention_pattern must be a non-empty tuple of at most layers ({self.layers}) kinds from {ATTENTION_KINDS}, got {short(pattern)}")
        for name, kind in (("window", "sliding"), ("attention_chunk", "chunked")):
            size = getattr(self, name)
            check_positive(name, size, integer=True, allow_zero=True, maximum=1 << 40)
            if (kind in pattern) != (size > 0):
                raise ValueError(f"{name} must be > 0 exactly when attention_pattern has {kind!r} layers ({pattern}), got {size}")
            if size > self.seq_len:
                raise ValueError(f"{name} must be at most seq_len ({self.seq_len}), got {size}: a {kind} layer over the whole sequence is a 'full' one")

    @classmethod
    def get(cls, key: str, **overrides) -> "Model":
        if not isinstance(key, str) or key not in MODELS:
            raise unknown_key_error("model", key, MODELS)
        unknown = set(overrides) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown Model field(s) {sorted(unknown)}")
        # a catalog entry is frozen and was checked when the catalog was built: it is shared as it is
        return replace(MODELS[key], **overrides) if overrides else MODELS[key]

    @property
    def ffn(self) -> int:
        return self.ffn_hidden if self.ffn_hidden is not None else 4 * self.hidden

    @property
    def kv_dim(self) -> float:
        """Width of K (and of V) per token: kv heads x head width; for MLA, the decompressed
        heads' mean of the key and value widths (what context parallelism exchanges)."""
        if self.mla:
            return self.heads * (self.qk_head_dim + self.v_head_dim) / 2
        return self.kv_head_count * self.head_size

    @property
    def head_size(self) -> int:
        """One attention head's width: head_dim, or hidden // heads when it is not given."""
        return self.head_dim if self.head_dim is not None else self.hidden // self.heads

    @property
    def q_dim(self) -> int:
        """Width of the queries and of the attention output per token, heads x head width: the
        QKV projection's query columns and the output projection's rows (hidden unless head_dim
        is given; MLA: its value heads, a x v_head_dim)."""
        return self.heads * self.v_head_dim if self.mla else self.heads * self.head_size

    @property
    def kv_head_count(self) -> int:
        """K/V heads a layer keeps: kv_heads under grouped-query attention, else one per query
        head (multi-head attention, and MLA, which decompresses a K and V per query head)."""
        return self.heads if self.mla or self.kv_heads is None else self.kv_heads

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def attention_params(self) -> int:
        """Q, K, V and output projections (MLA: its down- and up-projections, biases left out)."""
        h, a = self.hidden, self.heads
        if self.mla:
            q = h * self.q_lora_rank + self.q_lora_rank * a * self.qk_head_dim if self.q_lora_rank else h * a * self.qk_head_dim
            kv = h * (self.kv_lora_rank + self.qk_rope_dim) + self.kv_lora_rank * a * (self.qk_head_dim - self.qk_rope_dim + self.v_head_dim)
            return q + kv + a * self.v_head_dim * h
        return 2 * h * self.q_dim + 2 * h * self.kv_dim

    @property
    def score_dim(self) -> float:
        """Width that makes a layer's attention core 4 s^2 score_dim FLOPs forward: heads x
        head_dim for multi-head or grouped attention (the hidden size unless head_dim is given),
        a (qk + v head widths) / 2 for MLA."""
        return self.heads * (self.qk_head_dim + self.v_head_dim) / 2 if self.mla else float(self.q_dim)

    def layers_of_kind(self, kind: str) -> int:
        """How many of the layers attend as `kind` (attention_pattern repeated over the layers)."""
        check_choice("kind", kind, ATTENTION_KINDS)
        n, rest = divmod(self.layers, len(self.attention_pattern))
        return n * self.attention_pattern.count(kind) + self.attention_pattern[:rest].count(kind)

    def causal_pairs(self, kind: str, s: float | None = None) -> float:
        """Query-key pairs one causal layer of `kind` scores over s tokens (seq_len by default),
        counted as the engine counts full attention, s^2 / 2 (the continuous count: the diagonal's
        s / 2 left out): a sliding window of w (query t sees min(t, w) keys), s w - w^2 / 2; chunks
        of c, n c^2 / 2 + r^2 / 2 for n whole chunks and r tokens left over."""
        s = float(self.seq_len if s is None else s)
        if kind == "sliding":
            w = min(float(self.window), s)
            return s * w - w * w / 2
        if kind == "chunked":
            c = min(float(self.attention_chunk), s)
            n = s // c
            return n * c * c / 2 + (s - n * c) ** 2 / 2
        return s * s / 2

    @property
    def attention_share(self) -> float:
        """Causal query-key pairs of the average layer over full causal attention's: 1 when every
        layer is full; GPT-OSS at 4K (half its layers a 128-token window) 0.53."""
        if self.attention_pattern == ("full",):
            return 1.0
        full = self.causal_pairs("full")
        return sum(self.layers_of_kind(k) * self.causal_pairs(k) / full for k in self.attention_pattern_kinds) / self.layers

    @property
    def attention_pattern_kinds(self) -> tuple:
        """The attention kinds the layers use, in ATTENTION_KINDS' order."""
        return tuple(k for k in ATTENTION_KINDS if k in self.attention_pattern)

    @property
    def attention_time_share(self) -> float:
        """The average layer's fused-attention seconds over a full causal layer's at the model's
        sequence: each kind's causal pairs (causal_pairs) over its kernel's rate relative to a full
        layer's (ATTENTION_RATE_BY_MEAN_KEYS at each one's mean keys per query). 1 when every layer
        is full; GPT-OSS at 4K 0.55 (its 128-token windows at 64% of the full layers' rate)."""
        if self.attention_pattern == ("full",):
            return 1.0
        s = float(self.seq_len)
        full_pairs, full_rate = self.causal_pairs("full"), _rate_at(s / 2)
        share = sum(self.layers_of_kind(k) * self.causal_pairs(k) / full_pairs * full_rate / _rate_at(self.causal_pairs(k) / s)
                    for k in self.attention_pattern_kinds)
        return share / self.layers

    @property
    def dense_ffn_params(self) -> int:
        return (3 if self.gated_ffn else 2) * self.hidden * self.ffn

    @property
    def expert_params(self) -> int:
        """One routed or shared expert: a SwiGLU FFN of width expert_ffn."""
        return 3 * self.hidden * (self.expert_ffn or 0)

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.experts else 0

    @property
    def moe_share(self) -> float:
        """Fraction of layers that are MoE (the engine treats layers as their average)."""
        return self.moe_layers / self.layers

    @property
    def layer_expert_params(self) -> float:
        """Routed-expert weights per layer, averaged over the layers: what expert parallelism shards."""
        return self.moe_share * self.experts * self.expert_params

    @property
    def layer_matmul_params(self) -> float:
        """Weights of one layer's GEMMs that a token goes through: attention and the FFN (for
        MoE, the shared and the experts_per_token routed experts and the router), averaged over
        the layers."""
        dense = (1 - self.moe_share) * self.dense_ffn_params
        moe = self.moe_share * ((self.experts_per_token + self.shared_experts) * self.expert_params + self.hidden * self.experts)
        return self.attention_params + dense + moe

    @property
    def layer_params(self) -> float:
        """All of a layer's weights, averaged over the layers: matmul weights (every expert),
        biases and norms (GPT keeps biases; Llama and DeepSeek have none)."""
        dense = (1 - self.moe_share) * self.dense_ffn_params
        moe = self.moe_share * ((self.experts + self.shared_experts) * self.expert_params + self.hidden * self.experts)
        weights = self.attention_params + dense + moe
        sinks = self.heads if self.attention_sinks else 0
        if self.gated_ffn:
            return weights + 2 * self.hidden + sinks
        biases = self.q_dim + self.hidden + self.kv_dim * 2 + self.ffn + self.hidden
        return weights + biases + 4 * self.hidden + sinks

    @property
    def active_params(self) -> float:
        """Parameters one token goes through: params with each MoE layer's experts_per_token
        routed experts instead of all of them (the embedding and output layer counted whole, as
        the model cards count them)."""
        return self.params - self.moe_layers * (self.experts - self.experts_per_token) * self.expert_params

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def mtp_params(self) -> float:
        """The multi-token-prediction modules' own weights (DeepSeek-V3 Sec. 2.2): per depth a
        transformer block (priced as the average layer, as the engine prices every layer; DeepSeek's
        is an MoE layer, so this is about 8% short of it), the 2h -> h projection and the two
        RMSNorms on its inputs; the embedding and output head are shared. 0 when mtp_depth is 0."""
        h = self.hidden
        return self.mtp_depth * (self.layer_params + 2 * h * h + 2 * h)

    @property
    def params(self) -> int:
        total = self.layers * self.layer_params + self.embedding_params + 2 * self.hidden
        return total + self.mtp_params if self.mtp_depth else total

    # FLOPs per sequence of seq_len tokens -------------------------------------------------
    def layer_forward_flops(self, tokens_per_sequence: int | None = None) -> float:
        s = self.seq_len if tokens_per_sequence is None else tokens_per_sequence
        return 2 * s * self.layer_matmul_params + 4 * s * s * self.score_dim

    def logits_forward_flops(self) -> float:
        return 2 * self.seq_len * self.hidden * self.vocab

    def model_flops_per_sequence(self) -> float:
        """Forward + backward (3x forward) of every layer and the logits: what MFU counts
        (attention's whole s^2 square, as without flash attention)."""
        return float(self.flops_per_sequence(RECOMPUTE_MODES.index("none"), False)[0])

    def hardware_flops_per_sequence(self, recompute: str = "none") -> float:
        """What the GPUs execute without flash attention: model FLOPs plus the recomputed work."""
        check_choice("recompute", recompute, ALL_RECOMPUTE_MODES)
        return float(self.flops_per_sequence(ALL_RECOMPUTE_MODES.index(recompute), False)[1])

    @property
    def up_projection_params(self) -> float:
        """MLA's up-projections (queries from their latent, keys and values from theirs); 0 otherwise."""
        if not self.mla:
            return 0.0
        a = self.heads
        q = self.q_lora_rank * a * self.qk_head_dim if self.q_lora_rank else 0
        return float(q + self.kv_lora_rank * a * (self.qk_head_dim - self.qk_rope_dim + self.v_head_dim))

    def flops_per_sequence(self, recompute_code, flash, full_share=1.0):
        """(model FLOPs, hardware FLOPs) per sequence over numpy columns (recompute_code indexes
        RECOMPUTE_MODES). Model FLOPs: forward + backward (3x forward) of every GEMM and of
        attention's score and value products, 4 s^2 score_dim per layer forward: all of the
        square without flash attention (Megatron 2021-22's kernels computed it and masked half;
        Korthikanti and Narayanan count it), the causal half with flash attention, which is what
        a causal model needs and what the kernel does (counting the masked half would put MFU
        above 1 at long context). Hardware FLOPs add what is recomputed: full recompute, every
        layer's forward (Narayanan eq. 3; logits are not recomputed); selective recompute without
        flash, Korthikanti Appendix A's 72 B L s h^2 * s/(6h) = 12 B L s^2 h; flash attention's
        own backward, which recomputes the scores (half its forward). full_share: the share of
        layers full recompute re-runs (Megatron's --recompute-num-layers), 1 by default."""
        s, L = float(self.seq_len), self.layers
        # Flash attention runs only the causal pairs (a window's or a chunk's: attention_share);
        # without it the kernels compute the whole square and mask it, windows and chunks too.
        attention = np.where(flash, 0.5 * self.attention_share, 1.0) * 4 * s * s * self.score_dim
        layer_forward = 2 * s * self.layer_matmul_params + attention
        model_flops = 3 * (L * layer_forward + self.logits_forward_flops())
        if self.mtp_depth:  # each MTP depth: its projection, one more block and one more output head (not recomputed)
            model_flops = model_flops + 3 * self.mtp_depth * (2 * s * 2 * self.hidden * self.hidden + layer_forward + self.logits_forward_flops())
        extra = np.where(recompute_code == RECOMPUTE_MODES.index("full"), full_share * L * layer_forward, 0.0)
        extra = extra + np.where((recompute_code == RECOMPUTE_MODES.index("selective")) & ~np.asarray(flash, dtype=bool), 12 * L * s * s * self.score_dim, 0.0)
        extra = extra + np.where(flash, 0.5 * L * attention, 0.0)
        extra = extra + np.where(recompute_code == ALL_RECOMPUTE_MODES.index("ops"), L * s * self.layer_matmul_params, 0.0)
        extra = extra + np.where(recompute_code == ALL_RECOMPUTE_MODES.index("norms_up_proj"), L * 2 * s * self.up_projection_params, 0.0)
        return model_flops, model_flops + extra

    def model_flops_per_iteration(self, global_batch: int) -> float:
        return global_batch * self.model_flops_per_sequence()


_GPT3 = "Brown et al. 2020 Table 2.1 (96 layers, d=12288, 96 heads, 2048 context); vocab padded to 51,200 as in Megatron (Narayanan et al. 2021)."
_LLAMA2 = "Touvron et al. 2023 (arXiv:2307.09288) Table 1 and the released config.json files."
_LLAMA3 = "Llama Team 2024 (arXiv:2407.21783) Table 3: layers, width, FFN, heads, KV heads, vocab 128,256."

MODELS: dict[str, Model] = {
    "gpt3-175b": Model("GPT-3 175B", 96, 12288, 96, 2048, 51200, source=_GPT3),
    "llama2-7b": Model("Llama 2 7B", 32, 4096, 32, 4096, 32000, 11008, None, True, False, _LLAMA2),
    "llama2-13b": Model("Llama 2 13B", 40, 5120, 40, 4096, 32000, 13824, None, True, False, _LLAMA2),
    "llama2-70b": Model("Llama 2 70B", 80, 8192, 64, 4096, 32000, 28672, 8, True, False, _LLAMA2),
    "llama3-8b": Model("Llama 3 8B", 32, 4096, 32, 8192, 128256, 14336, 8, True, False, _LLAMA3),
    "llama3-70b": Model("Llama 3 70B", 80, 8192, 64, 8192, 128256, 28672, 8, True, False, _LLAMA3),
    "llama3-405b": Model("Llama 3 405B", 126, 16384, 128, 8192, 128256, 53248, 8, True, False, _LLAMA3),
    # The seed curriculum's examples (seeds/001): a ~100M-parameter model and the
    # 12-layer d_model=512 model of the tensor-parallel milestone (batch 8, seq 512).
    # DeepSeek-V3 (arXiv:2412.19437 Sec. 2 and 4.2; the released config.json): 61 layers, d=7168,
    # 128 heads with MLA (q rank 1536, kv rank 512, qk 128 + 64 RoPE, v 128), the first 3 layers
    # dense (FFN 18,432), then 256 routed experts of width 2,048, 8 a token, and 1 shared; vocab
    # 129,280 untied; 4K tokens in pre-training. 671B parameters, 37B activated. Its one
    # multi-token-prediction module (num_nextn_predict_layers 1) is off here as the 671B count
    # leaves it out: Model.get("deepseek-v3", mtp_depth=1) prices it. MoE and dense layers are
    # treated as their average.
    "deepseek-v3": Model(
        "DeepSeek-V3", 61, 7168, 128, 4096, 129280, 18432, None, True, False,
        "DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv:2412.19437) Sec. 2, 4.2; config.json",
        experts=256, experts_per_token=8, expert_ffn=2048, shared_experts=1, dense_layers=3,
        q_lora_rank=1536, kv_lora_rank=512, qk_rope_dim=64, qk_head_dim=192, v_head_dim=128,
    ),
    # Engine v4 shapes (issue 36 item 5), each from its released config; published totals in
    # PUBLISHED_PARAMS (tests/test_model_shapes.py reports the error). Biases and QK-norm weights
    # the configs have (GPT-OSS's attention and expert biases, 0.04% of its weights; Qwen3's and
    # Llama 4's QK-norms) are left out; Nemotron-4 (no biases) gets GPT's, 0.004%.
    # Qwen3-30B-A3B: huggingface.co/Qwen/Qwen3-30B-A3B config.json: hidden_size 2048,
    # num_hidden_layers 48, num_attention_heads 32, num_key_value_heads 4, head_dim 128,
    # intermediate_size 6144 (no dense layer uses it: decoder_sparse_step 1, mlp_only_layers []),
    # moe_intermediate_size 768, num_experts 128, num_experts_per_tok 8, vocab_size 151936,
    # tie_word_embeddings false; 4,096-token pre-training (Qwen3 Technical Report, arXiv:2505.09388
    # Sec. 3.2, stages S1-S2).
    "qwen3-30b-a3b": Model(
        "Qwen3-30B-A3B", 48, 2048, 32, 4096, 151936, 6144, 4, True, False,
        "huggingface.co/Qwen/Qwen3-30B-A3B config.json; arXiv:2505.09388 Sec. 3.2 (4,096 tokens)",
        experts=128, experts_per_token=8, expert_ffn=768, head_dim=128,
    ),
    # Qwen3-235B-A22B: huggingface.co/Qwen/Qwen3-235B-A22B config.json: hidden_size 4096,
    # num_hidden_layers 94, num_attention_heads 64, num_key_value_heads 4, head_dim 128,
    # intermediate_size 12288, moe_intermediate_size 1536, num_experts 128, num_experts_per_tok 8,
    # vocab_size 151936, tie_word_embeddings false.
    "qwen3-235b-a22b": Model(
        "Qwen3-235B-A22B", 94, 4096, 64, 4096, 151936, 12288, 4, True, False,
        "huggingface.co/Qwen/Qwen3-235B-A22B config.json; arXiv:2505.09388 Sec. 3.2 (4,096 tokens)",
        experts=128, experts_per_token=8, expert_ffn=1536, head_dim=128,
    ),
    # GPT-OSS-120B: huggingface.co/openai/gpt-oss-120b config.json: hidden_size 2880,
    # num_hidden_layers 36, num_attention_heads 64, num_key_value_heads 8, head_dim 64,
    # intermediate_size 2880 (each expert's), num_local_experts 128, experts_per_token 4,
    # vocab_size 201088, tie_word_embeddings false, layer_types alternating "sliding_attention"
    # (first) and "full_attention", sliding_window 128, initial_context_length 4096; the sinks: the
    # model card (arXiv:2508.10925 Sec. 2.1, "a learned bias in the denominator of the softmax").
    "gpt-oss-120b": Model(
        "GPT-OSS-120B", 36, 2880, 64, 4096, 201088, 2880, 8, True, False,
        "huggingface.co/openai/gpt-oss-120b config.json; gpt-oss model card (arXiv:2508.10925) Sec. 2.1",
        experts=128, experts_per_token=4, expert_ffn=2880, head_dim=64,
        attention_pattern=("sliding", "full"), window=128, attention_sinks=True,
    ),
    # Llama 4 (huggingface.co/meta-llama/Llama-4-Scout-17B-16E and -Maverick-17B-128E config.json,
    # text_config; the same values are transformers' Llama4TextConfig defaults,
    # models/llama4/configuration_llama4.py): hidden_size 5120, num_hidden_layers 48,
    # num_attention_heads 40, num_key_value_heads 8, head_dim 128, intermediate_size 8192 (each
    # routed expert and the shared one), intermediate_size_mlp 16384 (the dense layers'),
    # num_experts_per_tok 1, vocab_size 202048, tie_word_embeddings false, attention_chunk_size
    # 8192 with every 4th layer global (no_rope_layer_interval 4: chunked, chunked, chunked,
    # full). Scout: 16 experts in every layer (interleave_moe_layer_step 1); Maverick: 128 in
    # every other layer (step 2: 24 dense layers). The pre-training sequence is not published:
    # 8,192 (one chunk) is this catalog's choice. Text weights only (the vision encoder left out).
    "llama4-scout": Model(
        "Llama 4 Scout 17B-16E", 48, 5120, 40, 8192, 202048, 16384, 8, True, False,
        "huggingface.co/meta-llama/Llama-4-Scout-17B-16E config.json (text_config); transformers Llama4TextConfig",
        experts=16, experts_per_token=1, expert_ffn=8192, shared_experts=1, head_dim=128,
        attention_pattern=("chunked", "chunked", "chunked", "full"), attention_chunk=8192,
    ),
    "llama4-maverick": Model(
        "Llama 4 Maverick 17B-128E", 48, 5120, 40, 8192, 202048, 16384, 8, True, False,
        "huggingface.co/meta-llama/Llama-4-Maverick-17B-128E config.json (text_config); transformers Llama4TextConfig",
        experts=128, experts_per_token=1, expert_ffn=8192, shared_experts=1, dense_layers=24, head_dim=128,
        attention_pattern=("chunked", "chunked", "chunked", "full"), attention_chunk=8192,
    ),
    # Nemotron-4 340B: huggingface.co/nvidia/Nemotron-4-340B-Base model_config.yaml and NeMo's
    # Nemotron4Config340B (nemo/collections/llm/gpt/model/nemotron.py): num_layers 96,
    # hidden_size 18432, ffn_hidden_size 73728, num_attention_heads 96, num_query_groups 8,
    # seq_length 4096, vocab 256000, squared-ReLU MLP (not gated), untied embeddings; 9.4B
    # embedding + 331.6B other parameters (arXiv:2406.11704 Sec. 2.1).
    "nemotron4-340b": Model(
        "Nemotron-4 340B", 96, 18432, 96, 4096, 256000, 73728, 8, False, False,
        "huggingface.co/nvidia/Nemotron-4-340B-Base model_config.yaml; NeMo Nemotron4Config340B; arXiv:2406.11704",
    ),
    # Mixtral 8x7B: huggingface.co/mistralai/Mixtral-8x7B-v0.1 config.json and arXiv:2401.04088
    # Table 1: hidden_size 4096, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads
    # 8, intermediate_size 14336 (each expert), num_local_experts 8, num_experts_per_tok 2,
    # vocab_size 32000, untied, 32K-token context ("trained with a context size of 32k tokens").
    "mixtral-8x7b": Model(
        "Mixtral 8x7B", 32, 4096, 32, 32768, 32000, 14336, 8, True, False,
        "huggingface.co/mistralai/Mixtral-8x7B-v0.1 config.json; arXiv:2401.04088 Table 1",
        experts=8, experts_per_token=2, expert_ffn=14336,
    ),
    # Mixtral 8x22B: huggingface.co/mistralai/Mixtral-8x22B-v0.1 config.json: hidden_size 6144,
    # num_hidden_layers 56, num_attention_heads 48, num_key_value_heads 8, intermediate_size
    # 16384, num_local_experts 8, num_experts_per_tok 2, vocab_size 32000, untied,
    # max_position_embeddings 65536 (the 64K context).
    "mixtral-8x22b": Model(
        "Mixtral 8x22B", 56, 6144, 48, 65536, 32000, 16384, 8, True, False,
        "huggingface.co/mistralai/Mixtral-8x22B-v0.1 config.json",
        experts=8, experts_per_token=2, expert_ffn=16384,
    ),
    # Grok-1: xai-org/grok-1 run.py (TransformerConfig: emb_size 48 x 128 = 6144, key_size 128,
    # num_q_heads 48, num_kv_heads 8, num_layers 64, widening_factor 8, num_experts 8,
    # num_selected_experts 2; vocab 128 x 1024, sequence_len 8192) and model.py (ffn_size:
    # int(8 x 6144) x 2 // 3 = 32768, gated GeLU experts; InOutEmbed decodes with the input
    # embedding: tied).
    "grok-1": Model(
        "Grok-1", 64, 6144, 48, 8192, 131072, 32768, 8, True, True,
        "xai-org/grok-1 run.py (TransformerConfig) and model.py (ffn_size, InOutEmbed)",
        experts=8, experts_per_token=2, expert_ffn=32768,
    ),
    "seed-100m": Model("Milestone 100M", 12, 768, 12, 1024, 16384, source="seeds/001 week 22 milestone (a 100M-parameter model)"),
    "seed-12l-512": Model("Milestone 12L d512", 12, 512, 8, 512, 32000, source="seeds/001 week 23 milestone (12 layers, d_model=512)"),
}

# Published parameter counts (total, activated per token), each from its model card or report:
# tests/test_model_shapes.py compares Model.params and Model.active_params with them.
# GPT-OSS's card counts the output layer but not the input embedding (a lookup, no FLOPs) as
# active: its 5.13B is this engine's 5.71B less the 0.58B input embedding. The others count both,
# as active_params does: ACTIVE_WITHOUT_EMBEDDING names the former.
ACTIVE_WITHOUT_EMBEDDING = ("gpt-oss-120b",)
PUBLISHED_PARAMS: dict[str, tuple[float, float, str]] = {
    "qwen3-30b-a3b": (30.5e9, 3.3e9, "huggingface.co/Qwen/Qwen3-30B-A3B model card: 30.5B in total and 3.3B activated"),
    "qwen3-235b-a22b": (235e9, 22e9, "huggingface.co/Qwen/Qwen3-235B-A22B model card: 235B in total and 22B activated"),
    "gpt-oss-120b": (116.83e9, 5.13e9, "gpt-oss model card (arXiv:2508.10925) Table 1: 116.83B total, 5.13B active"),
    "llama4-scout": (109e9, 17e9, "huggingface.co/meta-llama/Llama-4-Scout-17B-16E model card: 17B activated, 109B total (with the vision encoder)"),
    "llama4-maverick": (400e9, 17e9, "huggingface.co/meta-llama/Llama-4-Maverick-17B-128E model card: 17B activated, 400B total (with the vision encoder)"),
    "nemotron4-340b": (341.0e9, 341.0e9, "arXiv:2406.11704 Sec. 2.1: 9.4B embedding and 331.6B non-embedding parameters"),
    "mixtral-8x7b": (46.7e9, 12.9e9, "mistral.ai/news/mixtral-of-experts: 46.7B total parameters, 12.9B per token"),
    "mixtral-8x22b": (141e9, 39e9, "mistral.ai/news/mixtral-8x22b: 39B active parameters out of 141B"),
    "grok-1": (314e9, 0.25 * 314e9, "x.ai/blog/grok-os: 314 billion parameters, 25% of the weights active on a given token"),
}

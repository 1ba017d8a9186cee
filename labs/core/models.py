"""Transformer specs, their parameter counts and their FLOPs per iteration.

FLOPs follow Korthikanti et al. 2022 (arXiv:2205.05198) Appendix A: a layer's forward pass
does 2 FLOPs per weight per token in its GEMMs plus 4 b s^2 h in attention (QK^T and AV);
backward does twice the forward. For a GPT layer this is 72 B L s h^2 (1 + s/(6h) + V/(12hL))
model FLOPs per iteration, and 96 B L s h^2 (1 + s/(6h) + V/(16hL)) with full recomputation
(Narayanan et al. 2021 eq. 3). The same counting extends to GQA and SwiGLU layers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from labs.core.validation import check_bool, check_choice, check_positive, check_str, unknown_key_error

RECOMPUTE_MODES = ("none", "selective", "full")


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
        if self.hidden % self.heads:
            raise ValueError(f"heads must divide hidden ({self.hidden}), got {self.heads}")

    @classmethod
    def get(cls, key: str, **overrides) -> "Model":
        if not isinstance(key, str) or key not in MODELS:
            raise unknown_key_error("model", key, MODELS)
        unknown = set(overrides) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown Model field(s) {sorted(unknown)}")
        return replace(MODELS[key], **overrides)

    @property
    def ffn(self) -> int:
        return self.ffn_hidden if self.ffn_hidden is not None else 4 * self.hidden

    @property
    def kv_dim(self) -> int:
        kv = self.kv_heads if self.kv_heads is not None else self.heads
        return kv * (self.hidden // self.heads)

    @property
    def layer_matmul_params(self) -> int:
        """Weights of one layer's GEMMs: Q, K, V, O projections and the FFN."""
        attention = 2 * self.hidden * self.hidden + 2 * self.hidden * self.kv_dim
        ffn = (3 if self.gated_ffn else 2) * self.hidden * self.ffn
        return attention + ffn

    @property
    def layer_params(self) -> int:
        """Matmul weights plus biases and the two norms (GPT keeps biases; Llama has none)."""
        if self.gated_ffn:
            return self.layer_matmul_params + 2 * self.hidden
        biases = 2 * self.hidden + self.kv_dim * 2 + self.ffn + self.hidden
        return self.layer_matmul_params + biases + 4 * self.hidden

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def params(self) -> int:
        return self.layers * self.layer_params + self.embedding_params + 2 * self.hidden

    # FLOPs per sequence of seq_len tokens -------------------------------------------------
    def layer_forward_flops(self, tokens_per_sequence: int | None = None) -> float:
        s = self.seq_len if tokens_per_sequence is None else tokens_per_sequence
        return 2 * s * self.layer_matmul_params + 4 * s * s * self.hidden

    def logits_forward_flops(self) -> float:
        return 2 * self.seq_len * self.hidden * self.vocab

    def model_flops_per_sequence(self) -> float:
        """Forward + backward (3x forward) of every layer and the logits: what MFU counts."""
        return 3 * (self.layers * self.layer_forward_flops() + self.logits_forward_flops())

    def hardware_flops_per_sequence(self, recompute: str = "none") -> float:
        """What the GPUs execute: model FLOPs plus the recomputed forward work.

        full: every layer's forward runs again (Narayanan eq. 3, 4 passes; logits are not
        recomputed). selective: the attention core is recomputed, which Korthikanti Appendix A
        counts as 72 B L s h^2 * s/(6h) = 12 B L s^2 h extra.
        """
        check_choice("recompute", recompute, RECOMPUTE_MODES)
        model = self.model_flops_per_sequence()
        if recompute == "full":
            return model + self.layers * self.layer_forward_flops()
        if recompute == "selective":
            return model + 12 * self.layers * self.seq_len**2 * self.hidden
        return model

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
    "seed-100m": Model("Seed 100M", 12, 768, 12, 1024, 16384, source="seeds/001 week 22 milestone (a 100M-parameter model)"),
    "seed-12l-512": Model("Seed 12L d512", 12, 512, 8, 512, 32000, source="seeds/001 week 23 milestone (12 layers, d_model=512)"),
}

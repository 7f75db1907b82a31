"""Every sympy symbol calc's formulas use, defined once, in paper notation, with its LaTeX name.

Sizes follow the source chapter ("1.3 Transformer": V, d, L, T, h, d_h) and Kaplan et al. 2020.
Structure enters the formulas as 0/1 indicator symbols (`i_*` for a part being present, `b_*` for
a bias), so one expression covers every architecture and one compiled function can evaluate
millions of mixed configurations at once (DESIGN.md, "Formulas").
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy


@dataclass(frozen=True)
class SymbolInfo:
    name: str  # Python identifier, also the key in a values mapping
    latex: str
    meaning: str
    kind: str  # "size", "indicator" or "workload"


_TABLE: tuple[SymbolInfo, ...] = (
    # sizes
    SymbolInfo("V", "V", "vocabulary size", "size"),
    SymbolInfo("d", "d", "model (residual) width d_model", "size"),
    SymbolInfo("L", "L", "layers", "size"),
    SymbolInfo("h", "h", "query heads", "size"),
    SymbolInfo("h_kv", "h_{kv}", "key/value heads (GQA/MQA); h under MLA", "size"),
    SymbolInfo("d_qk", "d_{qk}", "query/key width per head (MHA: d_h; MLA: nope + rope)", "size"),
    SymbolInfo("d_v", "d_{v}", "value width per head (MHA: d_h)", "size"),
    SymbolInfo("d_ff", "d_{ff}", "hidden width of a dense FFN", "size"),
    SymbolInfo("P", "P", "rows of the learned position table (0 without one)", "size"),
    SymbolInfo("n_norm", "n_{norm}", "norm modules per layer (2; 4 sandwich; 1 parallel)", "size"),
    SymbolInfo("L_loc", "L_{loc}", "layers with sliding-window (local) attention", "size"),
    SymbolInfo("w", "w", "sliding window: keys a local query sees", "size"),
    SymbolInfo("L_moe", "L_{moe}", "layers whose FFN is a mixture of experts", "size"),
    SymbolInfo("E", "E", "routed experts per MoE layer", "size"),
    SymbolInfo("k", "k", "routed experts per token (top-k)", "size"),
    SymbolInfo("d_e", "d_{e}", "hidden width of one routed expert", "size"),
    SymbolInfo("E_s", "E_{s}", "shared experts per MoE layer", "size"),
    SymbolInfo("d_s", "d_{s}", "hidden width of one shared expert", "size"),
    SymbolInfo("r_q", "r_{q}", "MLA query low rank", "size"),
    SymbolInfo("r_kv", "r_{kv}", "MLA key/value latent rank", "size"),
    SymbolInfo("d_rope", "d_{rope}", "MLA RoPE part of d_qk (its key part shared by heads)",
               "size"),
    SymbolInfo("M", "M", "multi-token-prediction modules (counted apart)", "size"),
    # structure indicators (0 or 1)
    SymbolInfo("i_glu", r"\mathbb{1}_{glu}", "gated FFN (SwiGLU/GeGLU/ReGLU): 3 matrices",
               "indicator"),
    SymbolInfo("i_mla", r"\mathbb{1}_{mla}", "multi-head latent attention", "indicator"),
    SymbolInfo("i_qlora", r"\mathbb{1}_{q\,lora}", "MLA queries through rank r_q", "indicator"),
    SymbolInfo("i_tied", r"\mathbb{1}_{tied}", "LM head tied to the token embedding",
               "indicator"),
    SymbolInfo("i_qk_head", r"\mathbb{1}_{qk\,head}", "QK-norm per head (width d_qk)",
               "indicator"),
    SymbolInfo("i_qk_proj", r"\mathbb{1}_{qk\,proj}", "QK-norm over whole projections",
               "indicator"),
    SymbolInfo("i_norm_emb", r"\mathbb{1}_{norm\,emb}", "norm after the embedding", "indicator"),
    SymbolInfo("i_norm_final", r"\mathbb{1}_{norm\,final}", "norm before the LM head",
               "indicator"),
    SymbolInfo("i_shared_gate", r"\mathbb{1}_{s\,gate}", "scalar gate on the shared experts",
               "indicator"),
    SymbolInfo("i_moe", r"\mathbb{1}_{moe}", "the model has MoE layers (its MTP block is one)",
               "indicator"),
    SymbolInfo("i_rel", r"\mathbb{1}_{rel}", "relative position encodings (Transformer-XL)",
               "indicator"),
    SymbolInfo("b_qkv", "b_{qkv}", "biases on Q, K, V (MLA: on the down-projections)",
               "indicator"),
    SymbolInfo("b_o", "b_{o}", "bias on the attention output projection", "indicator"),
    SymbolInfo("b_ff", "b_{ff}", "biases on FFN and expert projections", "indicator"),
    SymbolInfo("b_norm", "b_{norm}", "LayerNorm bias β", "indicator"),
    SymbolInfo("b_lm", "b_{lm}", "bias on the LM head", "indicator"),
    SymbolInfo("b_router", "b_{router}", "bias per routed expert", "indicator"),
    # workload
    SymbolInfo("T", "T", "sequence length (context)", "workload"),
    SymbolInfo("i_causal", r"\mathbb{1}_{causal}", "attention counted over the causal triangle",
               "workload"),
    SymbolInfo("D", "D", "training tokens", "workload"),
    SymbolInfo("F", "F", "training FLOPs per token", "workload"),
    SymbolInfo("R", "R", "dense peak FLOP/s of one GPU at the dtype", "workload"),
    SymbolInfo("u", "u", "model FLOPs utilisation (MFU)", "workload"),
    SymbolInfo("K", "K", "GPUs", "workload"),
)

INFO: dict[str, SymbolInfo] = {info.name: info for info in _TABLE}
_REAL = {"D", "F", "R", "u"}  # everything else is a non-negative integer
SYMBOLS: dict[str, sympy.Symbol] = {
    info.name: sympy.Symbol(info.name, nonnegative=True, integer=info.name not in _REAL)
    for info in _TABLE
}
LATEX_NAMES: dict[sympy.Symbol, str] = {SYMBOLS[i.name]: i.latex for i in _TABLE}

(V, d, L, h, h_kv, d_qk, d_v, d_ff, P, n_norm, L_loc, w, L_moe, E, k, d_e, E_s, d_s, r_q, r_kv,
 d_rope, M) = (SYMBOLS[n] for n in (
    "V", "d", "L", "h", "h_kv", "d_qk", "d_v", "d_ff", "P", "n_norm", "L_loc", "w", "L_moe",
    "E", "k", "d_e", "E_s", "d_s", "r_q", "r_kv", "d_rope", "M"))
(i_glu, i_mla, i_qlora, i_tied, i_qk_head, i_qk_proj, i_norm_emb, i_norm_final, i_shared_gate,
 i_moe, i_rel, b_qkv, b_o, b_ff, b_norm, b_lm, b_router) = (SYMBOLS[n] for n in (
    "i_glu", "i_mla", "i_qlora", "i_tied", "i_qk_head", "i_qk_proj", "i_norm_emb",
    "i_norm_final", "i_shared_gate", "i_moe", "i_rel", "b_qkv", "b_o", "b_ff", "b_norm", "b_lm",
    "b_router"))
T, i_causal, D, F, R, u, K = (SYMBOLS[n] for n in ("T", "i_causal", "D", "F", "R", "u", "K"))

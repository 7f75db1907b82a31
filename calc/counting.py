"""The counting conventions, once: their named factors and constants, and the sentences printed
under every table (each number in a sentence formatted from its constant).

Everything else in calc imports these; this module imports nothing of calc.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Named factors (Kaplan et al. 2020 §2.1): gradients w.r.t. activations and w.r.t. weights each
# cost about one forward pass; training = forward + backward. Used by the formulas, the numeric
# path, the verifier and the sweeps alike.
BACKWARD_PER_FORWARD = 2
TRAIN_PER_FORWARD = 1 + BACKWARD_PER_FORWARD
# A frozen weight (LoRA, QLoRA) needs only the gradient w.r.t. its input, one forward's worth:
# Hu et al. 2021 §4.2 ("we do not need to calculate the gradient for the vast majority of the
# parameters").
FROZEN_BACKWARD_PER_FORWARD = 1
# A stored dropout mask element is one byte (Korthikanti et al. 2022 §4.1: "a byte"), in the
# activation memory and in the step-time model's element-wise traffic alike.
MASK_BYTES = 1
# A token id is an int64 (torch.long, what nn.Embedding takes; Megatron-LM's
# theoretical_memory_usage.py counts 8·s·b bytes for them).
TOKEN_ID_BYTES = 8
# A multiply-add is two FLOPs (what torch's FlopCounterMode counts): a token's forward pass
# through N weights is 2N FLOPs, its training step 6N (Kaplan et al. 2020 §2.1).
FLOPS_PER_MULTIPLY_ADD = 2

# Chinchilla's rule of thumb D ≈ 20·N (Hoffmann et al. 2022 Table 3: 70B parameters on 1.4T
# tokens; §3.4). N is the total parameter count, as in the paper's dense models.
TOKENS_PER_PARAMETER = 20

# Units, each once (tests/test_constants.py keeps bare copies out of the rest of calc). Counts,
# FLOPs, FLOP/s and link bandwidths (GB/s) are decimal; bytes are binary where labelled GiB: a
# GPU's "80GB" of HBM is 80 GiB. GPU-hours and days from seconds (calc.formulas.training).
GIGA = 10**9
TERA = 10**12
GIB = 2**30
BITS_PER_BYTE = 8
SECONDS_PER_HOUR = 3600
HOURS_PER_DAY = 24
MILLION = 10**6  # cost per million tokens
MILLISECOND = 1e-3

# The MFU assumed when none is given or measured, always labelled as a default: large dense runs
# report 38-46 % (PaLM 540B 46.2 %, Chowdhery et al. 2022 Table 3; Llama 3 405B 38-43 % BF16 MFU,
# Dubey et al. 2024 Table 4).
DEFAULT_MFU = 0.4
DEFAULT_MFU_NOTE = (f"default {100 * DEFAULT_MFU:g} %: large dense runs report 38-46 % "
                    f"(PaLM, Llama 3)")

# Power usage effectiveness when none is given: LLaMA's assumption (Touvron et al. 2023 §6, after
# Wu et al. 2022); the Uptime Institute's 2023 survey average is 1.58, hyperscale sites ~1.1.
DEFAULT_PUE = 1.1
DEFAULT_PUE_NOTE = (f"default {DEFAULT_PUE:g}, LLaMA's (Touvron et al. 2023 §6, after Wu et al. "
                    f"2022)")

# A count of bytes: an exact int when whole; a float where a division (by a parallel degree, by
# 2 for int4) leaves a fraction.
Bytes = int | float

# Below this, a float count of bytes or FLOPs is still an exact integer (2^53).
_EXACT_FLOAT = 2**53


def whole(value: int | float) -> int | float:
    """An integral float as an int (JSON prints 120000000000, not 120000000000.0); others as
    they are. Only below 2^53, where a float still holds the exact integer."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_FLOAT:
        return int(value)
    return value


PARAMETERS = (
    "Parameters: unique tensors, a tied weight counted once. non-embedding = total − token and "
    "position embeddings − an untied LM head (Kaplan et al. 2020); active = what one token "
    "uses (top-k of the routed experts, the shared experts and the router).")
def kind_shapes_sentence(kind: str, layers: int, own: tuple[tuple[int, ...], bool],
                         model: tuple[tuple[int, ...], bool]) -> str:
    """The attention layers of one kind with head shapes of their own (attention.kind_shapes):
    `own` and `model` as ((query heads, key/value heads, head width, value width), sinks)."""
    def heads(shape: tuple[tuple[int, ...], bool]) -> str:
        (h, kv, width, values), sinks = shape
        return (f"{h} query heads and {kv} key/value heads of width {width}"
                + (f" (values {values} wide)" if values != width else "")
                + (", with a sink logit per head" if sinks else ""))
    return (f"Attention by kind: the {layers} {kind} layers have {heads(own)}, the other "
            f"attention layers {heads(model)} (attention.kind_shapes); each layer is counted "
            f"with its own, and a component whose layers differ has no one per-layer count.")


def kv_sharing_sentence(shared: int, keys_as_values: tuple[str, ...], double_wide: int) -> str:
    """Gemma 4's parts in a model's counts: the last `shared` layers without keys and values of
    their own (attention.kv_shared_layers), the attention kinds whose keys are their values
    (attention.k_eq_v), the `double_wide` FFNs 2·d_ff wide (ffn.double_wide)."""
    parts = []
    if shared:
        parts.append(f"the last {shared} layers read the keys and values of the last earlier "
                     f"layer of their kind (attention.kv_shared_layers): no W_K, W_V or key "
                     f"norm, no W_K/W_V FLOPs and no KV cache of their own, their QKᵀ and A·V "
                     f"counted as any layer's")
    if keys_as_values:
        parts.append(f"the {' and '.join(keys_as_values)} layers use their keys as values "
                     f"(attention.k_eq_v): no W_V and no W_V FLOPs; transformers still caches "
                     f"both")
    if double_wide:
        parts.append(f"{double_wide} of those layers have an FFN 2·d_ff wide (ffn.double_wide)")
    return "Keys and values: " + "; ".join(parts) + "."


def zero_experts_sentence(top_k: int, experts: int, zero: int, per_token: int,
                          shortcut: bool) -> str:
    """LongCat-Flash's MoE parts in a model's counts: zero-computation experts
    (moe.n_zero_experts) and the shortcut-connected MoE (moe.shortcut)."""
    parts = []
    if zero:
        parts.append(f"zero-computation experts: the router scores {experts} FFN and {zero} "
                     f"identity experts (moe.n_zero_experts); a token's top-{top_k} slots on "
                     f"identities cost nothing, and active parameters and FLOPs count the "
                     f"expected {top_k}·{experts}/{experts + zero} = {per_token} FFN experts a "
                     f"token (routing uniform over the pool)")
    if shortcut:
        parts.append("shortcut-connected MoE (moe.shortcut): each MoE layer's experts read its "
                     "FFN input and join the residual stream after the next (dense) layer's "
                     "FFN, which changes no count")
    return "Experts: " + "; ".join(parts) + "."


FLOPS = (
    "FLOPs: matrix products only, a multiply-add = 2 FLOPs (what torch's FlopCounterMode "
    "counts); the embedding lookup, norms, softmax, activations, biases, RoPE and a relative-"
    "position projection (Transformer-XL: once per batch, not per token) count 0; the LM head "
    "counts even when tied, over its V_o rows (V, or output_vocab_size where the head is "
    "narrower); MoE counts only the experts a token uses.")
ATTENTION = {
    "causal": "Attention: causal — query i scores keys 1..i (the lower triangle with its "
              "diagonal), at most w in a sliding-window layer; GQA/MQA do not reduce score "
              "FLOPs. Inference: one new token attends to all T (or w) cached keys.",
    "full": "Attention: full — every query scores all T keys (the T×T square, as torch counts "
            "an explicit matmul), at most w in a sliding-window layer; GQA/MQA do not reduce "
            "score FLOPs. Inference: one new token attends to all T (or w) cached keys.",
}
SPARSE_ATTENTION = (
    "DeepSeek Sparse Attention: the indexer's projections count as attention/indexer; its "
    "scores over every key a query sees (2·h_I·d_I for q·k and 2·h_I for the head weights' sum "
    "per key) and the attention over the min(index_topk, keys seen) keys it selects are "
    "attention/scores. Training counts the indexer trained (3 × forward), as by a loss of its "
    "own; its top-k passes no gradient to the model.")
BLOCK_SPARSE_ATTENTION = (
    "Block-sparse attention (MiniMax-M3): the indexer's projections count as "
    "attention/indexer; its scores over every key a query sees (2·h_I·d_I per key; a block's "
    "maximum and the top-k count 0) and the attention over the keys of the blocks it selects "
    "are attention/scores: under causal the visible part of the query's own block and "
    "index_topk_blocks − 1 earlier blocks of index_block_size keys (all keys while fewer), "
    "under full min(index_topk_blocks · index_block_size, T); the layers without an indexer "
    "attend to every key. Training counts the indexer trained (3 × forward), as by a loss of "
    "its own; its top-k passes no gradient to the model.")
DYNAMIC_MASK = (
    "Doge's dynamic mask: dt_proj (h_kv·d_v → h_kv over each token's values) counts as "
    "attention/dynamic_mask, 2·h_kv·d_v·h_kv per token; A, the softplus, the exponential, the "
    "score added to the logits and the top-k are elementwise (0); the attention is over the "
    "min(keep_window_size, keys seen) keys each query keeps (attention/scores), where "
    "transformers masks the rest of a dense T × T product.")
PRODUCT_KEYS = (
    "Doge's product-key experts: the router's d → 2·⌊√E⌋ sub-key scores count as moe/router; "
    "pairing the top ⌊√E⌋ of each half, summing the pairs' scores and choosing top_k count 0; "
    "each of the top_k one-neuron experts a token uses is a row of down_embed (d → 1) and of "
    "up_embed (1 → d), 2·2·d per token (moe/experts), and the shared MLP counts as a shared "
    "expert.")
COMPRESSED_ATTENTION = (
    "DeepSeek-V4's compressed layers (CSA, HCA): each compressor's kv_proj and gate_proj count "
    "as attention/compressor per token (its pooling of a window's tokens is elementwise, 0); "
    "the ⌊T/m⌋ entries a query has passed join its window's keys, QKᵀ and A·V as any key: all of "
    "them on an HCA layer; on a CSA layer the min(index_topk, entries) its indexer selects, "
    "the indexer's projections attention/indexer and its scores over every entry seen "
    "(2·h_I·d_I for q·k and 2·h_I for the head weights' sum per entry) attention/scores. "
    "Training counts the indexer trained (3 × forward), as by a loss of its own.")
DIFFERENTIAL_ATTENTION = (
    "Differential attention (DIFF Transformer): each of the h softmax maps (a differential "
    "head's two QKᵀ maps of half its width) is computed once, 2·d_qk per key, and weighs the "
    "head's values 2·d_v wide, 2·2·d_v per key (attention/scores); λ's four d_h vectors per "
    "layer are attention/lambda, λ's dot products, the subtraction and the head norm count 0.")
CROSS_ATTENTION = (
    "Cross-attention layers (Llama 3.2 Vision): their weights count in the parameters; their "
    "FLOPs depend on cross_attention.image_tokens, T_img per sequence. With 0 (text only) the "
    "layers are skipped as transformers skips them: 0 FLOPs, their FFN's too. Otherwise a token "
    "runs W_Q, W_O and the FFN of each and scores all T_img image tokens under either "
    "convention (cross_attention/scores), and each sequence's image tokens run W_K and W_V once "
    "a layer, that cost divided by T per token (cross_attention/kv).")
SHARED_BLOCK = (
    "Shared block (Zamba, Zamba2): its weights count once per weight set in the parameters "
    "(total and active), each depth's projection d → d and adapters once per depth; its "
    "FLOPs count at every depth it runs at: W_Q, W_K, W_V over [hidden, embedding] (2d wide), "
    "W_O, the FFN, the projection and the adapters (shared_block/*), and its QKᵀ and A·V over "
    "all keys a query sees, as a global layer's (attention/scores); its KV cache is per "
    "depth.")
LOOP = (
    "Looped layers (HRM-Text's stacks run in cycles): a stored layer's weights count once in "
    "the parameters (total and active; HRM-Text's initial state z_L_init, d frozen values, "
    "with them); everything a pass computes counts once per pass: its FLOPs, its activations, "
    "its KV cache (one slot per pass, as transformers' cache holds them) and its step time. "
    "The additions that feed one stream into the other are elementwise: 0 FLOPs.")
NGPT = (
    "nGPT's scale vectors (Dory): the residual rates (2·d a layer), the query and gate scales "
    "(h·d_qk and h·d_v an attention layer), the FFN's gate and up scales (2·d_ff) and a logit "
    "scale per head row count in the parameters; their products are elementwise: 0 FLOPs.")
PER_LAYER_EMBEDDINGS = (
    "Per-layer embeddings (Gemma 3n, Gemma 4): the table of L·p columns is an embedding "
    "(in embedding, out of non-embedding) and its lookup costs 0 FLOPs; the embedding's "
    "projection d → L·p and each layer's gate d → p and projection p → d are matrix products "
    "(per_layer_embeddings/*), the gate's product with the layer's vector and the norms 0.")
ALTUP_LAUREL = (
    "AltUp and LAuReL (Gemma 3n): AltUp's n copies of the residual stream count, per layer and "
    "token, the router d → n twice (prediction and correction), the coefficients n → n² and "
    "n → n and the prediction's product of the n × d streams with the n × n coefficients "
    "(2·d·n² FLOPs), and once a token the 2(n − 1) projections d → d into and out of the "
    "copies (altup/*); LAuReL its products d → r → d a layer (laurel/*); the correction's "
    "broadcast products, scales and norms 0. Every parameter of both is active.")
RELATIVE_LOGITS = (
    "Inkling's relative bias (attention.relative_logits): r_proj, d → h·d_rel per token, and "
    "each head's d_rel states times the layer's d_rel × E bank as transformers computes it, "
    "2·h·d_rel·E per token whatever the keys a query sees (E = rel_extent, the window w on a "
    "sliding layer), both attention/relative; picking each key's logit by its distance and "
    "adding it to the score count 0.")
SINK_PROJ = (
    "Sinks projected from the token (attention.sink_proj: Inkling 2's sink_proj d → h) count "
    "2·d·h FLOPs per token per attention layer (attention/sinks), its d·h weights as "
    "parameters; the sink logit joining each softmax counts 0, as a learned sink's.")
CONV_TAPS = (
    "Per-token convolution taps (residual_conv_taps: Inkling 2's weight_proj d → h_kv·k for "
    "the keys and the values of its full layers) count 2·d·h_kv·k FLOPs each per token "
    "(attention/conv_taps); the convolution they join counts 2·k per channel as a static one "
    "(transformers computes it element-wise).")
BLOCK_RESIDUAL = (
    "Attention residuals over blocks (block_residual: Inkling 2's Inkling2BlockAttentionResidual) "
    "count 2·d·S FLOPs for the scores and 2·d·S for the mix per token, query and mix over S "
    "sources (the stored blocks and the running residual), as transformers' eager attention "
    "computes them (block_residual); the sources' norm without weights and the softmax 0.")
RESIDUAL_CONVS = (
    "Residual short convolutions (residual_conv: Inkling's k_sconv and v_sconv on W_K's and "
    "W_V's outputs, attn_sconv and mlp_sconv on each sublayer's output) cost 2·k FLOPs per "
    "channel per token (attention/conv, residual_conv), a multiply-add per tap, as the other "
    "mixers' convolutions; x + conv(x) adds 0.")
CCA = (
    "Compressed convolutional attention (ZAYA1): W_Q, W_K, the two half-width value "
    "projections (current and previous token) and W_O count as GQA's; the causal depthwise "
    "and grouped convs over the (h + h_kv)·d_h query and key channels count 2·k_a and "
    "2·d_h·k_b FLOPs per channel per token (attention/conv); the residual q/k means, the L2 "
    "norms and the temperature per KV head 0.")
QSA_ATTENTION = (
    "QSA (Qwen4-Exp): the indexer's fused projection counts as attention/indexer; its scores "
    "of each query against the mean-pooled key of every complete block it sees (2·h_I·d_I per "
    "block; the pooling, the ReLU sum over heads and the top-k count 0) and the attention over "
    "the keys of the indexer_budget / ratio best complete blocks plus the keys past the last "
    "complete block are attention/scores, under causal per query, under full as if every "
    "query saw all T keys. Training counts the indexer trained (3 × forward), as by a loss of "
    "its own; its top-k passes no gradient to the model.")
HYPER_CONNECTIONS = (
    "Hyper-connections count each map's products per token, 2 × its weights (two maps a layer "
    "and the head map; DeepSeek-V4's stream mix 2·n²·d a map; Qwen4-Exp's gated maps their "
    "n·d → r → n·d gate and n·d → n inject); the norms over the n·d streams, the gates, the "
    "weighted sums or means and the spread of each sublayer's output 0, as norms are.")
ROUTER_MLP = (
    "ZAYA1's router counts its products per token and MoE layer, 2·(d·r + 2·r² + r·(E + 1)) "
    "(moe/router: the down projection, fc1, fc2 and out_proj over the experts and the skip "
    "class); the carried state's scale, the norm and the GELUs 0; a token counts top_k "
    "experts, the skip class included, as transformers runs it (expert 0 at weight 0).")
RESIDUAL_SCALES = (
    "Residual scales (Doge, ZAYA1): the learned vectors at each residual add (a scale, and "
    "biases and a branch scale where the model has them) and on the embedding are parameters "
    "(residual_scales), every one active; their products and sums are element-wise, 0 FLOPs.")
SCANS = (
    "Scans and convolutions (Mamba, gated DeltaNet, lightning attention, RWKV, Griffin's "
    "RG-LRU, xLSTM's mLSTM, short convolutions) are not matrix products: a causal conv costs "
    "2·k FLOPs per channel per token (a multiply-add per tap); a scan counts its recurrence "
    "run token by token, 1 FLOP per multiply or add on a state element (decay 1, write 2, "
    "each read 2: Mamba 5, gated DeltaNet 7 per element, Kimi Delta Attention's decay per key "
    "channel still 1 of them, lightning attention 5 per element of its d_h × d_h state per "
    "head, not its blocked form's 4·B·d_h + 4·d_h² per head and token for blocks of B; RWKV's "
    "WKV 9 per channel: decay 2, write 3, read 4 on its numerator and denominator; Griffin's "
    "RG-LRU 3 per channel: decay 1, write 2 (√(1 − a²) times the gated input, and the add), "
    "its state the output; the mLSTM 5 per element of its matrix memory d_k × d_v and "
    "normaliser d_k per head, its recurrent form, not the chunkwise form's 2·c·(d_k + d_v) "
    "more per head and token inside chunks of c); what prepares the coefficients (exp, "
    "softplus, gates, token shifts) counts 0.")
PASSES = (f"Backward = {BACKWARD_PER_FORWARD} × forward (activation and weight gradients); "
          f"train = {TRAIN_PER_FORWARD} × forward. Recomputation (activation checkpointing) is "
          f"hardware FLOPs, not counted.")
FINETUNE_PASSES = (
    f"Fine-tuning on a frozen base: a frozen weight's backward is its input gradient only, "
    f"{FROZEN_BACKWARD_PER_FORWARD} × its forward (no weight gradient); attention's QKᵀ and A·V "
    f"keep {BACKWARD_PER_FORWARD} × (both operands are activations) and the adapters train in "
    f"full, so a step = {1 + FROZEN_BACKWARD_PER_FORWARD} × the weights' forward + "
    f"{TRAIN_PER_FORWARD} × (attention + adapters). The first layer's input gradients, which "
    f"autograd skips when no adapter lies below them, are counted.")
UNITS = "Units: decimal — 1 M = 1e6, 1 B = 1e9, 1 T = 1e12; GFLOP = 1e9 FLOPs."




def mfu_note(source: str) -> str:
    """How an MFU was chosen: the default, --mfu, or a measurement's description."""
    return {"default": DEFAULT_MFU_NOTE, "flag": "given with --mfu"}.get(source, source)


PREDICTED_MFU = (
    "Predicted GPU-hours: tokens ÷ (tokens/s per GPU that `calc step` predicts for the layout "
    "shown) ÷ 3600, i.e. at the MFU of that prediction — a model of step time with global "
    "constants fitted on published runs (docs/step-time.md, docs/throughput.md), not a "
    "measurement; it leaves out restarts, evaluation and data loading.")


def gpu_hours_sentence(dtype: str, gpu: str, peak_flops: float, mfu: float, mfu_source: str,
                       gpus: int) -> str:
    """GPU-hours = FLOPs / (peak × MFU) / 3600 (calc.formulas.training), with this run's terms."""
    return (f"GPU-hours = training FLOPs / (dense {dtype} peak of one {gpu} = "
            f"{peak_flops / 1e12:g} TFLOP/s × MFU {mfu:.3g} [{mfu_note(mfu_source)}]) / "
            f"{SECONDS_PER_HOUR}; days = GPU-hours / ({gpus:,} GPUs × {HOURS_PER_DAY}).")


def energy_sentence(gpu: str, tdp_w: float, pue: float, pue_source: str,
                    grid_intensity: float | None) -> str:
    """Energy = GPU-hours × TDP × PUE (calc.formulas.cost), with this run's terms."""
    grid = (f"; CO2e = energy × {grid_intensity:g} g/kWh (given)" if grid_intensity is not None
            else "; give --grid-intensity (g CO2e/kWh) for emissions")
    return (f"Energy = GPU-hours × {gpu} board power {tdp_w:g} W × PUE {pue:g} [{pue_source}] "
            f"(Touvron et al. 2023 §6): the GPUs at their rated power all the time, the rest of "
            f"the data centre only through the PUE{grid}. Cost = GPU-hours × the price given "
            f"(calc has no built-in prices).")


@dataclass(frozen=True)
class RuleInfo:
    """A published training-FLOPs rule: its label, what it assumes, where it comes from.

    The expressions themselves are in calc.formulas.rules (sympy), keyed the same way.
    """

    label: str
    assumes: str
    source: str


RULES: dict[str, RuleInfo] = {
    "6N": RuleInfo(
        "6N", "N = all (active) parameters, embeddings included; attention ignored",
        "Kaplan et al. 2020 §2.1 (C ≈ 6N: 2N forward, one multiply-add per parameter)"),
    "kaplan": RuleInfo(
        "Kaplan 3·(2N + 2·L·T·d_attn)",
        "N non-embedding; one T×d_attn score term per layer (the 'Mask' row); no LM head",
        "Kaplan et al. 2020 Table 1, Eq. 2.2 (C_forward = 2N + 2·n_layer·n_ctx·d_attn)"),
    "palm": RuleInfo(
        "PaLM 6N + 12·L·H·Q·T",
        "full T×T attention; N without position embeddings (nanoGPT's reading)",
        "Chowdhery et al. 2022 (PaLM) Appendix B"),
    "megatron": RuleInfo(
        "Megatron-LM (causal)",
        "MHA/GQA projections (not MLA), gated FFN, top-k experts; T/2 keys per query; no router",
        "Narayanan et al. 2021 §5.1 Eq. 3 without recomputation, as generalised in "
        "Megatron-LM's training FLOPs count (causal attention halved since 2025)"),
    "chinchilla": RuleInfo(
        "Chinchilla App. F",
        "embeddings and softmax counted; K, Q, V all h·d_qk wide; 2-matrix FFN; full T×T",
        "Hoffmann et al. 2022 (Chinchilla) Appendix F, per sequence ÷ T; backward = 2×"),
}


def lora_sentence(method: str, rank: int | None, targets: Sequence[str]) -> str:
    """What a LoRA or QLoRA fine-tune trains, printed under its reports."""
    return (
        f"Fine-tuning: {method}, rank r = {rank} on {', '.join(targets)}: an adapter A·B beside "
        f"each frozen n_in × n_out projection holds r·(n_in + n_out) parameters (Hu et al. "
        f"2021 §4.1), on the nn.Linear modules transformers names so (PEFT's target_modules; "
        f"all-linear: every one but the LM head): an FFN target in the dense layers and the "
        f"shared experts' MLP, `experts` in every routed expert (fused parameters in "
        f"transformers 5, which all-linear leaves); q, k, v are separate matrices (a fused "
        f"QKV's adapter, r·(d + 3d), is smaller); no bias or extra module trains (PEFT's "
        f"bias='none'); lora_dropout 0.")


FULL_FINETUNE = "Fine-tuning: full — every parameter trains, as in pre-training."
LORA_ACTIVATIONS = (
    "Activations: a frozen projection's backward needs its weight, not its input, so only "
    "inputs an adapter needs are stored; each adapter adds x·A, r per token.")
PAGED_OPTIMIZER = (
    "Paged optimizer (bitsandbytes; Dettmers et al. 2023 §3): the optimizer states live in "
    "unified memory and move to the host when the GPU runs short, so the fits verdict leaves "
    "them out (they need host memory instead, not checked here).")


def qlora_sentence(label: str, dtype: str, double_quant: bool, bytes_per_weight: float,
                   source: str) -> str:
    """How QLoRA stores the frozen projections, printed under its reports."""
    scheme = ("8-bit block constants per 64 weights, one fp32 constant per 256 blocks"
              if double_quant else "one fp32 constant per 64 weights")
    return (f"QLoRA: the layers' projections in {label} ({dtype}) with {scheme}: "
            f"{BITS_PER_BYTE * bytes_per_weight:.6g} bits per weight ({source}); embeddings, "
            f"LM head, norms and biases stay at the training dtype; a dequantised matrix is a "
            f"transient buffer, not counted.")


def goodput_sentence(goodput: float) -> str:
    """What the GPU-hours from a predicted step assume of the time that trains."""
    published = ("Published: Llama 3 405B above 90 % effective training time over a 54-day "
                 "snapshot with 466 job interruptions (Dubey et al. 2024 §3.3.4).")
    if goodput == 1:
        return (f"Goodput 1 (the ideal): GPU-hours and days count only the predicted steps; "
                f"failures, restarts, checkpointing and evaluation would add to them "
                f"(--goodput). {published}")
    return (f"Goodput {goodput:g}: GPU-hours and days are the predicted steps' divided by "
            f"{goodput:g}, the share of wall-clock time that trains (given); the ideal figure "
            f"is beside them. {published}")


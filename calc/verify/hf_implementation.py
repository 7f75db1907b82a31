"""What transformers' own torch code computes where it differs from calc's conventions, so that
its FlopCounterMode count can be compared with calc's exactly.

calc counts a model's FLOPs by named conventions (calc.formulas.flops and .mixers); transformers
5.24.0 runs some parts another way, and on the meta device (no CUDA kernels) its reference torch
paths are what FlopCounterMode sees:

- a causal conv1d pads both sides and keeps the first T of its T + k − 1 outputs
  (causal_conv1d_fn in modeling_mamba.py, _mamba2.py, _qwen3_next.py, _lfm2.py; Griffin's
  conv_1d in RecurrentGemmaRecurrentBlock): torch counts the k − 1 discarded outputs too;
  Inkling's residual short convolutions (InklingShortConvolution through the same
  causal_conv1d_fn) too; Inkling 2's key and value convolutions with per-token taps
  (residual_conv_taps: Inkling2DynamicShortConvolution, windows times weights summed) are
  element-wise, 0 where calc counts 2·k per channel per token;
- a scan's elementwise state arithmetic is invisible to FlopCounterMode, and its contractions are
  the algorithm's: Mamba reads the state with one bmm per token (mamba_selective_scan's
  recurrent loop), Mamba-2 runs the chunked SSD algorithm (mamba2_chunk_scan: chunks of
  chunk_size, five einsums; torch.einsum contracts a size-1 dimension without a bmm), gated
  DeltaNet the chunked delta rule
  (torch_chunk_gated_delta_rule: chunks of 64, six matmuls; the triangular solve counts 0; with
  the channel gate chunk_kimi_delta_attention: chunks of 64, the per-channel decayed QKᵀ and
  K_βKᵀ element-wise, six matmuls), lightning attention its blocked form
  (MiniMaxLightningAttention.forward: blocks of block_size, four matmuls each); RWKV's WKV
  (rwkv_linear_attention_cpu, the path off CUDA and for one token) is element-wise only: 0, as
  is Griffin's RG-LRU (RecurrentGemmaRglru._rnn_scan, a loop of element-wise products); the
  mLSTM (modeling_xlstm.py xLSTMBackend) in mode "inference" (the default) runs the whole
  chunks of chunk_size c of a sequence in the chunkwise-parallel form
  (mlstm_chunkwise_native_autograd: per chunk Kᵀ·V into the memory, Q·Kᵀ and the masked scores
  × V over all c² pairs, Q·C and Q·n) and the tokens after them, or a single token, with the
  recurrent step (mlstm_recurrent_step_native: k·vᵀ, qᵀ·C and qᵀ·n as matmuls, the decay
  element-wise); in mode "train" every token is in whole chunks (transformers refuses another
  T), and "train_with_padding" pads T up to whole chunks and computes the padding too;
- DeepSeek Sparse Attention's layers (DeepseekV32Attention and GlmMoeDsaAttention, eager and
  SDPA paths) fold the keys the indexer did not select into the attention mask and compute QKᵀ
  and A·V over all T keys, where calc counts the min(index_topk, T) selected ones; MiniMax-M3's
  minimax_m3_sparse layers (MiniMaxM3VLAttention, MiniMaxM3VLIndexer.build_block_mask on the
  eager and SDPA paths) the same, where calc counts the min(index_topk_blocks ·
  index_block_size, T) keys of the selected blocks; Qwen4-Exp's indexed_attention layers
  (Qwen4ExpTextAttention) the same, where calc counts the keys of the top indexer_budget /
  ratio complete blocks and those past them, and its QSA indexer's per-query loop scores the
  ⌊i/ratio⌋ complete blocks query i sees, where calc's full convention scores ⌊T/ratio⌋;
- Doge's dynamic mask (DogeAttention.prepare_dynamic_mask, eager and SDPA paths) folds the keys
  outside each query's keep_window_size best-scored ones into the attention mask (a top-k, then
  masked_fill with the dtype's minimum) and computes QKᵀ and A·V over all T keys, where calc
  counts the min(keep_window_size, keys seen) selected ones, as for DSA;
- DeepSeek-V4's compressed sparse layers (DeepseekV4CSACompressor, DeepseekV4Attention) fold
  the compressed entries the indexer did not select into the attention mask (block_bias) and
  compute QKᵀ and A·V over all ⌊T/m⌋ of them, where calc counts the min(index_topk, ⌊T/m⌋)
  selected ones; and its indexer's scorer (DeepseekV4IndexerScorer) sums the heads' scores by
  their weights elementwise, where calc counts that sum as a product, 2·h_I per entry (DSA's
  indexer does it as a matmul);
- DiffLlama's differential attention (DiffLlamaAttention) runs two attention calls with the same
  queries and keys, one per half of the values: each QKᵀ map twice, where calc counts it once;
- a sliding layer scores every key and masks those outside its window (the eager and SDPA
  paths, create_sliding_window_causal_mask): QKᵀ and A·V over all T keys, where calc counts
  the w the window lets a query see (the same where w >= T);
- CPM-Ant (CpmAntModel.forward) prepends prompt_length prompt tokens to every sequence: its
  layers run T + prompt_length positions and its LM head the last T, where calc counts T
  positions through both;
- ZAYA1's CCA (ZayaCCAProjection) pads the queries and keys by (k_a − 1) + (k_b − 1) and runs
  the depthwise conv over T + k_b − 1 positions (the grouped conv then keeps T): torch counts
  the k_b − 1 extra ones; and it runs v_proj_delayed once more on a zero token per sequence
  (the previous token of the first one, 2·d·h_kv·d_h/2 FLOPs a layer);
- Llama 4's experts run every token through every expert and weight the outputs by the router's
  scores (Llama4TextMoe, Llama4TextExperts: bmm over all E experts), where calc counts top-k.

`transformers_flops` returns calc's forward FLOPs over T tokens with each of these replaced by
what transformers computes, and the names of the replacements.
"""

from __future__ import annotations

from typing import Any

from calc.evaluate import count_flops
from calc.hf.registry import find
from calc.spec import ModelSpec

_CONV_NAMES = {"mamba": "Mamba conv", "deltanet": "gated DeltaNet conv",
               "griffin": "Griffin's temporal conv", "conv": "short conv"}
# torch_chunk_gated_delta_rule's chunk_size (modeling_qwen3_next.py), and
# chunk_kimi_delta_attention's (modeling_kimi_linear.py)
DELTANET_CHUNK = 64
FMA = 2


def _mlstm(spec: ModelSpec, t: int, chunk: int, mode: str) -> int:
    """modeling_xlstm.py's mLSTM FLOPs for one layer over t tokens (module docstring): per head,
    the recurrent step's 2·d_k·d_v (k·vᵀ) + 2·d_k·d_v (qᵀ·C) + 2·d_k (qᵀ·n) per token, and on
    the tokens of whole chunks the chunkwise form's intra-chunk Q·Kᵀ (2·c·d_k) and scores × V
    (2·c·d_v) besides."""
    ml = spec.mlstm
    assert ml is not None
    dk, dv = ml.d_qk // ml.n_heads, ml.d_v // ml.n_heads
    padded = _chunks(t, chunk) * chunk if mode == "train_with_padding" else t
    chunked = padded if "train" in mode else (t // chunk) * chunk
    per_token = FMA * (2 * dk * dv + dk)
    return ml.n_heads * (padded * per_token + chunked * FMA * chunk * (dk + dv))


def _chunks(t: int, size: int) -> int:
    return -(-t // size)


def _ssd(spec: ModelSpec, t: int, chunk: int) -> int:
    """mamba2_chunk_scan's einsums for one layer over t tokens padded to whole chunks: C·Bᵀ and
    the masked scores times x within each chunk, the chunk states, their recurrence across
    chunks and the states read by C."""
    m = spec.mamba
    assert m is not None and m.n_heads is not None
    h, n = m.n_heads, m.d_state
    p = m.d_inner // h
    c = _chunks(t, chunk)
    # torch.einsum contracts a dimension of size 1 as a broadcast product, not a bmm: those
    # einsums count 0 (C·Bᵀ and C·states contract over N, the chunk ones over chunk_size).
    over_n, over_chunk = int(n > 1), int(chunk > 1)
    scores = FMA * c * chunk * chunk * h * n * over_n
    values = FMA * c * chunk * chunk * h * p * over_chunk
    states = FMA * c * chunk * h * p * n * over_chunk  # B_decay·x into the chunk states
    read = FMA * c * chunk * h * p * n * over_n  # C·states out
    across = FMA * (c + 1) ** 2 * h * p * n
    return scores + values + states + read + across


def _chunked_delta_rule(spec: ModelSpec, t: int) -> int:
    """torch_chunk_gated_delta_rule's matmuls for one layer: per value head and chunk of 64,
    k_β·kᵀ and q·kᵀ (C² · d_k each), the state read by the decayed keys and by q (C·d_k·d_v
    each), the intra-chunk scores times the new values (C²·d_v) and the state update kᵀ·v
    (d_k·C·d_v).

    With the channel gate, chunk_kimi_delta_attention (modeling_kimi_linear.py): the decay
    differs per key channel, so k_β·kᵀ and q·kᵀ are element-wise products summed over d_k
    (0 here), and the triangular system is inverted by forward substitution (element-wise, 0);
    its matmuls are the inverse times v_β (C²·d_v) and times the decayed k_β (C²·d_k), the state
    read by the decayed q and by the decayed keys (C·d_k·d_v each), the intra-chunk scores times
    the new values (C²·d_v) and the state update (d_k·C·d_v)."""
    n = spec.deltanet
    assert n is not None
    size, chunks = DELTANET_CHUNK, _chunks(t, DELTANET_CHUNK)
    square = (size * size * (n.d_k + 2 * n.d_v) if n.channel_gate
              else size * size * (2 * n.d_k + n.d_v))
    per_chunk = FMA * (square + 3 * size * n.d_k * n.d_v)
    return n.n_v_heads * chunks * per_chunk


def _blocked_lightning(spec: ModelSpec, t: int, block: int) -> int:
    """MiniMaxLightningAttention's matmuls for one layer over t tokens: per head and block of
    c tokens (the last one shorter), QKᵀ and the decayed scores times V within the block
    (c²·d_h each), the decayed queries times the state carried in (c·d_h²) and the state update
    (K·decay)ᵀV (d_h·c·d_h); the decays are element-wise products (0)."""
    la = spec.lightning
    assert la is not None
    whole, rest = divmod(t, block)
    squares = whole * block * block + rest * rest  # Σ c² over the blocks
    return la.n_heads * FMA * (2 * squares * la.d_head + 2 * t * la.d_head * la.d_head)


def _conv_channels(spec: ModelSpec) -> dict[str, tuple[int, int]]:
    """Channels and kernel of each conv mixer the model has."""
    out = {}
    if spec.mamba is not None:
        m = spec.mamba
        out["mamba"] = (m.d_inner + (2 * m.n_groups * m.d_state if m.version == 2 else 0),
                        m.d_conv)
    if spec.deltanet is not None:
        n = spec.deltanet
        out["deltanet"] = (2 * n.n_k_heads * n.d_k + n.n_v_heads * n.d_v, n.d_conv)
    if spec.griffin is not None:
        out["griffin"] = (spec.griffin.d_lru, spec.griffin.d_conv)
    if spec.short_conv is not None:
        out["conv"] = (spec.d_model, spec.short_conv.d_conv)
    return out


def transformers_flops(spec: ModelSpec, hf_config: dict[str, Any], t: int
                       ) -> tuple[int, list[str]]:
    """transformers' forward FLOPs over one sequence of t tokens, as FlopCounterMode counts them
    on the meta device: calc's full-convention count with transformers' own way of the parts
    listed in the module docstring; and those parts' names."""
    flops = count_flops(spec, t, "full")
    total = flops.forward * t
    n = spec.layer_counts
    changed: list[str] = []
    layers = {"mamba": n["mamba"], "deltanet": n["deltanet"], "griffin": n["griffin"],
              "conv": n["conv"]}
    for mixer, (channels, kernel) in _conv_channels(spec).items():
        total += layers[mixer] * FMA * channels * kernel * (kernel - 1)
        changed.append(f"{_CONV_NAMES[mixer]} over T + k − 1 outputs")
    if spec.residual_conv is not None:
        kernel = spec.residual_conv
        # Inkling 2's convolutions with per-token taps (residual_conv_taps) are element-wise
        # products and sums in transformers (Inkling2DynamicShortConvolution): 0, and no
        # padded outputs
        tapped = sum(kv * (width + values) for kind in spec.attention_kinds
                     if kind in spec.residual_conv_taps
                     for kv, width, values in [spec.heads_of(kind)[1:]])
        channels = 2 * spec.d_model * spec.n_layers + spec.kv_channels - tapped
        total += FMA * channels * kernel * (kernel - 1) - FMA * tapped * kernel * t
        changed.append("residual short convs over T + k − 1 outputs"
                       + (", those with per-token taps element-wise" if tapped else ""))
    if n["mamba"]:
        m = spec.mamba
        assert m is not None
        total -= flops.components["mamba/scan"] * t
        if m.version == 1:
            total += n["mamba"] * FMA * m.d_inner * m.d_state * t
            changed.append("Mamba scan: one bmm read per token")
        else:
            # mamba2's chunk_size, Falcon-H1's mamba_chunk_size (both default 256), else the
            # type's default (Nemotron-H's 128)
            kind = find(hf_config.get("model_type"))
            default = kind.defaults.get("chunk_size") if kind else None
            chunk = int(hf_config.get("chunk_size") or hf_config.get("mamba_chunk_size")
                        or default or 256)
            total += n["mamba"] * _ssd(spec, t, chunk)
            changed.append(f"Mamba-2 scan: chunked SSD einsums (chunk {chunk})")
    if n["deltanet"]:
        total -= flops.components["deltanet/scan"] * t
        total += n["deltanet"] * _chunked_delta_rule(spec, t)
        changed.append(f"gated DeltaNet: chunked delta rule (chunk {DELTANET_CHUNK})")
    if n["lightning"]:
        kind = find(hf_config.get("model_type"))
        block = int(hf_config.get("block_size")
                    or (kind.defaults.get("block_size") if kind else None) or 256)
        total -= flops.components["lightning/scan"] * t
        total += n["lightning"] * _blocked_lightning(spec, t, block)
        changed.append(f"lightning attention: blocked form (block {block})")
    if n["rwkv"]:
        total -= flops.components["rwkv/scan"] * t
        changed.append("RWKV: the WKV recurrence element-wise (rwkv_linear_attention_cpu)")
    if n["griffin"]:
        total -= flops.components["griffin/scan"] * t
        changed.append("Griffin: the RG-LRU recurrence element-wise (_rnn_scan)")
    if n["mlstm"]:
        kind = find(hf_config.get("model_type"))
        defaults = kind.defaults if kind else {}
        chunk = int(hf_config.get("chunk_size") or defaults.get("chunk_size") or 64)
        mode = str(hf_config.get("mode") or defaults.get("mode") or "inference")
        total -= flops.components["mlstm/scan"] * t
        total += n["mlstm"] * _mlstm(spec, t, chunk, mode)
        changed.append(f"mLSTM: chunkwise form over whole chunks of {chunk}, the recurrent "
                       f"step's matmuls on the rest (mode {mode})")
    window = spec.attention.sliding_window
    if window is not None and window < t and spec.n_local_layers:
        # the same model whose local layers see all t keys, by calc's own count
        # (the scores only: a relative bias' bank stays the window wide, InklingRelativeLogits)
        unmasked = count_flops(spec.updated(**{"attention.sliding_window": t}), t, "full")
        relative = "attention/relative"
        total += (unmasked.forward - flops.forward - unmasked.components.get(relative, 0)
                  + flops.components.get(relative, 0)) * t
        changed.append("sliding layers: every key scored, those outside the window masked")
    indexer = spec.attention.indexer
    if indexer is not None and indexer.pooled:
        pair = FMA * spec.attention.n_heads * (spec.head_dim_qk + spec.head_dim_v)
        size = indexer.block_size
        blocks = t // size
        keys = t - size * (blocks - min(indexer.topk, blocks))
        total += spec.n_selecting_layers * pair * t * (t - keys)
        # the indexer's loop scores each query's own complete blocks, ⌊i/B⌋ for query i
        seen = sum((i + 1) // size for i in range(t))
        total += spec.n_indexer_layers * FMA * indexer.n_heads * indexer.head_dim * (
            seen - t * blocks)
        changed.append("Qwen4-Exp QSA: attention over every key, the unselected ones masked; "
                       "the indexer scores the complete blocks each query sees")
    elif indexer is not None and indexer.topk * indexer.block_size < t:
        pair = FMA * spec.attention.n_heads * (spec.head_dim_qk + spec.head_dim_v)
        # the selecting layers only: dots3's sliding layers and MiniMax-M3's full_attention
        # layers have no indexer
        selected = indexer.topk * indexer.block_size
        total += spec.n_selecting_layers * pair * t * (t - selected)
        changed.append("DSA, MiniMax-M3: attention over every key, the unselected ones masked")
    mask = spec.attention.dynamic_mask
    if mask is not None and mask.keep < t:
        pair = FMA * spec.attention.n_heads * (spec.head_dim_qk + spec.head_dim_v)
        total += n["attention"] * pair * t * (t - mask.keep)
        changed.append("Doge's dynamic mask: attention over every key, the unselected ones "
                       "masked")
    compression = spec.attention.compression
    if compression is not None and compression.indexer is not None:
        indexer, entries = compression.indexer, t // compression.sparse_rate
        pair = FMA * spec.attention.n_heads * (spec.head_dim_qk + spec.head_dim_v)
        unselected = entries - min(indexer.topk, entries)
        total += spec.n_sparse_layers * (pair * unselected - FMA * indexer.n_heads * entries) * t
        changed.append("DeepSeek-V4 CSA: attention over every compressed entry, the unselected "
                       "ones masked; the indexer's head sum elementwise")
    if spec.attention.differential and hf_config.get("model_type") == "diffllama":
        # DiffLlama has global layers only: each recomputed map is all T² pairs at full
        total += n["attention"] * FMA * spec.attention.n_heads * spec.head_dim_qk * t * t
        changed.append("DiffLlama: each QKᵀ map computed twice")
    if str(hf_config.get("model_type", "")).startswith("llama4") and spec.moe:
        moe, ffn = spec.moe, spec.ffn
        assert ffn is not None
        per_expert = FMA * (2 + int(ffn.gated)) * spec.d_model * moe.d_expert
        total += n["moe"] * (moe.n_experts - moe.top_k) * per_expert * t
        changed.append("Llama 4: every expert on every token")
    cca = spec.attention.cca
    if cca is not None:
        channels = (spec.attention.n_heads + spec.n_kv_heads) * spec.head_dim_qk
        padded = FMA * channels * cca.kernel * (cca.grouped_kernel - 1)
        zero_token = FMA * spec.d_model * spec.n_kv_heads * spec.head_dim_qk // 2
        total += n["attention"] * (padded + zero_token)
        changed.append("CCA: the depthwise conv over T + k_b − 1 positions, v_proj_delayed on "
                       "a zero token before the first")
    if hf_config.get("model_type") == "cpmant":
        kind = find("cpmant")
        assert kind is not None
        prompt = int(hf_config.get("prompt_length") or kind.defaults["prompt_length"])
        longer = count_flops(spec, t + prompt, "full")
        total += (longer.forward * (t + prompt) - flops.forward * t
                  - longer.components["lm_head"] * prompt)
        changed.append(f"CPM-Ant: {prompt} prompt positions before the T tokens, through the "
                       f"layers but not the head")
    return total, changed

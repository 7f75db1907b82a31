"""The step-time model's work for the mixers other than attention: their projections as matrix
products, their scans and convolutions as recurrences, their gates as element-wise kernels.

Tensor parallelism splits each mixer by heads or channels, as attention by heads: in_proj is
column-parallel, out_proj row-parallel, the convolution, the scan and the gated norm run on a
rank's own channels (Megatron-LM megatron/core/ssm/mamba_mixer.py and gated_delta_net.py for
Mamba-2 and gated DeltaNet; vLLM vllm/model_executor/layers/mamba/mamba_mixer.py and
short_conv.py for Mamba-1 and LFM2's short convolution). Mamba-1's x_proj reads a rank's channels
and is row-parallel, so its R + 2N outputs are all-reduced (vLLM's MambaMixer); dt_proj is
column-parallel.

Kernels (the bytes of calc.timing.kernels.Recurrence, 16-bit activations):
- Mamba-1's selective scan (Gu & Dao 2023 §3.3.2: fused, the state kept in SRAM, on CUDA
  cores) reads x, Δ, z (3D), B and C (2N), writes y and the gated y·SiLU(z) (2D); its backward
  recomputes the states: 2 + 1 forwards. The causal conv1d (causal-conv1d, CUDA cores) reads
  and writes its channels; Mamba's fused backward recomputes it (MambaInnerFn checkpoint_lvl=1,
  mamba_split_conv1d_scan_combined): 2 + 1.
- Mamba-2's SSD (Dao & Gu 2024 §6: chunked, its work matrix products on tensor cores) reads x
  (D), Δ (H), B and C (2GN) and writes y (D); its gated RMSNorm reads y and z and writes D.
- Gated DeltaNet's chunked delta rule (flash-linear-attention chunk_gated_delta_rule, tensor
  cores; Yang et al. 2025 §3) reads q, k, v, g, β and writes o; its gated norm 3 value widths.
  With the channel gate (Kimi Delta Attention, fla's chunk_kda) g is one per key channel of each
  state (H_v·d_k) instead of one per value head.
  Its conv (causal_conv1d) keeps its input: backward 2.
- Lightning attention (MiniMax-01 §2.2: the blocked form, intra-block QKᵀ and inter-block
  states, matrix products on tensor cores; flash-linear-attention's chunk_simple_gla with a
  fixed decay per head runs it the same way) reads q, k, v and writes o; its backward recomputes
  the block states. The SiLU on q, k, v reads and writes 3 widths, the norm and the sigmoid
  gate 3 (as gated DeltaNet's gated norm). qkv_proj and output_gate are column-parallel,
  out_proj row-parallel, by heads.
- RWKV-4's WKV (transformers' RwkvLinearAttention, a CUDA kernel with a thread per channel that
  runs the recurrence in fp32 registers: element-wise, the CUDA-core peak) reads k and v and
  writes its output (3·d_rw); its backward recomputes the states. The token shifts' mixes (five,
  each reading x and x_{t−1} and writing one: 3d), the two sigmoids and the two products with
  them (time-mix d_rw wide, channel-mix d) are element-wise kernels. key, value and receptance
  are column-parallel and output row-parallel by channels; the channel-mix's receptance d → d
  is column-parallel like them (calc splits every weight t ways, calc.formulas.memory); the
  gather of its output before it gates the FFN's all-reduced output is not counted.
- Griffin's recurrent block (RecurrentGemma): linear_y and linear_x column-parallel and
  linear_out row-parallel by channels, the two block-diagonal gates one batched product each
  (2·d_gr outputs of w_gr inputs, split by blocks); the temporal conv reads and writes d_gr
  channels; the RG-LRU is a linear scan (an fp32 element-wise kernel, the CUDA-core peak) that
  reads a_t and its normalised input and writes h (3·d_gr), its backward recomputing the
  states. Element-wise around them, each read and written once: GeLU(y) (2), each gate's bias
  and sigmoid (2 each), a_t from r_t (2), √(1 − a_t²) (2), i ⊙ x (3), its product with the
  normaliser (3) and h ⊙ GeLU(y) (3): 19·d_gr.
- xLSTM's mLSTM (xLSTM 7B, arXiv 2503.13427: its chunkwise TFLA kernels, mlstm_kernels, whose
  intra-chunk and inter-chunk work is matrix products on tensor cores, like lightning
  attention's blocked form) reads q, k (2·H·d_k), v (H·d_v) and the two gates (2H) and writes
  h (H·d_v) and each token's normaliser and maximum (2H); its backward recomputes the chunk
  states. q, k, v, the output gate and the two gates are column-parallel and out_proj
  row-parallel, by heads. Element-wise: the gates' soft caps (2H in, 2H out), the head norm
  and the sigmoid output gate (2 widths each) and their product (3): 7·H·d_v + 4H.
- Cross-attention (Llama 3.2 Vision): W_Q, W_K, W_V column-parallel and W_O row-parallel by
  heads, as attention's; W_K and W_V's FLOPs, per sequence over its image tokens, spread over
  its text tokens; its scores priced with attention's (calc.timing.operators). Skipped layers
  (no image tokens) run nothing and reduce nothing.
- The short convolution (LFM2) reads and writes d channels; B ⊙ x and C ⊙ conv(·) read 2d and
  write d each.
Not counted: Jamba's Δ/B/C norms, DeltaNet's q/k L2 norms, softplus and exp of Δ (small, fused in
practice), and the chunked kernels' own extra reads (SSD and fla read x and B again per pass).
"""

from __future__ import annotations

from collections.abc import Mapping

from calc.spec import ModelSpec
from calc.timing.kernels import ACTIVATION_BYTES, ElementWise, Matmul, Recurrence

SCAN_BACKWARD = 2 + 1  # input and parameter gradients, and the states recomputed
CONV_BACKWARD = 2
CONV_RECOMPUTED_BACKWARD = 2 + 1  # Mamba's fused backward runs the conv forward again


def mixer_matmuls(spec: ModelSpec, flops: Mapping[str, float]) -> list[Matmul]:
    """The projections of the Mamba, gated DeltaNet, lightning-attention, RWKV, Griffin, mLSTM
    and short-convolution layers."""
    counts, d = spec.layer_counts, spec.d_model
    ops: list[Matmul] = []
    mamba, dn = spec.mamba, spec.deltanet
    if mamba is not None:
        n, D, N = counts["mamba"], mamba.d_inner, mamba.d_state
        in_width = 2 * D + (2 * mamba.n_groups * N + (mamba.n_heads or 0)
                            if mamba.version == 2 else 0)
        ops.append(Matmul("mamba/in", flops["mamba/in"], in_width, d, n, "column"))
        if mamba.version == 1:
            rank = mamba.dt_rank or 0
            ops += [Matmul("mamba/x", flops["mamba/x"], rank + 2 * N, D, n, "row"),
                    Matmul("mamba/dt", flops["mamba/dt"], D, rank, n, "column")]
        ops.append(Matmul("mamba/out", flops["mamba/out"], d, D, n, "row"))
    if dn is not None:
        n, keys, values = counts["deltanet"], dn.n_k_heads * dn.d_k, dn.n_v_heads * dn.d_v
        # q, k, v, β; z and α too unless the channel gate projects them through low rank, its
        # decay and output gate where it projects them at full rank (Ling 3)
        gates = (0 if dn.channel_gate else values + dn.n_v_heads) \
            + (dn.n_v_heads * dn.d_k + values if dn.full_rank_gates else 0)
        ops.append(Matmul("deltanet/in", flops["deltanet/in"],
                          2 * keys + values + dn.n_v_heads + gates, d, n, "column"))
        if dn.channel_gate and not dn.full_rank_gates:
            # the two up-projections, rank → decay (H_v·d_k) and output gate (H_v·d_v),
            # column-parallel by heads; their small down-projections d → rank ride in the
            # same FLOPs (calc's exact count of all four)
            ops.append(Matmul("deltanet/lowrank", flops["deltanet/lowrank"],
                              dn.n_v_heads * dn.d_k + values, dn.gate_rank or 0, n, "column"))
        ops.append(Matmul("deltanet/out", flops["deltanet/out"], d, values, n, "row"))
    if spec.lightning is not None:
        n, width = counts["lightning"], spec.lightning.n_heads * spec.lightning.d_head
        ops += [Matmul("lightning/qkv", flops["lightning/qkv"], 3 * width, d, n, "column"),
                Matmul("lightning/gate", flops["lightning/gate"], width, d, n, "column"),
                Matmul("lightning/out", flops["lightning/out"], d, width, n, "row")]
    if spec.rwkv is not None:
        n, width = counts["rwkv"], spec.rwkv.d_attention
        ops += [Matmul(f"rwkv/{part}", flops[f"rwkv/{part}"], width, d, n, "column")
                for part in ("key", "value", "receptance")]
        ops += [Matmul("rwkv/output", flops["rwkv/output"], d, width, n, "row"),
                Matmul("rwkv/gate", flops["rwkv/gate"], d, d, n, "column")]
    if spec.griffin is not None:
        n, width = counts["griffin"], spec.griffin.d_lru
        ops += [Matmul(f"griffin/{part}", flops[f"griffin/{part}"], width, d, n, "column")
                for part in ("y", "x")]
        ops += [Matmul("griffin/gates", flops["griffin/gates"], 2 * width,
                       spec.griffin.block_width, n, "column"),
                Matmul("griffin/out", flops["griffin/out"], d, width, n, "row")]
    if spec.mlstm is not None:
        n, ml = counts["mlstm"], spec.mlstm
        widths = {"q": ml.d_qk, "k": ml.d_qk, "v": ml.d_v, "ogate": ml.d_v,
                  "gates": 2 * ml.n_heads}
        ops += [Matmul(f"mlstm/{part}", flops[f"mlstm/{part}"], width, d, n, "column")
                for part, width in widths.items()]
        ops.append(Matmul("mlstm/out", flops["mlstm/out"], d, ml.d_v, n, "row"))
    if spec.cross_attention is not None:  # W_Q and W_O per text token, W_K and W_V per image
        n, h, kv = counts["cross_attention"], spec.attention.n_heads, spec.n_kv_heads
        d_qk, d_v = spec.head_dim_qk, spec.head_dim_v  # token (their FLOPs shared by the text)
        ops += [Matmul("cross_attention/q", flops["cross_attention/q"], h * d_qk, d, n,
                       "column"),
                Matmul("cross_attention/kv", flops["cross_attention/kv"], kv * (d_qk + d_v), d,
                       n, "column"),
                Matmul("cross_attention/o", flops["cross_attention/o"], d, h * d_v, n, "row")]
    if spec.short_conv is not None:
        n = counts["conv"]
        ops += [Matmul("conv/in", flops["conv/in"], 3 * d, d, n, "column"),
                Matmul("conv/out", flops["conv/out"], d, d, n, "row")]
    return ops


def recurrences(spec: ModelSpec, flops: Mapping[str, float]) -> list[Recurrence]:
    """The scans and convolutions, FLOPs from calc's counts, bytes from their kernels' IO."""
    counts, d, q = spec.layer_counts, spec.d_model, ACTIVATION_BYTES
    ops: list[Recurrence] = []
    mamba, dn = spec.mamba, spec.deltanet
    if mamba is not None:
        n, D, N = counts["mamba"], mamba.d_inner, mamba.d_state
        bc = 2 * N * (mamba.n_groups if mamba.version == 2 else 1)  # B and C
        channels = D + (bc if mamba.version == 2 else 0)  # the conv's
        ops.append(Recurrence("mamba/conv", flops["mamba/conv"], n * 2 * channels * q,
                              "vector", CONV_RECOMPUTED_BACKWARD))
        if mamba.version == 1:
            ops.append(Recurrence("mamba/scan", flops["mamba/scan"], n * (5 * D + bc) * q,
                                  "vector", SCAN_BACKWARD))
        else:
            heads = mamba.n_heads or 0
            ops.append(Recurrence("mamba/scan", flops["mamba/scan"],
                                  n * (2 * D + heads + bc) * q, "tensor", SCAN_BACKWARD))
    if dn is not None:
        n, keys, values = counts["deltanet"], dn.n_k_heads * dn.d_k, dn.n_v_heads * dn.d_v
        # g per value head, or per key channel of each state (fla's chunk_kda)
        decay = dn.n_v_heads * dn.d_k if dn.channel_gate else dn.n_v_heads
        ops += [Recurrence("deltanet/conv", flops["deltanet/conv"],
                           n * 2 * (2 * keys + values) * q, "vector", CONV_BACKWARD),
                Recurrence("deltanet/scan", flops["deltanet/scan"],
                           n * (2 * keys + 2 * values + dn.n_v_heads + decay) * q, "tensor",
                           SCAN_BACKWARD)]
    if spec.lightning is not None:  # q, k, v in, o out
        width = spec.lightning.n_heads * spec.lightning.d_head
        ops.append(Recurrence("lightning/scan", flops["lightning/scan"],
                              counts["lightning"] * 4 * width * q, "tensor", SCAN_BACKWARD))
    if spec.rwkv is not None:  # k, v in, the output out
        ops.append(Recurrence("rwkv/scan", flops["rwkv/scan"],
                              counts["rwkv"] * 3 * spec.rwkv.d_attention * q, "vector",
                              SCAN_BACKWARD))
    if spec.griffin is not None:  # the conv: d_gr in and out; the scan: a, u in, h out
        n, width = counts["griffin"], spec.griffin.d_lru
        ops += [Recurrence("griffin/conv", flops["griffin/conv"], n * 2 * width * q, "vector",
                           CONV_BACKWARD),
                Recurrence("griffin/scan", flops["griffin/scan"], n * 3 * width * q, "vector",
                           SCAN_BACKWARD)]
    if spec.mlstm is not None:  # q, k, v, i, f in; h, n, m out
        ml = spec.mlstm
        ops.append(Recurrence("mlstm/scan", flops["mlstm/scan"],
                              counts["mlstm"] * (2 * ml.d_qk + 2 * ml.d_v + 4 * ml.n_heads) * q,
                              "tensor", SCAN_BACKWARD))
    cca = spec.attention.cca
    if cca is not None:  # ZAYA1's two convs over q and k, each reading and writing C channels
        channels = (spec.attention.n_heads + spec.n_kv_heads) * spec.head_dim_qk
        ops.append(Recurrence("attention/conv", flops["attention/conv"],
                              counts["attention"] * 2 * 2 * channels * q, "vector",
                              CONV_BACKWARD))
    if spec.short_conv is not None:
        ops.append(Recurrence("conv/conv", flops["conv/conv"], counts["conv"] * 2 * d * q,
                              "vector", CONV_BACKWARD))
    if spec.residual_conv is not None:
        # Inkling's residual short convolutions (k_sconv, v_sconv; attn_sconv, mlp_sconv): each
        # a depthwise causal conv1d kernel reading its channels and writing x + conv(x) once
        ops += [Recurrence("attention/conv", flops["attention/conv"], 2 * spec.kv_channels * q,
                           "vector", CONV_BACKWARD),
                Recurrence("residual_conv", flops["residual_conv"],
                           spec.n_layers * 2 * 2 * d * q, "vector", CONV_BACKWARD)]
    return ops


def mixer_elementwise(spec: ModelSpec) -> list[ElementWise]:
    """The mixers' gates (inside the tensor-parallel region), bytes per token, all layers."""
    counts, q = spec.layer_counts, ACTIVATION_BYTES
    gates = 0
    if spec.mamba is not None and spec.mamba.version == 2:  # gated RMSNorm: y, z → out
        gates += counts["mamba"] * 3 * spec.mamba.d_inner
    if spec.deltanet is not None:
        gates += counts["deltanet"] * 3 * spec.deltanet.n_v_heads * spec.deltanet.d_v
    if spec.lightning is not None:  # SiLU on q, k, v (3 in, 3 out); the norm and the gate: 3
        gates += counts["lightning"] * 9 * spec.lightning.n_heads * spec.lightning.d_head
    if spec.rwkv is not None:  # 5 token-shift mixes (3d each), 2 sigmoids and 2 products
        width = spec.rwkv.d_attention
        gates += counts["rwkv"] * (5 * 3 * spec.d_model + 2 * width + 3 * width
                                   + 2 * spec.d_model + 3 * spec.d_model)
    if spec.griffin is not None:  # the products and activations around the RG-LRU (docstring)
        gates += counts["griffin"] * 19 * spec.griffin.d_lru
    if spec.mlstm is not None:  # soft caps, head norm, sigmoid(o) and the product (docstring)
        gates += counts["mlstm"] * (7 * spec.mlstm.d_v + 4 * spec.mlstm.n_heads)
    if spec.short_conv is not None:  # B ⊙ x and C ⊙ conv(B ⊙ x)
        gates += counts["conv"] * 2 * 3 * spec.d_model
    return [ElementWise("mixer gates", gates * q, "tensor")] if gates else []


def tp_reductions(spec: ModelSpec) -> tuple[tuple[float, int], ...]:
    """Tensor-parallel all-reduces of the forward pass, per layer on average: (how many,
    elements per token). One after each sublayer (the mixer, the FFN), one for a parallel
    block or for attention and Mamba side by side (their partial sums add before one
    reduction); Mamba-1's x_proj adds one of R + 2N."""
    layers = spec.n_layers
    if spec.parallel_block:
        sublayers = layers
    else:
        sublayers = layers + sum(kind != "none" for kind in spec.ffn_kinds)
    # the shared block adds two at each depth: after W_O and after the FFN's down projection
    if spec.shared_block is not None:
        sublayers += 2 * spec.shared_block.depths
    # skipped cross-attention layers (no image tokens) run no sublayer
    cross = spec.cross_attention
    if cross is not None and not cross.image_tokens:
        sublayers -= 2 * spec.layer_counts["cross_attention"]
    reductions: list[tuple[float, int]] = [(sublayers / layers, spec.d_model)]
    mamba = spec.mamba
    if mamba is not None and mamba.version == 1:
        width = (mamba.dt_rank or 0) + 2 * mamba.d_state
        reductions.append((spec.layer_counts["mamba"] / layers, width))
    return tuple(reductions)

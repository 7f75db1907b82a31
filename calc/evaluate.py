"""Numbers for a spec: map a ModelSpec onto the formulas' symbols and run the compiled functions.

No sympy here (calc._compiled is generated plain Python), so the report's hot path stays fast.
Parameter counts and per-sequence FLOPs are exact Python integers; a per-token attention cost is
a per-sequence integer divided by T, kept integral when it divides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from calc import _compiled
from calc.counting import BACKWARD_PER_FORWARD, TRAIN_PER_FORWARD
from calc.spec import ModelSpec
from calc.spec.base import per_instance, per_instance_keyed
from calc.spec.finetune import (
    LORA_TARGETS,
    LOSS_BYTES,
    FineTune,
    loss_gradient_bytes,
    resolve_targets,
)
from calc.spec.gemm_precision import GEMM_PRECISIONS
from calc.spec.layout import ACTIVATION_OFFLOAD_LAYERS
from calc.spec.loop import loop_weight_values
from calc.spec.model import SELF_ATTENTION
from calc.spec.precision import BYTES_PER_ELEMENT

if TYPE_CHECKING:  # the layout's schemas load only where a layout is priced (start-up)
    from calc.spec.layout import Layout
    from calc.spec.memory import StackMemory, TrainingMemory

# The adapters whose input is a mixer's in_proj input (calc.formulas.memory, i_keep_mix).
MIXER_INPUT_TARGETS = ("in_proj", "in_proj_qkvz", "in_proj_ba", "qkv_proj", "output_gate",
                       "linear_y", "linear_x", "ogate_preact", "igate_preact", "fgate_preact")

# The symbol of each layer count (calc.formulas.params, PARTS) and the spec's name for it.
LAYER_COUNTS = {"L_att": "attention", "L_loc": "local", "L_chk": "chunked", "L_ssm": "mamba",
                "L_dn": "deltanet", "L_la": "lightning", "L_rw": "rwkv", "L_gr": "griffin",
                "L_ml": "mlstm",
                "L_sc": "conv", "L_xa": "cross_attention", "L_dense": "dense", "L_moe": "moe"}


def layer_count_values(spec: ModelSpec) -> dict[str, int]:
    """The layers of each kind (calc.spec.layers), keyed by their symbols."""
    counts = spec.layer_counts
    return {symbol: counts[kind] for symbol, kind in LAYER_COUNTS.items()}


def _mixer_values(spec: ModelSpec) -> dict[str, int]:
    """The sizes and indicators of the Mamba, gated DeltaNet, lightning-attention, RWKV,
    Griffin, mLSTM and short-convolution mixers (0 for a mixer the model does not have)."""
    mamba, dn, la, sc, gr = spec.mamba, spec.deltanet, spec.lightning, spec.short_conv, spec.griffin
    ml = spec.mlstm
    v2 = mamba is not None and mamba.version == 2
    return {
        "d_in": mamba.d_inner if mamba else 0, "N_s": mamba.d_state if mamba else 0,
        "k_s": mamba.d_conv if mamba else 0, "R_dt": (mamba.dt_rank or 0) if mamba else 0,
        "H_s": (mamba.n_heads or 0) if mamba else 0, "G_s": mamba.n_groups if mamba else 0,
        "i_m2": int(v2), "i_gn": int(bool(mamba and mamba.has_gated_norm)),
        "i_dtn": int(bool(mamba and mamba.dt_norms)),
        "b_ssm": int(bool(mamba and mamba.bias)), "b_cs": int(bool(mamba and mamba.conv_bias)),
        "H_k": dn.n_k_heads if dn else 0, "H_v": dn.n_v_heads if dn else 0,
        "d_lk": dn.d_k if dn else 0, "d_lv": dn.d_v if dn else 0,
        "k_dn": dn.d_conv if dn else 0,
        "i_cg": int(bool(dn and dn.channel_gate)), "r_g": (dn.gate_rank or 0) if dn else 0,
        "i_gf": int(bool(dn and dn.full_rank_gates)),
        "H_la": la.n_heads if la else 0, "d_la": la.d_head if la else 0,
        "d_rw": spec.rwkv.d_attention if spec.rwkv else 0,
        "d_gr": gr.d_lru if gr else 0, "w_gr": gr.block_width if gr else 0,
        "k_gr": gr.d_conv if gr else 0,
        "H_ml": ml.n_heads if ml else 0, "d_mk": ml.d_qk // ml.n_heads if ml else 0,
        "d_mv": ml.d_v // ml.n_heads if ml else 0,
        "k_sc": sc.d_conv if sc else 0, "b_sc": int(bool(sc and sc.bias)),
        **_shared_block_values(spec), **_cross_attention_values(spec),
    }


def _cross_attention_values(spec: ModelSpec) -> dict[str, int]:
    """The image tokens per sequence the cross-attention layers read, and whether there are
    any (0 without cross_attention)."""
    images = spec.cross_attention.image_tokens if spec.cross_attention else 0
    return {"T_img": images, "i_img": int(images > 0)}


def _shared_block_values(spec: ModelSpec) -> dict[str, int]:
    """The shared block's depths, weight sets, adapter rank and attention adapters (0 without
    one)."""
    block = spec.shared_block
    if block is None:
        return {"L_sb": 0, "M_sb": 0, "r_sb": 0, "i_sba": 0}
    return {"L_sb": block.depths, "M_sb": block.n_blocks, "r_sb": block.adapter_rank or 0,
            "i_sba": int(block.attention_adapters)}


def _per_layer_embedding_values(spec: ModelSpec) -> dict[str, int]:
    """Per-layer embeddings' width p, table rows and indicator (0 without them)."""
    ple = spec.per_layer_embeddings
    if ple is None:
        return {"p_le": 0, "V_le": 0, "i_le": 0}
    return {"p_le": ple.width, "V_le": ple.vocab_size or spec.vocab_size, "i_le": 1}


def _altup_laurel_values(spec: ModelSpec) -> dict[str, int]:
    """AltUp's copies n and LAuReL's rank r with their indicators (0 without them)."""
    altup, laurel = spec.altup, spec.laurel
    return {"n_au": altup.streams if altup is not None else 0, "i_au": int(altup is not None),
            "r_lr": laurel.rank if laurel is not None else 0, "i_lr": int(laurel is not None)}


def _zaya_values(spec: ModelSpec) -> dict[str, int]:
    """CCA's kernels, the MLP router's width and the residual scales' indicators (0 without
    them)."""
    cca, scales = spec.attention.cca, spec.residual_scales
    router = spec.moe.router_mlp if spec.moe is not None else None
    return {"i_cca": int(cca is not None), "k_ca": cca.kernel if cca else 0,
            "k_cb": cca.grouped_kernel if cca else 0,
            "i_rt": int(router is not None), "r_rt": router.width if router else 0,
            "i_rsc": int(scales is not None),
            "b_rsc": int(bool(scales and scales.residual_bias)),
            "i_rbr": int(bool(scales and scales.branch)),
            "i_rse": int(bool(scales and scales.embedding))}


def _drafter_values(spec: ModelSpec) -> dict[str, int]:
    """A drafter's target width D_tg and a centroid head's clusters C_cen, the rows it scores
    per token V_cen = top_k·V/C and its indicator (0 without them)."""
    drafter, head = spec.drafter, spec.centroid_head
    return {"D_tg": drafter.target_width if drafter else 0,
            "C_cen": head.n_centroids if head else 0,
            "V_cen": head.top_k * (spec.vocab_size // head.n_centroids) if head else 0,
            "i_cen": int(head is not None)}


def _indexer_values(spec: ModelSpec) -> dict[str, int]:
    """attention.indexer's sizes (DSA's, or MiniMax-M3's selecting blocks of B_I keys), its
    layers and indicator (0 without one), or DeepSeek-V4's CSA indexer's (on its L_csa
    layers), and V4's compression rates and layers (a model has one indexer or the other,
    calc.spec.attention). Only MiniMax-M3's, without MLA, has no head weights (i_hw = 0)."""
    compression = spec.attention.compression
    dsa = spec.attention.indexer
    indexer = dsa or (compression.indexer if compression else None)
    return {
        "h_I": indexer.n_heads if indexer else 0, "d_I": indexer.head_dim if indexer else 0,
        "K_I": indexer.topk if indexer else 1, "B_I": indexer.block_size if indexer else 1,
        "L_idx": spec.n_indexer_layers, "L_sel": spec.n_selecting_layers,
        "i_dsa": int(dsa is not None), "i_qsa": int(bool(dsa and dsa.pooled)),
        "i_hw": int(indexer is not None and (dsa is None or spec.attention.mla is not None)),
        "m_csa": compression.sparse_rate if compression else 1,
        "m_hca": compression.heavy_rate if compression else 1,
        "L_csa": spec.n_sparse_layers, "L_hca": spec.n_heavy_layers,
    }


def _block_residual_values(spec: ModelSpec) -> dict[str, int]:
    """Inkling 2's attention residuals over blocks: the learned queries, queries × sources over
    every mix, and the layers whose q, k, v read a mix each (calc.spec.residual)."""
    block = spec.block_residual
    if block is None:
        return {"N_brq": 0, "N_brs": 0, "L_brs": 0}
    mixes = block.sources(spec.n_layers, spec.attention_kinds)
    return {"N_brq": sum(q for q, _ in mixes), "N_brs": sum(q * s for q, s in mixes),
            "L_brs": sum(kind in block.split_kinds for kind in spec.attention_kinds)}


def _dynamic_mask_values(spec: ModelSpec) -> dict[str, int]:
    """Doge's dynamic mask: its indicator, dt_proj's bias and the keys a query keeps (1
    without one)."""
    mask = spec.attention.dynamic_mask
    return {"i_dm": int(mask is not None), "b_dm": int(bool(mask and mask.bias)),
            "K_dm": mask.keep if mask else 1}


def hyper_connection_values(spec: ModelSpec) -> dict[str, int]:
    """Hyper-connections' streams n_hc and indicators (0 without them)."""
    hc = spec.hyper_connections
    return {"n_hc": hc.streams if hc else 0, "i_hc": int(hc is not None),
            "i_hcm": int(bool(hc and hc.residual_mix)),
            "r_hc": (hc.gate_rank or 0) if hc else 0, "i_hg": int(bool(hc and hc.gate_rank))}


# The layer counts of the kind with head shapes of its own (kind_shape_values)
KIND_COUNTS = ("L_att2", "L_loc2", "L_chk2")


def kind_shape_values(spec: ModelSpec) -> dict[str, int]:
    """The L'_att layers of the kind with head shapes of its own (attention.kind_shapes), of
    them L'_loc local and L'_chk chunked, and their shapes h', h'_kv, d'_qk, d'_v: the
    model's own shapes, over no layer, without one; 1'_sink their sinks."""
    kind = spec.shaped_kind
    h2, kv2, d_qk2, d_v2 = spec.heads_of(kind or "")
    mla = spec.for_kind(kind or "").attention.mla  # a kind's own latent attention (dots3)
    layers = spec.shaped_layers
    shared, shared2, local, local2 = spec.kv_shared_counts
    return {"L_att2": layers, "L_loc2": layers * (kind == "local"),
            "L_chk2": layers * (kind == "chunked"),
            "h2": h2, "h_kv2": kv2, "d_qk2": d_qk2, "d_v2": d_v2,
            "r_q2": (mla.q_lora_rank or 0) if mla else 0, "r_kv2": mla.kv_lora_rank if mla else 0,
            "d_rope2": mla.qk_rope_head_dim if mla else 0,
            "i_kev": int(spec.attention.k_eq_v), "i_kev2": int(spec.keys_are_values(kind or "")),
            "L_kvs": shared, "L_kvs2": shared2, "L_kvsl": local, "L_kvsl2": local2,
            "L_dw": spec.double_wide_layers, "i_sink2": int(spec.sinks_of(kind or ""))}


@per_instance
def symbol_values(spec: ModelSpec) -> Mapping[str, int]:
    """The value of every architecture symbol (calc.symbols) for `spec`: computed once per spec
    and kept with it (calc.spec.base.per_instance), so read-only."""
    att, ffn, moe, norm = spec.attention, spec.ffn, spec.moe, spec.norm
    mla = att.mla
    qk_weights = att.qk_norm_weights
    return MappingProxyType({
        "V": spec.vocab_size, "V_o": spec.head_rows, "d": spec.d_model, "L": spec.n_layers,
        "h": att.n_heads, "h_kv": spec.n_kv_heads,
        "d_qk": spec.head_dim_qk, "d_v": spec.head_dim_v, "d_ff": ffn.d_ff if ffn else 0,
        "n_act": ffn.activation_params if ffn else 0,
        "P": spec.position_table, "n_norm": spec.norms_per_layer,
        **layer_count_values(spec), **kind_shape_values(spec),
        "w": att.sliding_window or 1, "c": att.chunk_size or 1,
        "E": moe.n_experts if moe else 0, "k": moe.experts_per_token if moe else 0,
        "E_0": moe.n_zero_experts if moe else 0,
        "d_e": moe.d_expert if moe else 0,
        "E_s": moe.n_shared_experts if moe else 0, "d_s": moe.shared_width if moe else 0,
        "r_q": ((mla.q_lora_rank or 0) if mla else 0) or att.q_lora_rank or 0,
        "r_kv": mla.kv_lora_rank if mla else 0,
        "g_o": att.output_groups.groups if att.output_groups else 1,  # a divisor (optimizer)
        "r_o": att.output_groups.rank if att.output_groups else 0,
        "i_og": int(att.output_groups is not None), "i_qw": int(att.q_norm_weights),
        "i_kv1": int(att.kv_cached_once),
        "d_rope": mla.qk_rope_head_dim if mla else 0, "M": spec.mtp_modules,
        "E_a": att.experts or 0, "i_moa": int(att.experts is not None),
        **_indexer_values(spec), **hyper_connection_values(spec),
        "b_moe": int(bool(moe and moe.output_bias)),
        "i_mn": int(bool(moe and moe.output_norm)),
        "i_bn": int(bool(moe and moe.branch_norms)),
        "i_rs": int(bool(moe and moe.router_scales)),
        **_per_layer_embedding_values(spec), **_altup_laurel_values(spec),
        **_drafter_values(spec), **_zaya_values(spec),
        "r_ng": norm.gate_rank or 0, "i_lg": int(bool(mla and mla.latent_gate)),
        "i_krn": int(bool(mla and mla.rope_key_norm)),
        "d_emb": spec.embedding_width, "i_proj": int(spec.embedding_width != spec.d_model),
        **_mixer_values(spec),
        "i_glu": int(bool(ffn and ffn.gated)), "i_mla": int(mla is not None),
        "i_qlora": int((mla is not None and mla.q_lora_rank is not None)
                       or att.q_lora_rank is not None),
        "i_tied": int(spec.tie_embeddings),
        "i_qk_head": int(att.qk_norm == "head" and qk_weights),
        "i_qk_proj": int(att.qk_norm == "projection" and qk_weights),
        "i_norm_emb": int(norm.embedding), "i_norm_final": int(norm.final),
        "i_shared_gate": int(bool(moe and moe.shared_expert_gate)),
        "i_moe": int(moe is not None), "i_rel": int(spec.position.kind == "relative"),
        "i_rope": int(spec.position.kind == "rope"),
        "i_sink": int(att.sinks), "i_skp": int(att.sink_proj),
        "i_qsc": int(att.query_scale),
        "i_rls": int(bool(att.relative_logits and att.relative_logits.scale)),
        "i_gate": int(att.output_gate),
        "i_diff": int(att.differential),
        "i_gh": int(att.output_gate_per == "head"), "i_sub": int(norm.sub_norms),
        "g_norm": int(norm.weights),
        "b_qkv": int(att.qkv_bias), "b_o": int(att.out_bias),
        "b_oL": int(att.last_layer_out_bias), "b_gh": int(att.output_gate_bias),
        "b_ff": int(bool(ffn and ffn.bias)),
        "b_norm": int(norm.has_bias), "b_lm": int(spec.lm_head_bias),
        "i_ph": int(spec.prediction_head is not None),
        "b_ph": int(bool(spec.prediction_head and spec.prediction_head.bias)),
        "i_n0": int(norm.first_mixer_norm),
        "n_pb": spec.position.bias_rows, "V_seg": spec.segment_embedding or 0,
        "i_ls": int(spec.loop is not None and spec.loop.init_state),
        "i_go": int(att.output_gate_own), "i_ng": int(spec.ngpt),
        "b_router": int(bool(moe and moe.router_bias)),
        **_dynamic_mask_values(spec),
        "i_pk": int(bool(moe and moe.product_keys)), "n_pk": moe.sub_keys if moe else 0,
        "d_rl": att.relative_logits.d_rel if att.relative_logits else 0,
        "E_rl": att.relative_logits.extent if att.relative_logits else 0,
        "k_rc": spec.residual_conv or 0,
        **_block_residual_values(spec),
        "H_rct": sum(spec.heads_of(kind)[1] for kind in spec.attention_kinds
                     if kind and kind in spec.residual_conv_taps),
        "i_srt": int(bool(moe and moe.shared_in_router)),
        "i_rgs": int(bool(moe and moe.router_global_scale)),
        "i_fos": int(bool(ffn and ffn.output_scale)),
    })


@dataclass(frozen=True)
class ParamCounts:
    """Exact parameter counts: per layer, per component (whole model) and the summary."""

    per_layer: dict[str, int]  # one attention layer's attention, and one layer's norms
    per_dense_ffn: dict[str, int]  # one dense layer's FFN
    per_moe_ffn: dict[str, int]  # one MoE layer's router, experts, shared experts
    per_mixer: dict[str, int]  # one Mamba, DeltaNet, lightning, RWKV, Griffin, short conv or
    # cross-attention mixer
    per_indexer: dict[str, int]  # one DSA indexer (on the attention layers that have one)
    components: dict[str, int]  # whole model, by component; sums to total
    total: int
    embedding: int
    non_embedding: int
    active: int
    mtp: int  # multi-token-prediction modules, not part of total


def stage_values(spec: ModelSpec, tp: int, pp: int, split_embedding_loss: bool = False,
                 dualpipe: bool = False) -> dict[str, int]:
    """What of `spec` the most loaded GPU holds (calc.formulas.memory): L_s = ⌈L/p⌉ layers of
    the first pipeline stage (the first stages take the remainder; ⌈(L+2)/p⌉ − 1 where the
    split counts the embedding and the loss as layers), how many of them have each mixer and
    FFN kind (L_sm MoE, L_s_att attention, ...), h_t = ⌈h_kv/t⌉ whole key/value heads on one
    tensor-parallel rank, and L_w, the layers whose parameters it holds: L_s, and under
    DualPipe the last stage's ⌊L/p⌋ (⌊(L+2)/p⌋ − 1) too."""
    layers = spec.n_layers
    split = split_embedding_loss and pp > 1
    first = -(-(layers + 2) // pp) - 1 if split else -(-layers // pp)
    last = (layers + 2) // pp - 1 if split else layers // pp
    mixers, ffns = spec.mixer_kinds[:first], spec.ffn_kinds[:first]
    return {"L_s": first, "L_sm": ffns.count("moe"), "L_s_dense": ffns.count("dense"),
            "L_s_att": sum(m in SELF_ATTENTION for m in mixers),
            "L_s_xa": mixers.count("cross_attention"),
            "L_s_ssm": sum("mamba" in m for m in mixers),
            "L_s_dn": mixers.count("deltanet"), "L_s_la": mixers.count("lightning"),
            "L_s_rw": mixers.count("rwkv"), "L_s_gr": mixers.count("griffin"),
            "L_s_ml": mixers.count("mlstm"),
            "L_s_sc": mixers.count("conv"),
            "L_s_sb": sum(i < first for i in spec.shared_block.layers)
            if spec.shared_block else 0,
            "h_t": -(-spec.n_kv_heads // tp), "L_w": first + last * dualpipe,
            "L_s_att2": spec.attention_kinds[:first].count(spec.shaped_kind or "-"),
            "L_s_sel": _stage_selecting(spec, first),
            **_stage_kv_shared(spec, first),
            "h_t2": -(-spec.heads_of(spec.shaped_kind or "")[1] // tp)}


def _stage_selecting(spec: ModelSpec, first: int) -> int:
    """Of the first stage's `first` layers, those that attend to the keys an indexer selects
    (spec.n_selecting_layers: the global ones but attention.indexer.dense_layers)."""
    indexer = spec.attention.indexer
    if indexer is None:
        return 0
    return sum(kind == "global" and i not in indexer.dense_layers
               for i, kind in enumerate(spec.attention_kinds[:first]))


def _stage_kv_shared(spec: ModelSpec, first: int) -> dict[str, int]:
    """Of the first stage's `first` layers, those that read an earlier layer's keys and values
    (attention.kv_shared_layers: the model's last), of them the shaped kind's, and the
    double-wide dense FFNs among them (ffn.double_wide)."""
    start = spec.n_layers - spec.attention.kv_shared_layers
    kinds = spec.attention_kinds[start:first]
    wide = spec.ffn_kinds[start:first].count("dense") if spec.double_wide_layers else 0
    return {"L_s_kvs": len(kinds), "L_s_kvs2": kinds.count(spec.shaped_kind or "-"),
            "L_s_dw": wide}


def layout_values(spec: ModelSpec, layout: Layout) -> dict[str, int | float]:
    """The layout's symbols (calc.formulas.memory): the most loaded GPU's share of `spec`
    (stage_values), the micro-batch and sequence, the parallel degrees and the 0/1 indicators
    of ZeRO's stages, the pipeline, sequence parallelism, dropout and what attention stores,
    and its framework's buffers (buffer_values)."""
    dualpipe = layout.pipeline_schedule == "dualpipe"
    stage = stage_values(spec, layout.tp, layout.pp, layout.split_embedding_loss, dualpipe)
    return {
        **stage, **buffer_values(layout, stage["L_s"]),
        "T": layout.seq_len, "b": layout.micro_batch,
        "n_tp": layout.tp, "n_pp": layout.pp, "n_dp": layout.dp, "n_cp": layout.cp,
        "n_ep": layout.ep, "n_vp": layout.vpp, "i_vp": int(layout.vpp > 1),
        "i_z1": int(layout.zero >= 1), "i_z2": int(layout.zero >= 2),
        "i_z3": int(layout.zero >= 3), "i_pp1": int(layout.pp == 1),
        "i_sp": int(layout.sequence_parallel), "i_drop": int(layout.dropout),
        "q_a": BYTES_PER_ELEMENT[layout.activation_dtype],
        "i_scores": int(not layout.flash_attention and layout.recompute == "none"),
        "i_full": int(layout.recompute == "full"),
        "i_rnu": int(layout.recompute_norm_up), "i_dual": int(dualpipe),
        "i_head": int(layout.pp == 1 or dualpipe),
        "i_hf": int(layout.framework == "hf"),
        "i_up": int(BYTES_PER_ELEMENT[layout.activation_dtype] < 4),
        "i_eager": int(not layout.flash_attention),
        "i_ao": int(layout.activation_offload), "u_ao": ACTIVATION_OFFLOAD_LAYERS,
    }


def buffer_values(layout: Layout, stage_layers: int) -> dict[str, int | float]:
    """The symbols of the transient buffers layout.framework allocates (calc.spec.memory.STACKS,
    calc.formulas.memory.BUFFERS): its gradient bucket, the layers ZeRO-3/FSDP gathers at once
    (the whole stage of `stage_layers` where the stack keeps a pipeline stage gathered), its
    prefetch and the bytes of a gathered layer's gradient."""
    from calc.spec.memory import STACKS

    stack = STACKS[layout.framework]
    gathered = (stage_layers if stack.gathered_stage and layout.pp > 1
                else stack.gathered_layers)
    return {"B_bk": stack.bucket_elements, "u_g": gathered, "P_pf": stack.prefetch_elements,
            "q_rg": stack.reduce_bytes}


def largest_parameter(spec: ModelSpec) -> int | None:
    """Elements of `spec`'s largest parameter tensor, each weight matrix a tensor of its own as
    torchtune's and transformers' Llama-style modules hold them (q, k, v, o, gate, up, down
    apart): the token embedding (V × d_emb; an untied head is as large), a learned position
    table, a projection between the embedding and model widths, per-layer embeddings' table and
    projection, AltUp's and LAuReL's matrices, and one layer's attention and FFN matrices.
    None where the tensors depend on how a stack stores them (a mixture of experts, which
    transformers 5 fuses into one tensor per layer; MLA; attention experts; DSA's indexer;
    Mamba, DeltaNet and convolution mixers): calc.plan refuses those."""
    s = symbol_values(spec)
    if (s["i_moe"] or s["i_mla"] or s["i_moa"] or s["i_dsa"]
            or set(spec.mixer_kinds) - {"attention"}):
        return None
    d = s["d"]
    # the attention matrices of the model's head shape and of a kind's own (kind_shapes; the
    # model's again without one)
    attention = [size for heads, kv, d_qk, d_v in (
        (s["h"], s["h_kv"], s["d_qk"], s["d_v"]), (s["h2"], s["h_kv2"], s["d_qk2"], s["d_v2"]))
        for size in (d * heads * d_qk, d * kv * max(d_qk, d_v), heads * d_v * d,
                     d * (1 if s["i_gh"] else d_v) * heads * s["i_gate"])]
    # a hyper-connection map's weight: (2n [+ n²]) × n·d (HYV4HyperConnection.fn); the gated
    # form's largest, its inject n × n·d or its gate's r × n·d (Qwen4ExpTextGatedResidual)
    streams = s["n_hc"]
    hc = max((2 - s["i_hg"]) * streams + s["i_hcm"] * streams**2, s["r_hc"]) * streams * d
    # per-layer embeddings: the table V_le × L·p and the projection d × L·p (Gemma4TextModel)
    ple = s["L"] * s["p_le"]
    # AltUp's projections d × d and prediction coefficients n × n², LAuReL's d × r (Gemma 3n)
    gemma3n = (s["i_au"] * d * d, s["n_au"] ** 3, d * s["n_au"], d * s["r_lr"])
    return max(s["V"] * s["d_emb"], s["P"] * d, s["i_proj"] * s["d_emb"] * d, *attention,
               d * s["d_ff"] * int(bool(s["L_dense"])), hc, s["V_le"] * ple, d * ple, *gemma3n)


def memory_values(spec: ModelSpec, options: TrainingMemory, gpu_memory_gib: float = 0,
                  finetune: FineTune | None = None,
                  targets: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every symbol calc.formulas.memory (and .finetune, .precision, .offload) uses, for `spec`
    trained with resolved `options` (seq_len given), fully or as `finetune` with adapters on
    `targets`, on a GPU of `gpu_memory_gib`: the model's, the model states' (recipe,
    optimizer, GEMM precision) and the layout's (layout_values)."""
    from calc.spec.memory import EMA_BYTES, OPTIMIZERS, RECIPES

    counts = count_params(spec)
    finetune = finetune or FineTune()
    recipe = RECIPES[options.recipe_name]
    optimizer = OPTIMIZERS[options.optimizer_kept(finetune.frozen_base)]
    values = {
        **finetune_values(finetune, targets, recipe.weights, options.stack, options.seq_len),
        **gemm_values(options.precision, BYTES_PER_ELEMENT[options.activation_dtype]),
        **symbol_values(spec.executed), **layout_values(spec.executed, options),
        **loop_weight_values(spec, options.pp, finetune.frozen_base),
        "N": counts.total, "N_emb": counts.embedding, "N_head": counts.components["lm_head"],
        "N_e": counts.components["moe/experts"],
        "q_w": recipe.weights, "q_g": recipe.gradients, "q_gc": recipe.gradient_copy,
        "q_m": recipe.master, "q_o": optimizer.state_bytes, "M_gib": gpu_memory_gib,
        "N_mtp": counts.mtp, "N_mtp_e": spec.mtp_modules * counts.per_moe_ffn["moe/experts"],
        "i_mtps": int(options.mtp_shared_embedding),
        "q_ema": EMA_BYTES if options.ema == "device" else 0,
        "i_oib": int(options.optimizer_in_backward),
        "N_big": (largest_parameter(spec) or 0) if options.optimizer_in_backward else 0,
    }
    if optimizer.shaped:  # bytes per trained parameter from the shapes (calc.formulas.optimizer)
        frozen = finetune.frozen_base
        key = optimizer.shaped + ("_adapters" if frozen else "")
        trained = _compiled.finetune_counts(values)["adapters"] if frozen else counts.total
        # the states of the stored weights (a looped model's once per stored layer)
        states = _compiled.optimizer_states({**values, **symbol_values(spec)})
        values["q_o"] = states[key] / trained
    return values


def count_params(spec: ModelSpec, symbols: Mapping[str, int] | None = None) -> ParamCounts:
    """The exact parameter counts of `spec`: computed once per spec and kept with it (read-only);
    `symbols` in place of symbol_values(spec) counts those instead, and keeps nothing."""
    return _param_counts(spec) if symbols is None else _counted(symbols)


@per_instance
def _param_counts(spec: ModelSpec) -> ParamCounts:
    return _counted(symbol_values(spec))


def _counted(s: Mapping[str, int]) -> ParamCounts:
    summary = _compiled.params_summary(s)
    return ParamCounts(
        per_layer=_compiled.params_per_layer(s),
        per_dense_ffn=_compiled.params_dense_ffn(s),
        per_moe_ffn=_compiled.params_moe_ffn(s),
        per_mixer={**_compiled.params_mamba(s), **_compiled.params_deltanet(s),
                   **_compiled.params_lightning(s), **_compiled.params_rwkv(s),
                   **_compiled.params_griffin(s), **_compiled.params_mlstm(s),
                   **_compiled.params_short_conv(s), **_compiled.params_cross_attention(s)},
        per_indexer=_compiled.params_indexer(s),
        components=_compiled.params_components(s),
        **summary,
    )


def _exact(numerator: int, denominator: int) -> int | float:
    """numerator / denominator: an int when it divides, else the nearest float (Python's int
    division rounds correctly, as float(Fraction(...)) does, without building a Fraction)."""
    whole, rest = divmod(numerator, denominator)
    return whole if rest == 0 else numerator / denominator


@dataclass(frozen=True)
class FlopCounts:
    """FLOPs per token at sequence length `seq_len` under an attention convention."""

    seq_len: int
    attention: str  # "causal" | "full"
    components: dict[str, int | float]  # forward FLOPs per token by component
    attention_per_sequence: int  # QKᵀ and A·V over one whole sequence, all layers
    forward: int | float  # per token, the sum of the components
    inference_per_token: int  # one generated token at context seq_len (KV cache)

    @property
    def backward(self) -> int | float:
        return BACKWARD_PER_FORWARD * self.forward

    @property
    def train(self) -> int | float:
        return TRAIN_PER_FORWARD * self.forward

    @property
    def attention_share(self) -> float:
        return float(self.components["attention/scores"] / self.forward)


def count_flops(spec: ModelSpec, seq_len: int, attention: str = "causal") -> FlopCounts:
    """FLOPs per token of `spec` at `seq_len` under `attention` ("causal" | "full"), kept with
    the spec per (seq_len, attention): read-only."""
    return _flop_counts(spec.executed, int(seq_len), attention)


@per_instance_keyed
def _flop_counts(spec: ModelSpec, seq_len: int, attention: str) -> FlopCounts:
    s = {**symbol_values(spec), "T": seq_len, "i_causal": int(attention == "causal")}
    flops = _compiled.flops(s)
    per_sequence = flops["attention_per_sequence"]
    image_kv, cross = flops["image_kv_per_sequence"], flops["cross_scores_per_sequence"]
    weights = flops["weights_per_token"]
    components = {}
    for key, value in _compiled.flops_forward_components(s).items():
        components[key] = value
        if key == "attention/o":  # QKᵀ and A·V sit between the projections
            components["attention/scores"] = _exact(per_sequence - image_kv - cross, seq_len)
        if key == "cross_attention/q":  # the image tokens' W_K and W_V, shared by the sequence,
            # then the text's queries against them
            components["cross_attention/kv"] = _exact(image_kv, seq_len)
            components["cross_attention/scores"] = _exact(cross, seq_len)
    return FlopCounts(
        seq_len=seq_len,
        attention=attention,
        components=components,
        attention_per_sequence=per_sequence,
        forward=_exact(weights * seq_len + per_sequence, seq_len),
        inference_per_token=weights + flops["inference_attention_per_token"],
    )


def kind_scores(spec: ModelSpec, seq_len: int, attention: str = "causal") -> int | float:
    """QKᵀ and A·V per token at `seq_len` in the layers of the kind with head shapes of its
    own (attention.kind_shapes), of count_flops' attention/scores: all of it less what the
    other layers score (the same count with that kind's heads h' = 0); 0 without one."""
    if spec.shaped_kind is None:
        return 0
    s = {**symbol_values(spec.executed), "T": seq_len, "i_causal": int(attention == "causal")}
    total = _compiled.flops(s)["attention_per_sequence"]
    others = _compiled.flops({**s, "h2": 0})["attention_per_sequence"]
    return _exact(total - others, seq_len)


def rule_flops(spec: ModelSpec, seq_len: int) -> dict[str, float]:
    """Training FLOPs per token under each published rule (calc.formulas.rules), kept with the
    spec per seq_len: read-only."""
    return _rule_flops(spec.executed, int(seq_len))


@per_instance_keyed
def _rule_flops(spec: ModelSpec, seq_len: int) -> dict[str, float]:
    s = {**symbol_values(spec), "T": seq_len}
    return {key: float(value) for key, value in _compiled.rules_train_per_token(s).items()}


@dataclass(frozen=True)
class TrainingCost:
    flops: float
    gpu_hours: float | None  # None without a GPU peak
    days: float | None


def training_cost(train_per_token: float, tokens: float, peak_flops: float | None,
                  mfu: float, gpus: int) -> TrainingCost:
    """Training FLOPs, GPU-hours and days on `gpus` GPUs (calc.formulas.training)."""
    s = {"F": train_per_token, "D": float(tokens), "R": peak_flops or 1.0, "u": mfu, "K": gpus}
    cost = _compiled.training(s)
    if peak_flops is None:
        return TrainingCost(flops=float(cost["flops"]), gpu_hours=None, days=None)
    return TrainingCost(float(cost["flops"]), float(cost["gpu_hours"]), float(cost["days"]))


# ---- fine-tuning (calc.formulas.finetune) ------------------------------------------------------
@dataclass(frozen=True)
class AdapterCounts:
    """Exact parameter counts of a fine-tuning setup (LoRA adapters on a frozen base)."""

    targets: tuple[str, ...]  # resolved against the model ('all-linear' expanded)
    by_target: dict[str, int]  # 'lora/q', ... (non-zero)
    adapters: int
    adapters_active: int  # adapter parameters one token runs through (top-k experts)
    trainable: int
    frozen: int
    quantised: int  # frozen projections stored in 4 bits (QLoRA), else 0


def finetune_values(finetune: FineTune, targets: tuple[str, ...], weight_bytes: float,
                    stack: StackMemory | None = None,
                    seq_len: int | None = None) -> dict[str, int | float]:
    """The fine-tuning symbols (calc.symbols, kind 'finetune'): full training sets no adapter,
    nothing frozen and every projection input kept. `weight_bytes` is q_w, a 16-bit frozen
    weight under LoRA; `stack` whether the framework keeps the adapters in fp32 (i_fa) and its
    own 4-bit path under QLoRA (its head stored in
    4 bits, every 4-bit projection's input kept, the dequantised copies:
    calc.spec.memory.StackMemory), None: the projections' alone, inputs kept as torch keeps
    them; `seq_len` the sequence a chunked loss's gradient is a share of
    (calc.spec.finetune.loss_gradient_bytes)."""
    frozen, on = finetune.frozen_base, set(targets)
    quant = finetune.quant()
    own = stack if stack is not None and quant else None
    kept_4bit = bool(own and own.quantised_inputs_kept)

    def kept(*names: str) -> int:  # an input is stored when its weight or an adapter trains
        return int(not frozen or kept_4bit or bool(on.intersection(names)))

    return {
        "r_a": finetune.rank if frozen else 0,
        **{f"a_{target}": int(target in on) for target in LORA_TARGETS},
        "i_frozen": int(frozen),
        "i_fa": int(frozen and stack is not None and stack.fp32_adapters),
        "q_f": float(quant.bytes_per_weight(finetune.double_quant)) if quant else weight_bytes,
        "i_keep_qkv": kept("q", "k", "v", "g"), "i_keep_o": kept("o"),
        "i_keep_up": kept("up", "gate", "experts", "shared_expert_gate"),
        "i_keep_down": kept("down"), "i_keep_exp": kept("experts"),
        "i_keep_mix": kept(*MIXER_INPUT_TARGETS),
        "i_keep_head": int(not frozen or kept_4bit),
        "i_qh": int(bool(own and own.quantised_head)),
        "q_dq": own.dequantised_bytes if own else 0,
        "q_L": LOSS_BYTES[finetune.loss], "q_Lg": loss_gradient_bytes(finetune.loss, seq_len),
    }


def count_adapters(spec: ModelSpec, finetune: FineTune) -> AdapterCounts:
    """Trainable and frozen parameters of `spec` fine-tuned as `finetune` (checked targets)."""
    targets = resolve_targets(spec, finetune)
    total = count_params(spec).total
    s = {**symbol_values(spec), "N": total, **finetune_values(finetune, targets, 0)}
    counts = _compiled.finetune_counts(s)
    by_target = {key: value for key, value in counts.items()
                 if key.startswith("lora/") and value}
    adapters = counts["adapters"] if finetune.frozen_base else 0
    return AdapterCounts(
        targets=targets, by_target=by_target, adapters=adapters,
        adapters_active=counts["adapters_active"] if finetune.frozen_base else 0,
        trainable=adapters if finetune.frozen_base else total,
        frozen=total if finetune.frozen_base else 0,
        quantised=counts["quantised"] if finetune.method == "qlora" else 0)


def finetune_train_flops(spec: ModelSpec, seq_len: int, attention: str, finetune: FineTune,
                         targets: tuple[str, ...]) -> tuple[int | float, int | float]:
    """(adapters' forward FLOPs per token, a training step's FLOPs per token) on a frozen base;
    full training gives (0, 3 × forward)."""
    s = {**symbol_values(spec.executed), "T": seq_len, "i_causal": int(attention == "causal"),
         **finetune_values(finetune, targets, 0)}
    result = _compiled.finetune_flops(s)
    return result["adapter_forward_per_token"], _exact(result["train_per_sequence"], seq_len)


def gemm_values(precision: str, activation_bytes: float) -> dict[str, float]:
    """q_l, q_lo, i_swr and q_8 (calc.symbols) of a GEMM precision recipe
    (calc.spec.gemm_precision)."""
    info = GEMM_PRECISIONS[precision]
    low = float(info.element_bytes) if info.peak else activation_bytes
    output = info.attention_output_bytes
    return {"q_l": low, "q_lo": low if output is None else float(output),
            "i_swr": int(info.swiglu_recomputed), "q_8": float(info.weight_copy_bytes)}


def low_precision_train_flops(spec: ModelSpec, finetune: FineTune,
                              targets: tuple[str, ...]) -> int:
    """Training FLOPs per token of the projections' GEMMs (calc.formulas.precision)."""
    s = {**symbol_values(spec.executed), **finetune_values(finetune, targets, 0)}
    return _compiled.precision(s)["low_precision_train"]


def effective_peak(train: float, low_precision: float, peak: float, low_peak: float) -> float:
    """The peak a step sees when `low_precision` of its `train` FLOPs run at `low_peak`."""
    s = {"F": train, "F_8": low_precision, "R": peak, "R_8": low_peak}
    return float(_compiled.precision_time(s)["effective_peak"])


def run_cost(gpu_hours: float, price: float | None, tdp_w: float | None, pue: float,
             grid_intensity: float | None) -> dict[str, float | None]:
    """Money, energy (kWh) and emissions (kg CO2e) of `gpu_hours` (calc.formulas.cost); None
    where its input is missing."""
    s = {"H": gpu_hours, "c_h": price or 0.0, "W_gpu": tdp_w or 0.0, "PUE": pue,
         "I_grid": grid_intensity or 0.0}
    result = _compiled.cost(s)
    return {"cost": float(result["cost"]) if price is not None else None,
            "energy_kwh": float(result["energy_kwh"]) if tdp_w is not None else None,
            "co2e_kg": (float(result["co2e_kg"])
                        if tdp_w is not None and grid_intensity is not None else None)}

"""Every sympy symbol calc's formulas use, defined once, in paper notation, with its LaTeX name.

Sizes follow Vaswani et al. 2017 (d for d_model, h heads of d_h = d_k) and Kaplan et al. 2020
Table 1 (L for n_layer, T for n_ctx, V for n_vocab).
Structure enters the formulas as 0/1 indicator symbols (`i_*` for a part being present, `b_*` for
a bias), so one expression covers every architecture and one compiled function can evaluate
millions of mixed configurations at once (calc.sweeps.vectorise).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from calc.counting import TOKENS_PER_PARAMETER


@dataclass(frozen=True)
class SymbolInfo:
    name: str  # Python identifier, also the key in a values mapping
    latex: str
    meaning: str
    kind: str  # "size", "indicator", "workload", "memory", "finetune", "inference", "scaling"


_TABLE: tuple[SymbolInfo, ...] = (
    # sizes
    SymbolInfo("V", "V", "vocabulary size: rows of the token embedding", "size"),
    SymbolInfo("V_o", "V_{o}", "rows of the LM head, logits per token (V unless the head is "
               "narrower: output_vocab_size)", "size"),
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
    SymbolInfo("k", "k", "routed FFN experts per token (top-k; with zero-computation experts "
                         "the expected top-k·E/(E + E_0))", "size"),
    SymbolInfo("E_0", "E_{0}", "zero-computation (identity) experts per MoE layer", "size"),
    SymbolInfo("d_e", "d_{e}", "hidden width of one routed expert", "size"),
    SymbolInfo("E_s", "E_{s}", "shared experts per MoE layer", "size"),
    SymbolInfo("p_le", "p_{le}", "width of each layer's per-layer embedding (0 without them; "
               "Gemma 4's hidden_size_per_layer_input)", "size"),
    SymbolInfo("V_le", "V_{le}", "rows of the per-layer embedding table "
               "(vocab_size_per_layer_input)", "size"),
    SymbolInfo("n_au", "n_{au}", "AltUp's copies of the residual stream (0 without AltUp; "
               "Gemma 3n's altup_num_inputs)", "size"),
    SymbolInfo("r_lr", "r_{lr}", "rank of LAuReL's low-rank residual (0 without; Gemma 3n's "
               "laurel_rank)", "size"),
    SymbolInfo("k_ca", "k_{a}", "kernel of CCA's depthwise conv over the queries and keys "
               "(0 without CCA; ZAYA1's cca_time0)", "size"),
    SymbolInfo("k_cb", "k_{b}", "kernel of CCA's grouped conv over the queries and keys (0 "
               "without CCA; ZAYA1's cca_time1)", "size"),
    SymbolInfo("r_rt", "r_{rt}", "width of ZAYA1's MLP router (0 without one; "
               "router_hidden_size)", "size"),
    SymbolInfo("D_tg", "D_{tg}", "hidden width of the target model a drafter reads (0 without "
               "a drafter; Gemma 4's backbone_hidden_size)", "size"),
    SymbolInfo("C_cen", "C_{cen}", "clusters of a centroid head (0 without one; num_centroids)",
               "size"),
    SymbolInfo("V_cen", "V_{cen}", "head rows a centroid head scores per token: top_k·V/C (0 "
               "without one)", "size"),
    SymbolInfo("d_s", "d_{s}", "hidden width of one shared expert", "size"),
    SymbolInfo("r_q", "r_{q}", "query low rank (MLA's, or attention.q_lora_rank)", "size"),
    SymbolInfo("g_o", "g_{o}", "groups of the grouped output projection", "size"),
    SymbolInfo("r_o", "r_{o}", "each output group's projected width", "size"),
    SymbolInfo("r_kv", "r_{kv}", "MLA key/value latent rank", "size"),
    SymbolInfo("r_ng", "r_{norm\\,gate}", "rank of the low-rank sigmoid gate on the mixer's "
               "pre-norm and the MoE layers' FFN pre-norm (A.X-K2's gated_norm_rank; 0 without)",
               "size"),
    SymbolInfo("d_rope", "d_{rope}", "MLA RoPE part of d_qk (its key part shared by heads)",
               "size"),
    SymbolInfo("M", "M", "multi-token-prediction modules (counted apart)", "size"),
    SymbolInfo("E_a", "E_{a}", "attention experts of a mixture of attention heads (JetMoE; 0 "
               "without)", "size"),
    SymbolInfo("h_I", "h_{I}", "DSA or CSA indexer heads (index_n_heads)", "size"),
    SymbolInfo("d_I", "d_{I}", "DSA or CSA indexer query/key width per head (index_head_dim)",
               "size"),
    SymbolInfo("K_I", "K_{I}", "DSA or CSA: keys each query attends to (index_topk); "
               "MiniMax-M3: blocks of B_I keys (index_topk_blocks)", "size"),
    SymbolInfo("B_I", "B_{I}", "keys of a block the indexer selects whole (MiniMax-M3's "
               "index_block_size; 1 for DSA and CSA, which select keys)", "size"),
    SymbolInfo("K_dm", "K_{dm}", "Doge's dynamic mask: keys each query attends to "
               "(keep_window_size; 1 without)", "size"),
    SymbolInfo("n_pk", "n_{pk}", "product-key routing: sub-keys of each half, ⌊√E⌋ (0 "
               "without: moe.product_keys)", "size"),
    SymbolInfo("m_csa", "m", "DeepSeek-V4 CSA: tokens pooled into one compressed entry "
               "(compress_rates; 1 without)", "size"),
    SymbolInfo("m_hca", "m'", "DeepSeek-V4 HCA: tokens pooled into one compressed entry "
               "(compress_rates; 1 without)", "size"),
    SymbolInfo("L_csa", "L_{csa}", "sliding layers with compressed sparse attention (CSA)",
               "size"),
    SymbolInfo("L_hca", "L_{hca}", "sliding layers with heavily compressed attention (HCA)",
               "size"),
    SymbolInfo("n_hc", "n_{hc}", "hyper-connections: residual streams (hc_mult; 0 without)",
               "size"),
    SymbolInfo("r_hc", "r_{hc}", "hyper-connections: rank of the gated maps' low-rank gate "
               "(Qwen4-Exp's hc_lowrank; 0 without)", "size"),
    # layers of each kind (calc.spec.layers): mixers, attention kinds, FFNs
    SymbolInfo("L_idx", "L_{idx}", "attention layers with a DSA indexer of their own", "size"),
    SymbolInfo("L_sel", "L_{sel}", "attention layers that attend to the keys an indexer "
               "selects (attention.indexer: the global ones but its dense_layers)", "size"),
    SymbolInfo("L_att", "L_{att}", "layers with attention (all of them in a Transformer)",
               "size"),
    SymbolInfo("L_chk", "L_{chk}", "layers with chunked attention", "size"),
    SymbolInfo("L_dense", "L_{dense}", "layers with a dense FFN", "size"),
    SymbolInfo("L_ssm", "L_{ssm}", "layers with a Mamba mixer", "size"),
    SymbolInfo("L_dn", "L_{dn}", "layers with a gated DeltaNet mixer", "size"),
    SymbolInfo("L_la", "L_{la}", "layers with a lightning-attention mixer", "size"),
    SymbolInfo("L_rw", "L_{rw}", "layers with RWKV's time-mix (and channel-mix)", "size"),
    SymbolInfo("L_gr", "L_{gr}", "layers with Griffin's recurrent block (RG-LRU)", "size"),
    SymbolInfo("L_ml", "L_{ml}", "layers with xLSTM's mLSTM mixer", "size"),
    SymbolInfo("L_sc", "L_{sc}", "layers with a short-convolution mixer", "size"),
    SymbolInfo("L_xa", "L_{xa}", "layers with cross-attention to image tokens in place of "
               "self-attention (Llama 3.2 Vision)", "size"),
    SymbolInfo("T_img", "T_{img}", "cross-attention: image tokens per sequence "
               "(cross_attention.image_tokens; 0 text only)", "size"),
    SymbolInfo("L_sb", "L_{sb}", "depths the shared block runs at (shared_block.layers)",
               "size"),
    SymbolInfo("M_sb", "M_{sb}", "weight sets of the shared block (Zamba2's num_mem_blocks; 0 "
               "without one)", "size"),
    SymbolInfo("r_sb", "r_{sb}", "rank of the shared block's adapters of each depth (0 "
               "without them)", "size"),
    SymbolInfo("c", "c", "chunked attention: tokens per chunk", "size"),
    # the attention layers of one kind with head shapes of their own (attention.kind_shapes);
    # without them h' = h, h'_kv = h_kv, d'_qk = d_qk, d'_v = d_v, 1'_sink = 1_sink and
    # L'_att = 0
    SymbolInfo("L_att2", "L'_{att}", "attention layers of the kind with head shapes of its "
               "own (of the L_att)", "size"),
    SymbolInfo("L_loc2", "L'_{loc}", "of those, local (sliding-window) layers (of the L_loc)",
               "size"),
    SymbolInfo("L_chk2", "L'_{chk}", "of those, chunked layers (of the L_chk)", "size"),
    SymbolInfo("h2", "h'", "query heads of the L'_att layers", "size"),
    SymbolInfo("h_kv2", "h'_{kv}", "key/value heads of the L'_att layers", "size"),
    SymbolInfo("d_qk2", "d'_{qk}", "query/key width per head of the L'_att layers", "size"),
    SymbolInfo("d_v2", "d'_{v}", "value width per head of the L'_att layers", "size"),
    SymbolInfo("r_q2", "r'_{q}", "MLA query low rank of the L'_att layers", "size"),
    SymbolInfo("r_kv2", "r'_{kv}", "MLA key/value latent rank of the L'_att layers", "size"),
    SymbolInfo("d_rope2", "d'_{rope}", "MLA RoPE part of d'_qk of the L'_att layers", "size"),
    # attention layers without keys and values of their own (attention.kv_shared_layers), the
    # keys used as values (attention.k_eq_v) and the FFNs twice as wide (ffn.double_wide)
    SymbolInfo("L_kvs", "L_{kvs}", "attention layers that read an earlier layer's keys and "
               "values (no W_K, W_V or key norm)", "size"),
    SymbolInfo("L_kvs2", "L'_{kvs}", "of those, layers of the kind with head shapes of its "
               "own (of the L'_att)", "size"),
    SymbolInfo("L_kvsl", "L_{kvs,loc}", "of the L_kvs layers, local (sliding-window) ones",
               "size"),
    SymbolInfo("L_kvsl2", "L'_{kvs,loc}", "of the L'_kvs layers, local ones", "size"),
    SymbolInfo("L_dw", "L_{dw}", "dense FFN layers 2·d_ff wide (the L_kvs layers' with "
               "ffn.double_wide)", "size"),
    SymbolInfo("d_rl", "d_{rel}", "relative states per query head of the projected "
               "relative-position bias (attention.relative_logits; 0 without it)", "size"),
    SymbolInfo("E_rl", "E_{rel}", "backward distances of the relative-position bias on the "
               "layers that do not slide (its bank's columns; w on sliding ones)", "size"),
    SymbolInfo("k_rc", "k_{rc}", "kernel of the residual short convolutions (residual_conv; "
               "0 without them)", "size"),
    SymbolInfo("N_brq", "N_{brq}", "learned queries of the attention residuals over blocks "
               "(block_residual; 0 without them)", "size"),
    SymbolInfo("N_brs", "N_{brs}", "queries × sources summed over the mixes of the attention "
               "residuals over blocks (block_residual; 0 without them)", "size"),
    SymbolInfo("L_brs", "L_{brs}", "layers whose queries, keys and values read a mix and a "
               "norm each (block_residual.split_kinds)", "size"),
    SymbolInfo("H_rct", "H_{rct}", "key/value heads summed over the layers whose residual "
               "convolutions add per-token taps (residual_conv_taps; 0 without them)", "size"),
    SymbolInfo("i_srt", r"\mathbb{1}_{shared\,routed}", "the router scores the shared experts "
               "beside the routed ones (E + E_s rows)", "indicator"),
    SymbolInfo("i_rgs", r"\mathbb{1}_{router\,scale}", "one learned scalar on the routing "
               "weights", "indicator"),
    SymbolInfo("i_fos", r"\mathbb{1}_{ffn\,scale}", "one learned scalar on a dense FFN's "
               "output", "indicator"),
    SymbolInfo("i_sink2", r"\mathbb{1}'_{sink}", "a learned sink logit per head on the "
               "L'_att layers (MiMo-V2-Flash: its sliding ones only)", "indicator"),
    SymbolInfo("d_emb", "d_{emb}", "width of the token embedding and LM head (d unless "
               "projected)", "size"),
    SymbolInfo("d_in", "d_{in}", "Mamba: channels of the scan (expand × d)", "size"),
    SymbolInfo("N_s", "N_{s}", "Mamba: state size per channel", "size"),
    SymbolInfo("k_s", "k_{s}", "Mamba: conv1d kernel", "size"),
    SymbolInfo("R_dt", r"R_{\Delta}", "Mamba: rank of Δ's projection", "size"),
    SymbolInfo("H_s", "H_{s}", "Mamba-2: heads", "size"),
    SymbolInfo("G_s", "G_{s}", "Mamba-2: groups sharing B and C", "size"),
    SymbolInfo("H_k", "H_{k}", "gated DeltaNet: query/key heads", "size"),
    SymbolInfo("H_v", "H_{v}", "gated DeltaNet: value heads (one state each)", "size"),
    SymbolInfo("d_lk", "d_{k}", "gated DeltaNet: query/key width per head", "size"),
    SymbolInfo("d_lv", "d_{v}^{lin}", "gated DeltaNet: value width per head", "size"),
    SymbolInfo("k_dn", "k_{dn}", "gated DeltaNet: conv1d kernel", "size"),
    SymbolInfo("r_g", "r_{g}", "gated DeltaNet, channel gate: rank of the low-rank gates "
               "(Kimi Delta Attention)", "size"),
    SymbolInfo("H_la", "H_{la}", "lightning attention: heads (one d_la × d_la state each)",
               "size"),
    SymbolInfo("d_la", "d_{la}", "lightning attention: width of q, k and v per head", "size"),
    SymbolInfo("d_rw", "d_{rw}", "RWKV: channels of key, value, receptance and the WKV state "
               "(attention_hidden_size)", "size"),
    SymbolInfo("d_gr", "d_{gr}", "Griffin: channels of the branches, the conv and the RG-LRU "
               "(lru_width)", "size"),
    SymbolInfo("w_gr", "w_{gr}", "Griffin: width of each block of the block-diagonal input and "
               "recurrence gates (d_gr / blocks)", "size"),
    SymbolInfo("k_gr", "k_{gr}", "Griffin: kernel of the temporal conv1d", "size"),
    SymbolInfo("H_ml", "H_{ml}", "mLSTM: heads of the matrix memory", "size"),
    SymbolInfo("d_mk", "d_{mk}", "mLSTM: width of q and k per head", "size"),
    SymbolInfo("d_mv", "d_{mv}", "mLSTM: width of v and of the memory's readout per head", "size"),
    SymbolInfo("k_sc", "k_{sc}", "short convolution: kernel", "size"),
    SymbolInfo("n_act", "n_{act}", "learned parameters of a dense FFN's activation (xIELU: "
               "α_p, α_n; 0 for the others)", "size"),
    # structure indicators (0 or 1)
    SymbolInfo("i_glu", r"\mathbb{1}_{glu}", "gated FFN (SwiGLU/GeGLU/ReGLU): 3 matrices",
               "indicator"),
    SymbolInfo("i_mla", r"\mathbb{1}_{mla}", "multi-head latent attention", "indicator"),
    SymbolInfo("i_qlora", r"\mathbb{1}_{q\,lora}", "queries through rank r_q", "indicator"),
    SymbolInfo("i_og", r"\mathbb{1}_{og}", "W_O a grouped low-rank projection", "indicator"),
    SymbolInfo("i_qw", r"\mathbb{1}_{qw}", "the per-head query norm carries γ", "indicator"),
    SymbolInfo("i_kv1", r"\mathbb{1}_{kv1}", "the cache keeps keys that are the values once",
               "indicator"),
    SymbolInfo("i_krn", r"\mathbb{1}_{k\,rope\,norm}", "a norm over MLA's shared RoPE key "
               "(dots3's k_rope_only_layernorm)", "indicator"),
    SymbolInfo("i_lg", r"\mathbb{1}_{latent\,gate}", "MLA's queries and output gate projected "
               "together from the query latent before and after its norm, 2·r_q wide (A.X-K2's "
               "q_gate_proj)", "indicator"),
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
    SymbolInfo("i_rope", r"\mathbb{1}_{rope}", "rotary position embeddings (RoPE)",
               "indicator"),
    SymbolInfo("i_sba", r"\mathbb{1}_{sb\,att}", "the shared block's adapters of each depth "
               "on W_Q, W_K and W_V too", "indicator"),
    SymbolInfo("i_sink", r"\mathbb{1}_{sink}", "a learned sink logit per head", "indicator"),
    SymbolInfo("i_skp", r"\mathbb{1}_{skp}", "the sink logits projected from each token, "
               "sink_proj d → h (attention.sink_proj)", "indicator"),
    SymbolInfo("i_qsc", r"\mathbb{1}_{qsc}", "a learned scale per query channel "
               "(attention.query_scale)", "indicator"),
    SymbolInfo("i_rls", r"\mathbb{1}_{rls}", "a learned scale per head and relative state "
               "(attention.relative_logits.scale)", "indicator"),
    SymbolInfo("i_hc", r"\mathbb{1}_{hc}", "hyper-connections: n_hc residual streams mixed by "
               "learned maps", "indicator"),
    SymbolInfo("i_hcm", r"\mathbb{1}_{hcm}", "hyper-connections: each map also mixes the "
               "streams by an n_hc × n_hc matrix (DeepSeek-V4's mHC)", "indicator"),
    SymbolInfo("i_qsa", r"\mathbb{1}_{qsa}", "the indexer scores complete blocks by their "
               "mean-pooled keys and a query attends to its top K_I of them plus its visible "
               "keys past them (Qwen4-Exp's QSA)", "indicator"),
    SymbolInfo("i_hg", r"\mathbb{1}_{hg}", "hyper-connections: the gated low-rank maps "
               "(Qwen4-Exp), whose grouped norms replace the layers' norms", "indicator"),
    SymbolInfo("i_kev", r"\mathbb{1}_{k=v}", "the keys are the values (no W_V)", "indicator"),
    SymbolInfo("i_kev2", r"\mathbb{1}'_{k=v}", "the L'_att layers' keys are their values",
               "indicator"),
    SymbolInfo("i_diff", r"\mathbb{1}_{diff}", "differential attention: each softmax map "
               "weighs 2·d_v-wide values (DIFF Transformer)", "indicator"),
    SymbolInfo("i_gate", r"\mathbb{1}_{gate}", "an output gate on each head (Qwen3-Next)",
               "indicator"),
    SymbolInfo("i_gh", r"\mathbb{1}_{gate\,head}",
               "the output gate is one value per head (LFM3), not per channel", "indicator"),
    SymbolInfo("i_sub", r"\mathbb{1}_{sub}", "sub-norms before W_O and W_down (BitNet)",
               "indicator"),
    SymbolInfo("i_proj", r"\mathbb{1}_{proj}", "embedding projected d_emb → d and back (OPT)",
               "indicator"),
    SymbolInfo("i_img", r"\mathbb{1}_{img}", "cross-attention: the sequences have image tokens "
               "(else transformers skips the cross-attention layers)", "indicator"),
    SymbolInfo("i_m2", r"\mathbb{1}_{m2}", "the Mamba mixer is Mamba-2", "indicator"),
    SymbolInfo("i_moa", r"\mathbb{1}_{moa}", "W_Q and W_O are a mixture of attention heads "
               "(JetMoE)", "indicator"),
    SymbolInfo("i_dsa", r"\mathbb{1}_{dsa}", "DeepSeek Sparse Attention: the indexer's top K_I "
               "keys per query", "indicator"),
    SymbolInfo("i_hw", r"\mathbb{1}_{hw}", "the indexer weighs its heads' scores by a weight "
               "per head from the residual and reads the query latent (DSA, CSA; not "
               "MiniMax-M3's, whose queries read the residual)", "indicator"),
    SymbolInfo("i_gn", r"\mathbb{1}_{gn}", "Mamba-2: gated RMSNorm before out_proj",
               "indicator"),
    SymbolInfo("i_dtn", r"\mathbb{1}_{dtn}", "Mamba: RMSNorms on Δ, B, C (Jamba)", "indicator"),
    SymbolInfo("i_cg", r"\mathbb{1}_{cg}", "gated DeltaNet: channel gate (Kimi Delta "
               "Attention: decay per key channel, both gates through rank r_g)", "indicator"),
    SymbolInfo("i_gf", r"\mathbb{1}_{gf}", "gated DeltaNet, channel gate: the decay and the "
               "output gate each projected from d at full rank (Ling 3's f_proj, g_proj)",
               "indicator"),
    SymbolInfo("g_norm", "g_{norm}", "norm weight γ (0: OLMo 1's norms without parameters)",
               "indicator"),
    SymbolInfo("b_qkv", "b_{qkv}", "biases on Q, K, V (MLA: on the down-projections)",
               "indicator"),
    SymbolInfo("b_o", "b_{o}", "bias on the attention output projection", "indicator"),
    SymbolInfo("b_gh", "b_{gate,head}", "one learned bias per head on the output gate, its W_G "
               "a projection of its own without bias (Beam's gate_bias)", "indicator"),
    SymbolInfo("b_oL", "b_{o,L}", "bias on the last layer's attention output projection only "
               "(GPT-NeoX-Japanese)", "indicator"),
    SymbolInfo("b_ff", "b_{ff}", "biases on FFN and expert projections", "indicator"),
    SymbolInfo("b_norm", "b_{norm}", "LayerNorm bias β", "indicator"),
    SymbolInfo("b_lm", "b_{lm}", "bias on the LM head", "indicator"),
    SymbolInfo("i_ph", r"\mathbb{1}_{ph}", "a prediction head (d × d dense and a norm) before "
               "the LM head", "indicator"),
    SymbolInfo("b_ph", "b_{ph}", "bias on the prediction head's dense layer", "indicator"),
    SymbolInfo("i_n0", r"\mathbb{1}_{n0}", "layer 0 has its mixer's pre-norm", "indicator"),
    SymbolInfo("n_pb", "n_{pb}", "rows of the bucketed score bias: buckets + segment pairs",
               "size"),
    SymbolInfo("V_seg", "V_{seg}", "rows of the segment embedding", "size"),
    SymbolInfo("i_ng", r"\mathbb{1}_{nGPT}", "nGPT's learned scale vectors (Dory)",
               "indicator"),
    SymbolInfo("i_go", r"\mathbb{1}_{gate\,own}", "the per-channel output gate is a "
               "projection of its own beside W_Q (HRM-Text's gate_proj)", "indicator"),
    SymbolInfo("i_ls", r"\mathbb{1}_{loop\,state}", "a d-wide parameter that starts a looped "
               "model's second stream (HRM-Text's z_L_init)", "indicator"),
    SymbolInfo("b_router", "b_{router}", "bias per routed expert", "indicator"),
    SymbolInfo("i_dm", r"\mathbb{1}_{dm}", "Doge's dynamic mask attention: dt_proj "
               "h_kv·d_v → h_kv and A per key/value head, each query attending to its top K_dm "
               "keys", "indicator"),
    SymbolInfo("b_dm", "b_{dm}", "a bias on the dynamic mask's dt_proj", "indicator"),
    SymbolInfo("i_pk", r"\mathbb{1}_{pk}", "product-key experts (Doge's CDMoE): one neuron "
               "each, 2·d values, routed by 2·n_pk sub-keys", "indicator"),
    SymbolInfo("b_moe", "b_{moe}", "one bias on an MoE layer's combined output (JetMoE)",
               "indicator"),
    SymbolInfo("i_le", r"\mathbb{1}_{le}", "per-layer embeddings (Gemma 3n, Gemma 4)",
               "indicator"),
    SymbolInfo("i_au", r"\mathbb{1}_{altup}", "AltUp (Gemma 3n)", "indicator"),
    SymbolInfo("i_lr", r"\mathbb{1}_{laurel}", "LAuReL (Gemma 3n)", "indicator"),
    SymbolInfo("i_cca", r"\mathbb{1}_{cca}", "compressed convolutional attention (ZAYA1)",
               "indicator"),
    SymbolInfo("i_rt", r"\mathbb{1}_{rt}", "ZAYA1's MLP router in place of Linear(d, E)",
               "indicator"),
    SymbolInfo("i_rsc", r"\mathbb{1}_{rsc}", "a learned scale on the residual at each "
               "sublayer's add (residual_scales)", "indicator"),
    SymbolInfo("b_rsc", "b_{rsc}", "a learned bias on the residual before its scale",
               "indicator"),
    SymbolInfo("i_rbr", r"\mathbb{1}_{rbr}", "a learned scale and bias on each sublayer's "
               "output at its residual add", "indicator"),
    SymbolInfo("i_rse", r"\mathbb{1}_{rse}", "a learned scale and bias on the token "
               "embedding", "indicator"),
    SymbolInfo("i_cen", r"\mathbb{1}_{cen}", "the LM head scores the tokens of the chosen "
               "centroids only (Gemma 4's assistants)", "indicator"),
    SymbolInfo("i_bn", r"\mathbb{1}_{branch\,norms}", "an MoE layer's shared and routed "
               "experts normed on their own, three norms (Gemma 4)", "indicator"),
    SymbolInfo("i_rs", r"\mathbb{1}_{router\,scales}", "learned scales in the router, d + E "
               "values (Gemma 4)", "indicator"),
    SymbolInfo("i_mn", r"\mathbb{1}_{moe\,norm}", "a norm over an MoE layer's combined output "
               "(A.X-K1's post_mlp_layernorm)", "indicator"),
    SymbolInfo("b_ssm", "b_{ssm}", "Mamba: biases on in_proj and out_proj", "indicator"),
    SymbolInfo("b_cs", "b_{cs}", "Mamba: bias on the conv1d", "indicator"),
    SymbolInfo("b_sc", "b_{sc}", "short convolution: biases on projections and conv",
               "indicator"),
    # workload
    SymbolInfo("T", "T", "sequence length (context)", "workload"),
    SymbolInfo("i_causal", r"\mathbb{1}_{causal}", "attention counted over the causal triangle",
               "workload"),
    SymbolInfo("D", "D", "training tokens", "workload"),
    SymbolInfo("F", "F", "training FLOPs per token", "workload"),
    SymbolInfo("R", "R", "dense peak FLOP/s of one GPU at the dtype", "workload"),
    SymbolInfo("u", "u", "model FLOPs utilisation (MFU)", "workload"),
    SymbolInfo("K", "K", "GPUs", "workload"),
    SymbolInfo("H", "H", "GPU-hours", "workload"),
    SymbolInfo("c_h", "c_{h}", "price of one GPU-hour", "workload"),
    SymbolInfo("W_gpu", "W", "board power (TDP) of one GPU, W", "workload"),
    SymbolInfo("PUE", r"\mathrm{PUE}", "power usage effectiveness of the data centre",
               "workload"),
    SymbolInfo("I_grid", "I", "carbon intensity of the grid, g CO2e per kWh", "workload"),
    # memory: model states (ZeRO, Rajbhandari et al. 2020) and activations (Korthikanti 2022)
    SymbolInfo("N", "N", "parameters (all of them, embeddings included)", "memory"),
    SymbolInfo("N_emb", "N_{emb}", "token + learned position embedding parameters", "memory"),
    SymbolInfo("N_head", "N_{head}", "untied LM-head parameters (0 when tied)", "memory"),
    SymbolInfo("N_e", "N_{e}", "routed-expert parameters, all MoE layers", "memory"),
    SymbolInfo("N_r", "N_{r}", "parameters one token's forward pass reads: a looped model's "
               "stored layers once each pass they run (calc.spec.loop); N otherwise", "memory"),
    SymbolInfo("N_er", "N_{er}", "routed-expert parameters of those passes", "memory"),
    SymbolInfo("b", "b", "sequences per micro-batch (training) or per batch (inference)",
               "memory"),
    SymbolInfo("n_tp", "t", "tensor-parallel degree", "memory"),
    SymbolInfo("n_pp", "p", "pipeline-parallel degree", "memory"),
    SymbolInfo("n_dp", "N_{d}", "data-parallel degree", "memory"),
    SymbolInfo("n_cp", "c", "context-parallel degree (the sequence split c ways)", "memory"),
    SymbolInfo("n_ep", "e", "expert-parallel degree (routed experts split e ways)", "memory"),
    SymbolInfo("n_vp", "v", "virtual pipeline stages per GPU (interleaved 1F1B)", "memory"),
    SymbolInfo("i_vp", r"\mathbb{1}_{v>1}", "an interleaved pipeline schedule", "memory"),
    SymbolInfo("i_z1", r"\mathbb{1}_{ZeRO\geq 1}", "ZeRO shards optimizer states", "memory"),
    SymbolInfo("i_z2", r"\mathbb{1}_{ZeRO\geq 2}", "ZeRO shards gradients", "memory"),
    SymbolInfo("i_z3", r"\mathbb{1}_{ZeRO\geq 3}", "ZeRO shards parameters", "memory"),
    SymbolInfo("i_pp1", r"\mathbb{1}_{p=1}", "one pipeline stage (first stage is also last)",
               "memory"),
    SymbolInfo("L_s", "L_{s}", "layers on the most loaded (first) pipeline stage: ⌈L/p⌉",
               "memory"),
    SymbolInfo("L_sm", "L_{s,moe}", "MoE layers among the first stage's L_s", "memory"),
    SymbolInfo("L_s_att", "L_{s,att}", "attention layers among the first stage's L_s",
               "memory"),
    SymbolInfo("L_s_dense", "L_{s,dense}", "dense-FFN layers among the first stage's L_s",
               "memory"),
    SymbolInfo("L_s_ssm", "L_{s,ssm}", "Mamba layers among the first stage's L_s", "memory"),
    SymbolInfo("L_s_dn", "L_{s,dn}", "gated DeltaNet layers among the first stage's L_s",
               "memory"),
    SymbolInfo("L_s_la", "L_{s,la}", "lightning-attention layers among the first stage's L_s",
               "memory"),
    SymbolInfo("L_s_rw", "L_{s,rw}", "RWKV layers among the first stage's L_s", "memory"),
    SymbolInfo("L_s_gr", "L_{s,gr}", "Griffin recurrent layers among the first stage's L_s",
               "memory"),
    SymbolInfo("L_s_xa", "L_{s,xa}", "cross-attention layers among the first stage's L_s",
               "memory"),
    SymbolInfo("L_s_sb", "L_{s,sb}", "depths of the shared block among the first stage's L_s",
               "memory"),
    SymbolInfo("L_s_ml", "L_{s,ml}", "mLSTM layers among the first stage's L_s", "memory"),
    SymbolInfo("L_s_sc", "L_{s,sc}", "short-convolution layers among the first stage's L_s",
               "memory"),
    SymbolInfo("L_s_att2", "L'_{s,att}", "of those, layers of the kind with head shapes of its "
               "own (attention.kind_shapes)", "memory"),
    SymbolInfo("L_s_sel", "L_{s,sel}", "of the first stage's attention layers, those that "
               "attend to the keys an indexer selects", "memory"),
    SymbolInfo("L_s_kvs", "L_{s,kvs}", "of the first stage's attention layers, those that read "
               "an earlier layer's keys and values (attention.kv_shared_layers)", "memory"),
    SymbolInfo("L_s_kvs2", "L'_{s,kvs}", "of those, layers of the kind with head shapes of its "
               "own", "memory"),
    SymbolInfo("L_s_dw", "L_{s,dw}", "of the first stage's dense FFNs, the 2·d_ff wide ones "
               "(ffn.double_wide)", "memory"),
    SymbolInfo("h_t2", "h'_{t}", "key/value heads of the L'_att layers one tensor-parallel "
               "rank holds: ⌈h'_kv/t⌉", "memory"),
    SymbolInfo("h_t", "h_{t}", "key/value heads one tensor-parallel rank holds: ⌈h_kv/t⌉ "
               "(1, replicated, when t > h_kv; h/t under MLA)", "memory"),
    SymbolInfo("q_w", "q_{w}", "bytes per working weight (bf16: 2; int4: 0.5)", "memory"),
    SymbolInfo("q_g", "q_{g}", "bytes per gradient", "memory"),
    SymbolInfo("q_gc", "q_{gc}", "bytes per parameter of an fp32 gradient copy", "memory"),
    SymbolInfo("q_m", "q_{m}", "bytes per parameter of fp32 master weights", "memory"),
    SymbolInfo("q_o", "q_{o}", "bytes per parameter of optimizer states (Adam: 8)", "memory"),
    SymbolInfo("q_a", "q_{a}", "bytes per activation element (bf16: 2)", "memory"),
    SymbolInfo("q_kv", "q_{kv}", "bytes per KV-cache element", "memory"),
    SymbolInfo("i_drop", r"\mathbb{1}_{drop}", "dropout (1-byte masks) in training", "memory"),
    SymbolInfo("i_sp", r"\mathbb{1}_{sp}", "sequence parallelism (with tensor parallelism)",
               "memory"),
    SymbolInfo("i_scores", r"\mathbb{1}_{scores}",
               "the s×s attention scores are stored (no flash attention, no selective "
               "recomputation)", "memory"),
    SymbolInfo("i_full", r"\mathbb{1}_{full}", "full activation recomputation", "memory"),
    SymbolInfo("M_gib", "M", "memory of one GPU in GiB (2^30 bytes)", "memory"),
    # DeepSeek-V3's memory recipe (arXiv:2412.19437 §3.2.1, §3.2.3, §3.3.3)
    SymbolInfo("i_rnu", r"\mathbb{1}_{rnu}", "norms and MLA up-projections recomputed in the "
               "backward (their outputs not stored)", "memory"),
    # transformers' modules (--framework hf; calc.formulas.memory)
    SymbolInfo("i_hf", r"\mathbb{1}_{hf}", "activations as transformers' modules save them "
               "(--framework hf)", "memory"),
    SymbolInfo("i_up", r"\mathbb{1}_{up}", "activations narrower than fp32 (an fp32 upcast is "
               "a copy)", "memory"),
    SymbolInfo("i_eager", r"\mathbb{1}_{eager}", "attention without a fused kernel (the s×s "
               "scores are formed)", "memory"),
    SymbolInfo("i_dual", r"\mathbb{1}_{dual}", "DualPipe: a rank holds two stages (the first "
               "with the last) and p + 1 micro-batches in flight", "memory"),
    SymbolInfo("i_head", r"\mathbb{1}_{head}", "the most loaded GPU holds the output head (one "
               "stage, or DualPipe's first rank)", "memory"),
    SymbolInfo("L_w", "L_{w}", "layers whose parameters the most loaded GPU holds (L_s; the "
               "last stage's too under DualPipe)", "memory"),
    SymbolInfo("N_mtp", "N_{mtp}", "multi-token-prediction parameters (their own, without the "
               "shared embedding and head)", "memory"),
    SymbolInfo("N_mtp_e", "N_{mtp,e}", "routed-expert parameters of the MTP modules", "memory"),
    SymbolInfo("i_mtps", r"\mathbb{1}_{mtp\,shared}", "the MTP modules share the main model's "
               "embedding and head (no copies)", "memory"),
    SymbolInfo("q_ema", "q_{ema}", "bytes per parameter of an EMA kept on the GPU", "memory"),
    # torchtune's memory recipes (calc.formulas.memory)
    SymbolInfo("i_oib", r"\mathbb{1}_{oib}", "the optimizer steps in the backward, each "
               "gradient freed once applied", "memory"),
    SymbolInfo("N_big", "N_{big}", "elements of the largest parameter tensor", "memory"),
    SymbolInfo("i_ao", r"\mathbb{1}_{ao}", "checkpointed layers' inputs offloaded to the host",
               "memory"),
    SymbolInfo("u_ao", "u_{ao}", "checkpointed layers' inputs kept on the GPU under activation "
               "offload", "memory"),
    # the framework's transient buffers (calc.spec.memory.STACKS)
    SymbolInfo("B_bk", "B_{bk}", "elements of a gradient bucket outside the gradients", "memory"),
    SymbolInfo("u_g", "u_{g}", "layers whose 16-bit weights ZeRO-3/FSDP gathers at once",
               "memory"),
    SymbolInfo("P_pf", "P_{pf}", "parameters ZeRO-3 prefetches beyond the gathered layers",
               "memory"),
    SymbolInfo("q_rg", "q_{rg}", "bytes per element of a gathered layer's unsharded gradient",
               "memory"),
    # fine-tuning: low-rank adapters on a frozen base (Hu et al. 2021, LoRA; Dettmers et al.
    # 2023, QLoRA); the i_keep_* indicators are 1 in full training
    SymbolInfo("r_a", "r", "LoRA rank of every adapter", "finetune"),
    SymbolInfo("a_q", r"\mathbb{1}_{A\,q}", "an adapter on W_Q", "finetune"),
    SymbolInfo("a_k", r"\mathbb{1}_{A\,k}", "an adapter on W_K", "finetune"),
    SymbolInfo("a_v", r"\mathbb{1}_{A\,v}", "an adapter on W_V", "finetune"),
    SymbolInfo("a_o", r"\mathbb{1}_{A\,o}", "an adapter on W_O", "finetune"),
    SymbolInfo("a_g", r"\mathbb{1}_{A\,g}", "an adapter on the per-head output gate W_G",
               "finetune"),
    SymbolInfo("a_r", r"\mathbb{1}_{A\,r}", "an adapter on the relative bias' projection "
               "r_proj (Inkling)", "finetune"),
    SymbolInfo("a_sink", r"\mathbb{1}_{A\,sink}", "an adapter on the sinks' projection "
               "sink_proj (Inkling 2)", "finetune"),
    SymbolInfo("a_up", r"\mathbb{1}_{A\,up}", "an adapter on each FFN/expert W_up", "finetune"),
    SymbolInfo("a_gate", r"\mathbb{1}_{A\,gate}", "an adapter on each FFN/expert W_gate",
               "finetune"),
    SymbolInfo("a_down", r"\mathbb{1}_{A\,down}", "an adapter on each FFN/expert W_down",
               "finetune"),
    SymbolInfo("a_experts", r"\mathbb{1}_{A\,exp}", "adapters on each routed expert's up, gate "
               "and down", "finetune"),
    SymbolInfo("a_shared_expert_gate", r"\mathbb{1}_{A\,sg}", "an adapter on the shared "
               "experts' gate", "finetune"),
    SymbolInfo("a_in_proj", r"\mathbb{1}_{A\,in}", "an adapter on each Mamba or short-"
               "convolution in_proj", "finetune"),
    SymbolInfo("a_x_proj", r"\mathbb{1}_{A\,x}", "an adapter on each Mamba-1 x_proj",
               "finetune"),
    SymbolInfo("a_dt_proj", r"\mathbb{1}_{A\,dt}", "an adapter on each Mamba-1 dt_proj",
               "finetune"),
    SymbolInfo("a_out_proj", r"\mathbb{1}_{A\,out}", "an adapter on each Mamba, gated "
               "DeltaNet, lightning-attention or short-convolution out_proj", "finetune"),
    SymbolInfo("a_in_proj_qkvz", r"\mathbb{1}_{A\,qkvz}", "an adapter on each gated DeltaNet "
               "in_proj_qkvz", "finetune"),
    SymbolInfo("a_in_proj_ba", r"\mathbb{1}_{A\,ba}", "an adapter on each gated DeltaNet "
               "in_proj_ba", "finetune"),
    SymbolInfo("a_qkv_proj", r"\mathbb{1}_{A\,qkv}", "an adapter on each lightning-attention "
               "qkv_proj", "finetune"),
    SymbolInfo("a_output_gate", r"\mathbb{1}_{A\,og}", "an adapter on each lightning-attention "
               "output_gate", "finetune"),
    SymbolInfo("a_key", r"\mathbb{1}_{A\,key}", "an adapter on each RWKV key (the time-mix's "
               "and the channel-mix's)", "finetune"),
    SymbolInfo("a_value", r"\mathbb{1}_{A\,value}", "an adapter on each RWKV value (the "
               "time-mix's and the channel-mix's)", "finetune"),
    SymbolInfo("a_receptance", r"\mathbb{1}_{A\,rec}", "an adapter on each RWKV receptance "
               "(the time-mix's and the channel-mix's)", "finetune"),
    SymbolInfo("a_output", r"\mathbb{1}_{A\,output}", "an adapter on each RWKV time-mix "
               "output", "finetune"),
    SymbolInfo("a_linear_y", r"\mathbb{1}_{A\,ly}", "an adapter on each Griffin linear_y",
               "finetune"),
    SymbolInfo("a_linear_x", r"\mathbb{1}_{A\,lx}", "an adapter on each Griffin linear_x",
               "finetune"),
    SymbolInfo("a_linear_out", r"\mathbb{1}_{A\,lo}", "an adapter on each Griffin linear_out",
               "finetune"),
    SymbolInfo("a_ogate_preact", r"\mathbb{1}_{A\,og}", "an adapter on each mLSTM "
               "ogate_preact", "finetune"),
    SymbolInfo("a_igate_preact", r"\mathbb{1}_{A\,ig}", "an adapter on each mLSTM "
               "igate_preact", "finetune"),
    SymbolInfo("a_fgate_preact", r"\mathbb{1}_{A\,fg}", "an adapter on each mLSTM "
               "fgate_preact", "finetune"),
    SymbolInfo("a_per_layer_input_gate", r"\mathbb{1}_{A\,plg}", "an adapter on each layer's "
               "per-layer embedding gate (Gemma 4's per_layer_input_gate)", "finetune"),
    SymbolInfo("a_per_layer_projection", r"\mathbb{1}_{A\,plp}", "an adapter on each layer's "
               "per-layer embedding projection (per_layer_projection)", "finetune"),
    SymbolInfo("a_per_layer_model_projection", r"\mathbb{1}_{A\,plm}", "an adapter on the "
               "embedding's projection to the per-layer vectors (per_layer_model_projection)",
               "finetune"),
    SymbolInfo("a_linear_left", r"\mathbb{1}_{A\,ll}", "an adapter on each layer's LAuReL "
               "linear_left d → r (Gemma 3n)", "finetune"),
    SymbolInfo("a_linear_right", r"\mathbb{1}_{A\,lr}", "an adapter on each layer's LAuReL "
               "linear_right r → d (Gemma 3n)", "finetune"),
    SymbolInfo("a_modality_router", r"\mathbb{1}_{A\,mr}", "an adapter on each layer's AltUp "
               "router d → n (Gemma 3n's modality_router)", "finetune"),
    SymbolInfo("a_prediction_coefs", r"\mathbb{1}_{A\,pc}", "an adapter on each layer's AltUp "
               "prediction coefficients n → n² (prediction_coefs)", "finetune"),
    SymbolInfo("a_correction_coefs", r"\mathbb{1}_{A\,cc}", "an adapter on each layer's AltUp "
               "correction coefficients n → n (correction_coefs)", "finetune"),
    SymbolInfo("a_altup_projections", r"\mathbb{1}_{A\,ap}", "an adapter on each of AltUp's "
               "n − 1 projections into the streams (altup_projections)", "finetune"),
    SymbolInfo("a_altup_unembed_projections", r"\mathbb{1}_{A\,au}", "an adapter on each of "
               "AltUp's n − 1 projections out of the streams (altup_unembed_projections)",
               "finetune"),
    SymbolInfo("a_pre_projection", r"\mathbb{1}_{A\,pre}", "an adapter on a drafter's "
               "pre_projection of the target's states", "finetune"),
    SymbolInfo("a_post_projection", r"\mathbb{1}_{A\,post}", "an adapter on a drafter's "
               "post_projection back to the target's width", "finetune"),
    SymbolInfo("a_centroids", r"\mathbb{1}_{A\,cen}", "an adapter on a centroid head's "
               "centroids", "finetune"),
    SymbolInfo("i_frozen", r"\mathbb{1}_{frozen}", "the base model is frozen (LoRA, QLoRA)",
               "finetune"),
    SymbolInfo("i_fa", r"\mathbb{1}_{fp32\,A}", "the adapters on a frozen base are kept in fp32 "
               "(PEFT's autocast_adapter_dtype): 4-byte weights and gradients, no fp32 copy",
               "finetune"),
    SymbolInfo("q_f", "q_{f}", "bytes per frozen weight of a layer's projections (NF4 with "
               "its constants: 0.516)", "finetune"),
    SymbolInfo("i_keep_qkv", r"\mathbb{1}_{x\,qkv}", "the Q/K/V projections' input is stored",
               "finetune"),
    SymbolInfo("i_keep_o", r"\mathbb{1}_{x\,o}", "W_O's input is stored", "finetune"),
    SymbolInfo("i_keep_up", r"\mathbb{1}_{x\,up}", "the FFN's up/gate input is stored",
               "finetune"),
    SymbolInfo("i_keep_down", r"\mathbb{1}_{x\,down}", "the FFN's down-projection input is "
               "stored", "finetune"),
    SymbolInfo("i_keep_exp", r"\mathbb{1}_{x\,exp}", "the routed experts' down-projection "
               "input is stored", "finetune"),
    SymbolInfo("i_keep_mix", r"\mathbb{1}_{x\,mix}", "the input of a Mamba, gated DeltaNet, "
               "lightning-attention or short-convolution in_proj is stored", "finetune"),
    SymbolInfo("i_keep_head", r"\mathbb{1}_{x\,head}", "the LM head's input is stored",
               "finetune"),
    SymbolInfo("i_qh", r"\mathbb{1}_{q\,head}", "the frozen LM head is stored like the layers' "
               "projections, at q_f (LitGPT's QLoRA, calc.spec.memory.STACKS)", "finetune"),
    SymbolInfo("q_dq", "q_{dq}", "bytes per weight of a 4-bit matrix's dequantised copies, "
               "transient at the backward's peak (LitGPT's QLoRA: fp16 + bf16, 4)", "finetune"),
    SymbolInfo("q_L", "q_L", "bytes per logit held at the loss's peak (calc.spec.finetune."
               "LOSS_BYTES)", "finetune"),
    SymbolInfo("q_Lg", "q_{Lg}", "bytes per logit of the logits' gradient beside them at the "
               "backward's start, where LOSS_BYTES leaves it out (calc.spec.finetune."
               "LOSS_GRADIENT_BYTES)", "finetune"),
    # offload (Ren et al. 2021, ZeRO-Offload; Rajbhandari et al. 2021, ZeRO-Infinity)
    SymbolInfo("i_off_o", r"\mathbb{1}_{off\,opt}", "optimizer side offloaded to CPU or NVMe",
               "memory"),
    SymbolInfo("i_off_p", r"\mathbb{1}_{off\,par}", "parameter partitions offloaded (ZeRO-3)",
               "memory"),
    # low-precision GEMMs (calc.spec.gemm_precision)
    SymbolInfo("q_l", "q_{l}", "bytes per stored projection input (q_a; FP8: 1)", "memory"),
    SymbolInfo("q_8", "q_{8}", "bytes per projection weight of its FP8/FP4 copies", "memory"),
    SymbolInfo("q_lo", "q_{lo}", "bytes per stored input of W_O (q_l; DeepSeek-V3's E5M6: 1.5)",
               "memory"),
    SymbolInfo("i_swr", r"\mathbb{1}_{swr}", "the MoE SwiGLU's inputs stored at q_l, its output "
               "recomputed", "memory"),
    SymbolInfo("F_8", "F_{8}", "training FLOPs per token in FP8/FP4 GEMMs", "workload"),
    SymbolInfo("R_8", "R_{8}", "dense peak FLOP/s of one GPU in the FP8/FP4 format", "workload"),
    # inference
    SymbolInfo("BW", r"\mathrm{BW}", "memory bandwidth of one GPU, GB/s (1e9 bytes/s)",
               "inference"),
    SymbolInfo("u_bw", "u_{bw}", "memory-bandwidth utilisation", "inference"),
    SymbolInfo("h_g", "h_{g}", "key/value heads one GPU caches: ⌈h_kv/K⌉ (1, replicated, when "
               "K > h_kv; MLA's one latent on every GPU)", "inference"),
    SymbolInfo("h_g2", "h'_{g}", "key/value heads of the L'_att layers one GPU caches: "
               "⌈h'_kv/K⌉", "inference"),
    SymbolInfo("F_p", "F_{p}", "forward FLOPs per prompt token at context T (prefill)",
               "inference"),
    SymbolInfo("F_d", "F_{d}", "forward FLOPs of one generated token at context T (decode)",
               "inference"),
    # compute-optimal scaling (Hoffmann et al. 2022)
    SymbolInfo("C", "C", "training compute budget, FLOPs", "scaling"),
    SymbolInfo("rho", r"\rho",
               f"training tokens per parameter (Chinchilla rule: {TOKENS_PER_PARAMETER})",
               "scaling"),
    SymbolInfo("E_irr", "E", "irreducible loss of the fitted law", "scaling"),
    SymbolInfo("A_fit", "A", "fitted coefficient of the parameter term", "scaling"),
    SymbolInfo("B_fit", "B", "fitted coefficient of the data term", "scaling"),
    SymbolInfo("alpha", r"\alpha", "fitted exponent of the parameter term", "scaling"),
    SymbolInfo("beta", r"\beta", "fitted exponent of the data term", "scaling"),
    SymbolInfo("r", "r", "aspect ratio d/L of a suggested shape", "scaling"),
    SymbolInfo("t_days", "t_{days}", "wall-clock days of training", "scaling"),
)

INFO: dict[str, SymbolInfo] = {info.name: info for info in _TABLE}
# Real-valued symbols; everything else is a non-negative integer.
_REAL = {"D", "F", "R", "u", "H", "c_h", "W_gpu", "PUE", "I_grid", "q_w", "q_f", "q_o", "q_l",
         "q_lo",
         "q_8", "R_8", "q_kv", "M_gib", "BW", "u_bw", "F_p", "F_d", "C", "rho", "E_irr", "A_fit",
         "B_fit", "alpha", "beta", "r", "t_days"}
SYMBOLS: dict[str, sympy.Symbol] = {
    info.name: sympy.Symbol(info.name, nonnegative=True, integer=info.name not in _REAL)
    for info in _TABLE
}
LATEX_NAMES: dict[sympy.Symbol, str] = {SYMBOLS[i.name]: i.latex for i in _TABLE}

(V, V_o, d, L, h, h_kv, d_qk, d_v, d_ff, P, n_norm, L_loc, w, L_moe, E, k, d_e, E_s, d_s, r_q,
 r_kv, d_rope, M) = (SYMBOLS[n] for n in (
    "V", "V_o", "d", "L", "h", "h_kv", "d_qk", "d_v", "d_ff", "P", "n_norm", "L_loc", "w",
    "L_moe", "E", "k", "d_e", "E_s", "d_s", "r_q", "r_kv", "d_rope", "M"))
(i_glu, i_mla, i_qlora, i_tied, i_qk_head, i_qk_proj, i_norm_emb, i_norm_final, i_shared_gate,
 i_moe, i_rel, b_qkv, b_o, b_ff, b_norm, b_lm, b_router) = (SYMBOLS[n] for n in (
    "i_glu", "i_mla", "i_qlora", "i_tied", "i_qk_head", "i_qk_proj", "i_norm_emb",
    "i_norm_final", "i_shared_gate", "i_moe", "i_rel", "b_qkv", "b_o", "b_ff", "b_norm", "b_lm",
    "b_router"))
(L_att, L_chk, L_dense, L_ssm, L_dn, L_sc, c, d_emb, d_in, N_s, k_s, R_dt, H_s, G_s, H_k, H_v,
 d_lk, d_lv, k_dn, k_sc) = (SYMBOLS[n] for n in (
    "L_att", "L_chk", "L_dense", "L_ssm", "L_dn", "L_sc", "c", "d_emb", "d_in", "N_s", "k_s",
    "R_dt", "H_s", "G_s", "H_k", "H_v", "d_lk", "d_lv", "k_dn", "k_sc"))
(i_sink, i_gate, i_gh, i_sub, i_proj, i_m2, i_gn, i_dtn, g_norm, b_ssm, b_cs, b_sc) = (
    SYMBOLS[n] for n in ("i_sink", "i_gate", "i_gh", "i_sub", "i_proj", "i_m2", "i_gn",
                         "i_dtn", "g_norm", "b_ssm", "b_cs", "b_sc"))
i_cg, r_g, i_gf, i_diff = SYMBOLS["i_cg"], SYMBOLS["r_g"], SYMBOLS["i_gf"], SYMBOLS["i_diff"]
b_oL, i_mn, b_gh = SYMBOLS["b_oL"], SYMBOLS["i_mn"], SYMBOLS["b_gh"]
p_le, V_le, i_le = SYMBOLS["p_le"], SYMBOLS["V_le"], SYMBOLS["i_le"]
D_tg, C_cen, V_cen, i_cen = (SYMBOLS[n] for n in ("D_tg", "C_cen", "V_cen", "i_cen"))
i_bn, i_rs = SYMBOLS["i_bn"], SYMBOLS["i_rs"]
i_skp, i_qsc, i_rls = SYMBOLS["i_skp"], SYMBOLS["i_qsc"], SYMBOLS["i_rls"]
d_rl, E_rl, k_rc = SYMBOLS["d_rl"], SYMBOLS["E_rl"], SYMBOLS["k_rc"]
H_rct = SYMBOLS["H_rct"]
N_brq, N_brs, L_brs = SYMBOLS["N_brq"], SYMBOLS["N_brs"], SYMBOLS["L_brs"]
i_srt, i_rgs, i_fos = SYMBOLS["i_srt"], SYMBOLS["i_rgs"], SYMBOLS["i_fos"]
n_au, i_au, r_lr, i_lr = (SYMBOLS[n] for n in ("n_au", "i_au", "r_lr", "i_lr"))
i_ph, b_ph, i_n0 = SYMBOLS["i_ph"], SYMBOLS["b_ph"], SYMBOLS["i_n0"]
k_ca, k_cb, i_cca, r_rt, i_rt = (SYMBOLS[n] for n in ("k_ca", "k_cb", "i_cca", "r_rt", "i_rt"))
i_rsc, b_rsc, i_rbr, i_rse = (SYMBOLS[n] for n in ("i_rsc", "b_rsc", "i_rbr", "i_rse"))
n_pb, V_seg, i_ls, i_go = SYMBOLS["n_pb"], SYMBOLS["V_seg"], SYMBOLS["i_ls"], SYMBOLS["i_go"]
i_ng = SYMBOLS["i_ng"]
L_la, H_la, d_la, L_s_la = (SYMBOLS[n] for n in ("L_la", "H_la", "d_la", "L_s_la"))
L_rw, d_rw, L_s_rw = (SYMBOLS[n] for n in ("L_rw", "d_rw", "L_s_rw"))
L_gr, d_gr, w_gr, k_gr, L_s_gr = (SYMBOLS[n] for n in ("L_gr", "d_gr", "w_gr", "k_gr", "L_s_gr"))
L_ml, H_ml, d_mk, d_mv, L_s_ml = (SYMBOLS[n] for n in ("L_ml", "H_ml", "d_mk", "d_mv", "L_s_ml"))
L_sb, M_sb, r_sb, i_sba, L_s_sb = (SYMBOLS[n] for n in ("L_sb", "M_sb", "r_sb", "i_sba",
                                                         "L_s_sb"))
L_xa, T_img, i_img, L_s_xa = (SYMBOLS[n] for n in ("L_xa", "T_img", "i_img", "L_s_xa"))
a_qkv_proj, a_output_gate = SYMBOLS["a_qkv_proj"], SYMBOLS["a_output_gate"]
a_r, a_sink = SYMBOLS["a_r"], SYMBOLS["a_sink"]
E_a, i_moa, b_moe, n_act = (SYMBOLS[n] for n in ("E_a", "i_moa", "b_moe", "n_act"))
E_0 = SYMBOLS["E_0"]
g_o, r_o, i_og, i_qw, i_kv1 = (SYMBOLS[n] for n in ("g_o", "r_o", "i_og", "i_qw", "i_kv1"))
r_ng, i_lg, i_krn = SYMBOLS["r_ng"], SYMBOLS["i_lg"], SYMBOLS["i_krn"]
r_q2, r_kv2, d_rope2 = SYMBOLS["r_q2"], SYMBOLS["r_kv2"], SYMBOLS["d_rope2"]
h_I, d_I, K_I, L_idx, i_dsa = (SYMBOLS[n] for n in ("h_I", "d_I", "K_I", "L_idx", "i_dsa"))
B_I, L_sel, i_hw, L_s_sel = (SYMBOLS[n] for n in ("B_I", "L_sel", "i_hw", "L_s_sel"))
i_qsa = SYMBOLS["i_qsa"]
K_dm, i_dm, b_dm = (SYMBOLS[n] for n in ("K_dm", "i_dm", "b_dm"))
n_pk, i_pk = SYMBOLS["n_pk"], SYMBOLS["i_pk"]
m_csa, m_hca, L_csa, L_hca = (SYMBOLS[n] for n in ("m_csa", "m_hca", "L_csa", "L_hca"))
n_hc, i_hc, i_hcm, r_hc, i_hg = (SYMBOLS[n] for n in ("n_hc", "i_hc", "i_hcm", "r_hc", "i_hg"))
L_att2, L_loc2, L_chk2, h2, h_kv2, d_qk2, d_v2, i_sink2 = (SYMBOLS[n] for n in (
    "L_att2", "L_loc2", "L_chk2", "h2", "h_kv2", "d_qk2", "d_v2", "i_sink2"))
L_kvs, L_kvs2, L_kvsl, L_kvsl2, L_dw, i_kev, i_kev2 = (SYMBOLS[n] for n in (
    "L_kvs", "L_kvs2", "L_kvsl", "L_kvsl2", "L_dw", "i_kev", "i_kev2"))
T, i_causal, D, F, R, u, K = (SYMBOLS[n] for n in ("T", "i_causal", "D", "F", "R", "u", "K"))
(N, N_emb, N_head, N_e, N_r, N_er, b, n_tp, n_pp, n_dp, i_z1, i_z2, i_z3, i_pp1, q_w, q_g, q_gc,
 q_m, q_o, q_a, q_kv, i_drop, i_sp, i_scores, i_full, M_gib) = (SYMBOLS[n] for n in (
    "N", "N_emb", "N_head", "N_e", "N_r", "N_er", "b", "n_tp", "n_pp", "n_dp", "i_z1", "i_z2",
    "i_z3", "i_pp1", "q_w", "q_g", "q_gc", "q_m", "q_o", "q_a", "q_kv", "i_drop", "i_sp",
    "i_scores", "i_full", "M_gib"))
(r_a, a_q, a_k, a_v, a_o, a_g, a_up, a_gate, a_down, i_frozen, i_fa, q_f, i_keep_qkv,
 i_keep_o, i_keep_up, i_keep_down, i_keep_head, i_keep_mix, i_keep_exp) = (SYMBOLS[n] for n in (
    "r_a", "a_q", "a_k", "a_v", "a_o", "a_g", "a_up", "a_gate", "a_down", "i_frozen", "i_fa",
    "q_f", "i_keep_qkv", "i_keep_o", "i_keep_up", "i_keep_down", "i_keep_head", "i_keep_mix",
    "i_keep_exp"))
(a_experts, a_shared_expert_gate, a_in_proj, a_x_proj, a_dt_proj, a_out_proj, a_in_proj_qkvz,
 a_in_proj_ba) = (SYMBOLS[n] for n in (
    "a_experts", "a_shared_expert_gate", "a_in_proj", "a_x_proj", "a_dt_proj", "a_out_proj",
    "a_in_proj_qkvz", "a_in_proj_ba"))
H, c_h, W_gpu, PUE, I_grid = (SYMBOLS[n] for n in ("H", "c_h", "W_gpu", "PUE", "I_grid"))
i_off_o, i_off_p = SYMBOLS["i_off_o"], SYMBOLS["i_off_p"]
q_L, q_Lg = SYMBOLS["q_L"], SYMBOLS["q_Lg"]
q_l, q_8, F_8, R_8 = (SYMBOLS[n] for n in ("q_l", "q_8", "F_8", "R_8"))
q_lo, i_swr = SYMBOLS["q_lo"], SYMBOLS["i_swr"]
i_rnu, i_dual, i_head, L_w, N_mtp, N_mtp_e, i_mtps, q_ema = (SYMBOLS[n] for n in (
    "i_rnu", "i_dual", "i_head", "L_w", "N_mtp", "N_mtp_e", "i_mtps", "q_ema"))
i_hf, i_up, i_rope, i_eager = (SYMBOLS[n] for n in ("i_hf", "i_up", "i_rope", "i_eager"))
n_cp, n_ep, n_vp, i_vp = (SYMBOLS[n] for n in ("n_cp", "n_ep", "n_vp", "i_vp"))
L_s, L_sm, h_t = (SYMBOLS[n] for n in ("L_s", "L_sm", "h_t"))
L_s_att2, h_t2 = SYMBOLS["L_s_att2"], SYMBOLS["h_t2"]
L_s_kvs, L_s_kvs2, L_s_dw = (SYMBOLS[n] for n in ("L_s_kvs", "L_s_kvs2", "L_s_dw"))
B_bk, u_g, P_pf, q_rg = (SYMBOLS[n] for n in ("B_bk", "u_g", "P_pf", "q_rg"))
i_oib, N_big, i_ao, u_ao = (SYMBOLS[n] for n in ("i_oib", "N_big", "i_ao", "u_ao"))
i_qh, q_dq = (SYMBOLS[n] for n in ("i_qh", "q_dq"))
L_s_att, L_s_dense, L_s_ssm, L_s_dn, L_s_sc = (SYMBOLS[n] for n in (
    "L_s_att", "L_s_dense", "L_s_ssm", "L_s_dn", "L_s_sc"))
BW, u_bw, F_p, F_d, h_g, h_g2 = (SYMBOLS[n] for n in ("BW", "u_bw", "F_p", "F_d", "h_g", "h_g2"))
C, rho, E_irr, A_fit, B_fit, alpha, beta, r, t_days = (SYMBOLS[n] for n in (
    "C", "rho", "E_irr", "A_fit", "B_fit", "alpha", "beta", "r", "t_days"))

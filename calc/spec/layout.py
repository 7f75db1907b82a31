"""Layout: how one training step is spread over GPUs — the parallel degrees, the batch, the
memory-saving choices and the software stack.

Rank order (Megatron-LM's parallel_state: tensor innermost, then context, expert, data,
pipeline) decides which groups stay inside a node (`Layout.stride`).
Expert parallelism is carved out of data parallelism (Megatron-LM, expert_model_parallel_size
divides the data-parallel size), so gpus = tp·pp·dp·cp. Rules that need only the layout are
validators; rules that need the model (heads, layers, experts, sequence) are in `check`, which
returns the notes a valid but unusual layout deserves (replicated KV heads, uneven stages).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from calc.errors import CalcError, one_line
from calc.spec.model import MAX_TOKENS_CONTEXT, Frozen, ModelSpec

Recompute = Literal["none", "selective", "full"]
# What a run may ask for: a recomputation, or `auto`, the least of RECOMPUTE_ORDER that fits
# (calc.step, calc.memory resolve it before a Layout is built).
RecomputeChoice = Literal["none", "selective", "full", "auto"]
RECOMPUTE_ORDER: tuple[Recompute, ...] = ("none", "selective", "full")
# The software stack of a run, each with its constants in presets/timing.toml [frameworks]:
# NeMo counts as Megatron-LM; fsdp is plain PyTorch FSDP; hf is transformers' own models trained
# over PyTorch DDP/FSDP (Trainer, PEFT, TRL, axolotl, LLaMA-Factory: their activations are what
# transformers' modules save, calc.formulas.memory); litgpt is LitGPT's own model code over
# Lightning Fabric (its untied head and its 4-bit path, calc.spec.memory.STACKS); jax is
# MaxText-style XLA; other is an in-house stack a source does not name (Llama 3's, DeepSeek's),
# priced with Megatron-LM's.
Framework = Literal["megatron", "deepspeed", "torchtitan", "foundry", "fsdp", "hf", "litgpt",
                    "jax", "other"]
# The dtype of a run's matrix products and activations: fp8 runs keep 16-bit activations
# and weights (Transformer Engine's recipes), so their memory counts as bf16's.
TrainingDtype = Literal["bf16", "fp16", "fp32", "fp8"]
# Pipeline schedules (calc.timing.schedule prices each): 1F1B and its interleaved form
# (Narayanan et al. 2021), GPipe, Zero Bubble's handcrafted ZB-H1/ZB-H2 and its searched ZB-1p /
# ZB-2p with the activation memory capped at p and 2p micro-batches (Qi et al. 2024,
# arXiv:2401.10241 §2, §3), ZB-V, DualPipe (DeepSeek-AI 2024, arXiv:2412.19437 §3.2.1) and
# torch.distributed.pipelining's looped BFS.
PipelineSchedule = Literal["1f1b", "interleaved", "gpipe", "zb-h1", "zb-h2", "zb-1p", "zb-2p",
                           "zbv", "dualpipe", "looped-bfs"]
# fp8 scaling recipes: per-tensor scales from a history of amaxes (delayed) or from the tensor
# itself (current), one scale per row (torchao's float8 rowwise), per 32-element block (MXFP8),
# or per 1×128 / 128×128 tile (DeepSeek-V3's blockwise).
Fp8Recipe = Literal["delayed", "current", "rowwise", "mxfp8", "blockwise"]
MAX_DEGREE = 10_000_000  # GPUs in one parallel dimension (calc.spec.Workload.gpus allows as many)
MAX_BATCH = 1 << 30

# Korthikanti et al. 2022's activations (and Megatron-LM's of that time): eager attention that
# stores the s×s scores, dropout masks after attention and the MLP.
PAPER_2022 = {"flash_attention": False, "dropout": True}
# What current LLM training does, the default of every layout. FlashAttention (Dao et al. 2022)
# keeps no s×s scores, and current models train without dropout (the config.json of
# meta-llama/Llama-3.1-8B, deepseek-ai/DeepSeek-V3, Qwen/Qwen3-4B and allenai/OLMo-2-0425-1B:
# "attention_dropout": 0.0).
CURRENT_PRACTICE = {"flash_attention": True, "dropout": False}
# Activation offload (torchtune's OffloadActivations, torchtune/training/_activation_offloading.py
# at 1814feb17): the checkpointed layers' inputs kept on the GPU, the rest in pinned host memory.
# In the backward a brought-back input is freed only once the next autograd node starts (its
# hook waits on the previous node's event), so the input of the layer being recomputed and that
# of the layer before it are resident (calc.formulas.memory, CHECKPOINT_PER_TOKEN).
ACTIVATION_OFFLOAD_LAYERS = 2
ACTIVATION_OFFLOAD_SOURCE = (
    "torchtune torchtune/training/_activation_offloading.py OffloadActivations (1814feb17): "
    "saved tensors of at least min_offload_size = 1,024 bytes, not parameters, copied to "
    "pinned CPU memory on a second stream; the last max_fwd_stash_size = 5 kept until the "
    "backward; a brought-back tensor freed when the next autograd node starts; the output "
    "head under a NoOpManager")


class Parallelism(Frozen):
    """How the GPUs split the model and the batch (Narayanan et al. 2021 §2-3 notation: t, p,
    d, v), and how the data-parallel ranks share the model states (ZeRO)."""

    tp: int = Field(1, ge=1, le=MAX_DEGREE, description="tensor-parallel degree t")
    pp: int = Field(1, ge=1, le=MAX_DEGREE, description="pipeline-parallel degree p")
    dp: int = Field(1, ge=1, le=MAX_DEGREE, description="data-parallel degree d")
    cp: int = Field(1, ge=1, le=MAX_DEGREE,
                    description="context-parallel degree c: each GPU holds s/c of a sequence")
    ep: int = Field(1, ge=1, le=MAX_DEGREE,
                    description="expert-parallel degree e: routed experts split over e of the "
                                "d ranks")
    vpp: int = Field(1, ge=1, le=1024,
                     description="virtual pipeline stages per GPU v (interleaved 1F1B)")
    split_embedding_loss: bool = Field(
        False, description="the pipeline split counts the embedding and the loss as one layer "
                           "each, so the first and last stages hold one layer fewer")
    sequence_parallel: bool = Field(
        False, description="split norms and dropouts along the sequence over the t ranks")
    zero: Literal[0, 1, 2, 3] = Field(
        0, description="ZeRO stage over the d data-parallel ranks: 1 shards optimizer states, "
                       "2 also gradients, 3 also weights")
    allow_cross_node_tp: bool = Field(
        False, description="price tensor parallelism across nodes (refused by default: its "
                           "all-reduces then cross the slower inter-node links)")


class Batch(Frozen):
    """The sequences of one step: B in micro-batches of b, each s tokens long."""

    micro_batch: int = Field(1, ge=1, le=MAX_BATCH, description="sequences per micro-batch b")
    global_batch: int = Field(
        ge=1, le=MAX_BATCH, description="sequences per step B; default one micro-batch per "
                                        "data-parallel rank, p of them with a pipeline (what "
                                        "1F1B keeps in flight)")
    seq_len: int | None = Field(None, ge=1, le=MAX_TOKENS_CONTEXT,
                                description="sequence length s; default the model's context")


class Activations(Frozen):
    """What the forward pass keeps for the backward (Korthikanti et al. 2022 §4); defaults are
    CURRENT_PRACTICE, the paper's setting PAPER_2022."""

    recompute: RecomputeChoice = Field(
        "none", description="activation recomputation: none, selective (the attention core), "
                            "full (keep only each layer's input) or auto (the least that fits)")
    flash_attention: bool = Field(CURRENT_PRACTICE["flash_attention"],
                                  description="fused attention that stores no s×s scores")
    dropout: bool = Field(CURRENT_PRACTICE["dropout"],
                          description="dropout after attention and MLP (and on scores), its "
                                      "masks stored")
    activation_offload: bool = Field(
        False, description="each checkpointed layer's input to pinned host memory in the "
                           "forward, back in the backward (torchtune's "
                           "enable_activation_offloading); two layers' stay on the GPU; needs "
                           "recompute full")
    recompute_norm_up: bool = Field(
        False, description="recompute every norm and the MLA up-projections in the backward, "
                           "storing neither's output (DeepSeek-V3 report §3.2.3); the norms' "
                           "inputs and MLA's latents stay stored")


class Layout(Activations, Batch, Parallelism):  # fields in reverse order: Parallelism's first
    """One training step's parallel layout, batch, memory-saving choices, dtype and software
    stack (m = B / (d·b) micro-batches per pipeline)."""

    dtype: TrainingDtype = Field("bf16", description="dtype of the matrix products whose peak "
                                                     "prices them; activations stay 16-bit "
                                                     "under fp8")
    framework: Framework = Field("megatron", description="software stack of the run")
    pipeline_schedule: PipelineSchedule | None = Field(
        None, description="pipeline schedule; None: 1F1B, interleaved when vpp > 1")
    fp8_recipe: Fp8Recipe | None = Field(
        None, description="fp8 scaling recipe (dtype fp8); None: per-tensor current scaling")
    tp_overlap: bool = Field(False, description="tensor-parallel collectives overlapped with "
                                                "the products they feed (Megatron's "
                                                "--tp-comm-overlap, torchtitan's async TP)")

    @property
    def activation_dtype(self) -> str:
        """The dtype of stored activations and 16-bit weights: fp8 runs keep bf16's."""
        return "bf16" if self.dtype == "fp8" else self.dtype

    @model_validator(mode="before")
    @classmethod
    def _default_batch(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("global_batch") is None:
            degree = {key: data.get(key) or 1 for key in ("dp", "micro_batch", "pp")}
            data = {**data, "global_batch": degree["dp"] * degree["micro_batch"] * degree["pp"]}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Layout:
        if self.recompute == "auto":
            raise ValueError("recompute='auto' is resolved before a layout is built (calc.step "
                             "and calc.memory take the least recomputation that fits); give "
                             "none, selective or full")
        if self.activation_offload and self.recompute != "full":
            raise ValueError(f"activation_offload needs recompute='full' (got "
                             f"{self.recompute!r}): it moves the checkpointed layers' inputs "
                             f"(torchtune refuses it without activation checkpointing)")
        if self.activation_offload and self.pp > 1:
            raise ValueError(f"activation_offload with pp={self.pp} is not modelled (torchtune "
                             f"offloads on one pipeline stage); use pp=1")
        if self.vpp > 1 and self.pp == 1:
            raise ValueError(f"vpp={self.vpp} needs pp > 1 (virtual stages interleave a "
                             f"pipeline; pp=1 has none)")
        if self.split_embedding_loss and self.pp == 1:
            raise ValueError("split_embedding_loss needs pp > 1 (it balances pipeline stages; "
                             "pp=1 has one)")
        if self.dp % self.ep:
            raise ValueError(f"ep={self.ep} must divide dp={self.dp} (expert parallelism is "
                             f"carved out of the data-parallel ranks)")
        per_step = self.dp * self.micro_batch
        if self.global_batch % per_step:
            raise ValueError(
                f"global_batch={self.global_batch} is not divisible by dp × micro_batch = "
                f"{self.dp} × {self.micro_batch} = {per_step}")
        if self.vpp > 1 and self.micro_batches % self.pp:
            raise ValueError(
                f"the interleaved schedule (vpp={self.vpp}) needs micro-batches per step "
                f"m = global_batch / (dp × micro_batch) = {self.micro_batches} divisible by "
                f"pp={self.pp}")
        if self.pipeline_schedule not in (None, "1f1b") and self.pp == 1:
            raise ValueError(f"pipeline_schedule={self.pipeline_schedule!r} needs pp > 1 (a "
                             f"pipeline schedule orders the stages of a pipeline)")
        if self.pipeline_schedule == "dualpipe" and self.pp % 2:
            raise ValueError(f"pipeline_schedule='dualpipe' needs an even pp (got pp={self.pp}): "
                             f"it feeds micro-batches from both ends of the pipeline")
        if self.fp8_recipe is not None and self.dtype != "fp8":
            raise ValueError(f"fp8_recipe={self.fp8_recipe!r} needs dtype='fp8' "
                             f"(got dtype={self.dtype!r})")
        return self

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def label(self) -> str:
        """The layout in a line: degrees, batch, memory choices, dtype, stack."""
        degrees = f"tp {self.tp} · pp {self.pp}" + (f"×{self.vpp}" if self.vpp > 1 else "")
        degrees += " (embedding, loss as layers)" if self.split_embedding_loss else ""
        degrees += f" · dp {self.dp}" + (f" · cp {self.cp}" if self.cp > 1 else "")
        degrees += f" · ep {self.ep}" if self.ep > 1 else ""
        extras = [f"micro-batch {self.micro_batch}", f"global batch {self.global_batch}",
                  f"s {self.seq_len:,}" if self.seq_len else "",
                  f"recompute {self.recompute}" if self.recompute != "none" else "",
                  "norms and up-projections recomputed" if self.recompute_norm_up else "",
                  f"ZeRO {self.zero}" if self.zero else "",
                  "SP" if self.sequence_parallel else "",
                  "flash" if self.flash_attention else "eager",
                  f"{self.dtype} ({self.fp8_recipe})" if self.fp8_recipe else self.dtype,
                  self.framework, self.pipeline_schedule or "",
                  "TP overlap" if self.tp_overlap else ""]
        return ", ".join([degrees, *(e for e in extras if e)])

    @property
    def micro_batches(self) -> int:
        """m: micro-batches each pipeline runs per step."""
        return self.global_batch // (self.dp * self.micro_batch)

    def stride(self, group: str) -> int:
        """Rank distance between neighbours of a group (tp innermost, then cp, ep, dp, pp).
        ep groups lie inside dp groups; 'edp' is the dp/ep ranks that hold the same experts."""
        tp_cp = self.tp * self.cp
        strides = {"tp": 1, "cp": self.tp, "ep": tp_cp, "dp": tp_cp, "edp": tp_cp * self.ep,
                   "pp": tp_cp * self.dp}
        return strides[group]


def make_layout(gpus: int | None = None, **fields: Any) -> Layout:
    """A validated Layout; `dp` defaults to gpus / (tp·pp·cp), and a given `gpus` must equal
    tp·pp·dp·cp. `global_batch` defaults to dp × micro_batch (one micro-batch) without a
    pipeline; with pp > 1 it must be given (the bubble depends on it)."""
    fields = {key: value for key, value in fields.items() if value is not None}
    tp, pp, cp = (int(fields.get(k, 1)) for k in ("tp", "pp", "cp"))
    if min(tp, pp, cp) < 1:
        raise CalcError(f"tp, pp and cp must be >= 1 (got tp={tp}, pp={pp}, cp={cp})")
    model_parallel = tp * pp * cp
    if "dp" not in fields:
        if gpus is None:
            fields["dp"] = 1
        elif gpus % model_parallel:
            raise CalcError(f"gpus={gpus} is not divisible by tp × pp × cp = {tp} × {pp} × "
                            f"{cp} = {model_parallel}")
        else:
            fields["dp"] = gpus // model_parallel
    dp = int(fields["dp"])
    if gpus is not None and gpus != model_parallel * dp:
        raise CalcError(f"gpus={gpus} must equal tp × pp × dp × cp = {tp} × {pp} × {dp} × {cp} "
                        f"= {model_parallel * dp}")
    if "global_batch" not in fields:
        if pp > 1:
            raise CalcError(f"global_batch is needed with pp={pp}: the pipeline bubble "
                            f"depends on the micro-batches per step")
        fields["global_batch"] = dp * int(fields.get("micro_batch", 1))
    try:
        return Layout(**fields)
    except ValidationError as error:
        raise CalcError(one_line(error, "layout")) from None


def check(spec: ModelSpec, layout: Layout) -> tuple[Layout, list[str]]:
    """`layout` with seq_len resolved for `spec`, and notes on valid but unusual choices;
    CalcError naming the degree, the model field and what is allowed otherwise."""
    notes, name = check_splits(spec, layout.tp, layout.cp), spec.name
    _check_pipeline(spec, layout, notes)
    if layout.ep > 1:
        experts = spec.moe.n_experts if spec.moe is not None else 0
        if spec.moe is None:
            raise CalcError(f"ep={layout.ep} needs a mixture-of-experts model; {name} has no "
                            f"moe (use ep=1)")
        if experts % layout.ep:
            raise CalcError(f"ep={layout.ep} must divide moe.n_experts={experts} of {name}")
    seq_len = layout.seq_len if layout.seq_len is not None else spec.context_length
    if layout.cp > 1 and seq_len % (2 * layout.cp):
        raise CalcError(f"cp={layout.cp} needs seq_len={seq_len} divisible by 2 × cp = "
                        f"{2 * layout.cp} (each rank takes two chunks, one from each end, "
                        f"to balance the causal mask)")
    if spec.position.kind == "learned" and seq_len > spec.position_table:
        raise CalcError(f"seq_len={seq_len} exceeds the learned position table of {name} "
                        f"({spec.position_table} positions)")
    if layout.seq_len is None:
        layout = layout.model_copy(update={"seq_len": seq_len})
    return layout, notes


def check_splits(spec: ModelSpec, tp: int, cp: int, ffn: bool = True) -> list[str]:
    """The tensor- and context-parallel degrees checked against `spec`'s heads and widths
    (CalcError naming the field otherwise); notes on KV heads replicated. Without `ffn` the FFN
    widths are not checked (calc.memory counts a fractional split of them)."""
    notes, name = [], spec.name
    for field, units, what in tensor_parallel_units(spec, ffn):
        if units % tp:
            raise CalcError(f"tp={tp} must divide {field}={units} of {name} (tensor "
                            f"parallelism splits {what})")
    kv = spec.n_kv_heads
    if spec.has_attention and spec.attention.mla is None and kv % tp:
        if tp % kv:
            raise CalcError(f"tp={tp} and the {kv} KV heads of {name}: one must divide the other "
                            f"(KV heads are split t ways, or replicated when t > n_kv_heads)")
        notes.append(f"tp={tp} > n_kv_heads={kv}: each KV head is replicated on {tp // kv} "
                     f"tensor-parallel ranks (its projection computed {tp // kv} times)")
    others = sorted(set(spec.mixer_kinds) - {"attention"})
    if cp > 1 and others:
        raise CalcError(f"cp={cp}: context parallelism of {name}'s {', '.join(others)} layers "
                        f"is not modelled (ring attention splits attention layers); use cp=1")
    return notes


def tensor_parallel_units(spec: ModelSpec, ffn: bool = True) -> list[tuple[str, int, str]]:
    """(field, value, what) that the tensor-parallel degree must divide: attention heads, FFN
    and expert widths, and the heads or channels of the other mixers, split as Megatron-LM's
    MambaMixer (Mamba-2: heads and groups) and GatedDeltaNet (heads), and vLLM's MambaMixer
    (Mamba-1: channels), ShortConv (channels) and MiniMaxText01LinearAttention (heads) split
    them."""
    units = []
    if spec.has_attention:
        units.append(("attention.n_heads", spec.attention.n_heads, "the heads"))
    counts = spec.layer_counts
    if (counts["dense"] or spec.shared_block is not None) and ffn:
        units.append(("ffn.d_ff", spec.ffn.d_ff, "the FFN's hidden width"))
    if counts["moe"] and ffn and spec.moe.product_keys:
        # one-neuron experts: the rows of down_embed and up_embed are split (Doge's tp_plan:
        # embedding_rowwise), and the shared MLP's width
        units += [("moe.n_experts", spec.moe.n_experts, "the product-key experts' rows"),
                  ("moe.d_shared", spec.moe.shared_width, "the shared MLP's hidden width")]
    elif counts["moe"] and ffn:
        units.append(("moe.d_expert", spec.moe.d_expert, "the FFN's hidden width"))
    mamba, dn = spec.mamba, spec.deltanet
    if mamba is not None and mamba.version == 2:
        units += [("mamba.n_heads", mamba.n_heads, "the Mamba-2 heads"),
                  ("mamba.n_groups", mamba.n_groups, "the groups of B and C")]
    elif mamba is not None:
        units.append(("mamba.d_inner", mamba.d_inner, "the scan's channels"))
    if dn is not None:
        units.append(("deltanet.n_k_heads", dn.n_k_heads, "the DeltaNet heads"))
    if spec.lightning is not None:
        units.append(("lightning.n_heads", spec.lightning.n_heads, "the lightning heads"))
    if spec.rwkv is not None:
        units.append(("rwkv.d_attention", spec.rwkv.d_attention, "the WKV's channels"))
    if spec.griffin is not None:  # the gates split by whole blocks (and so the channels)
        units.append(("griffin.n_blocks", spec.griffin.n_blocks, "the RG-LRU's gate blocks"))
    if spec.mlstm is not None:  # the matrix memories split by whole heads
        units.append(("mlstm.n_heads", spec.mlstm.n_heads, "the mLSTM heads"))
    if spec.short_conv is not None:
        units.append(("d_model", spec.d_model, "the convolution's channels"))
    return units


def pipeline_slots(n_layers: int, layout: Layout) -> int:
    """What the pipeline split divides among the pp × vpp chunks: the layers, plus the embedding
    and the loss as one slot each under `split_embedding_loss` (Megatron-LM's
    --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split; Llama 3,
    arXiv:2407.21783 §3.3.2, removes one layer from the first and the last stage)."""
    return n_layers + 2 * layout.split_embedding_loss


def check_shared_pipeline(spec: ModelSpec, pp: int) -> None:
    """A pipeline would put the shared block's depths on several stages that each need its
    weights (and send their gradients to one another): not modelled."""
    if pp > 1 and spec.shared_block is not None:
        raise CalcError(f"pp={pp}: pipeline parallelism of {spec.name}'s shared block "
                        f"(shared_block: one set of weights for depths on several stages) is "
                        f"not modelled; use pp=1")


def _check_pipeline(spec: ModelSpec, layout: Layout, notes: list[str]) -> None:
    layers, pp, vpp = spec.n_layers, layout.pp, layout.vpp
    slots = pipeline_slots(layers, layout)
    what = (f"n_layers + 2 = {slots} (the embedding and the loss count as layers)"
            if layout.split_embedding_loss else f"n_layers={layers}")
    if pp > layers:
        raise CalcError(f"pp={pp} exceeds n_layers={layers} of {spec.name} (each pipeline "
                        f"stage needs a layer)")
    check_shared_pipeline(spec, pp)
    if pp * vpp > slots:
        raise CalcError(f"pp × vpp = {pp * vpp} exceeds {what} of {spec.name} (each virtual "
                        f"stage needs a layer)")
    chunks = pp * vpp
    if slots % chunks:
        notes.append(f"pp × vpp = {chunks} does not divide {what}: virtual stages hold "
                     f"{slots // chunks} or {-(-slots // chunks)} layers and the largest sets "
                     f"the pace")

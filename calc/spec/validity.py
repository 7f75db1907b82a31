"""The layouts each framework refuses: one table of rules, each with the frameworks that enforce
it and the file (at a commit) where each does.

calc.spec.layout.check holds calc's own limits (what its formulas can express) for every
layout, published runs included; the rules here are the frameworks' and apply to what calc
proposes or prices (calc.step, calc.memory, calc.layout): `refusal` names the first rule a
layout breaks under its `framework`, in one line, or None. A framework absent from a rule's
`enforced_by` does not enforce it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from calc.errors import CalcError
from calc.spec.layout import RECOMPUTE_ORDER, Layout, Recompute, pipeline_slots
from calc.spec.memory import STACKS
from calc.spec.model import ModelSpec

MEGATRON = "Megatron-LM (779c5b748d)"
TORCHTITAN = "torchtitan (8a2686c4a4)"
DEEPSPEED = "DeepSpeed (38327e07f6)"
EVERY = tuple(STACKS)  # every framework calc names (calc.spec.layout.Framework)


@dataclass(frozen=True)
class Model:
    """What the rules read of a model, read once (a search checks thousands of layouts)."""

    name: str
    heads: int  # query heads; 0 without attention layers
    kv_groups: int  # key/value heads; 0 without attention layers or under MLA
    layers: int
    experts: int  # routed experts; 0 without MoE
    context: int
    # query and key/value heads of the layers of a kind with their own (kind_shapes); 0: none
    kind_heads: int = 0
    kind_kv_groups: int = 0

    @classmethod
    def of(cls, spec: ModelSpec) -> Model:
        attention = spec.has_attention
        kind = spec.shaped_kind
        return cls(spec.name, spec.attention.n_heads if attention else 0,
                   spec.n_kv_heads if attention and spec.attention.mla is None else 0,
                   spec.n_layers, spec.moe.n_experts if spec.moe is not None else 0,
                   spec.context_length, spec.heads_of(kind)[0] if kind else 0,
                   spec.heads_of(kind)[1] if kind else 0)


@dataclass(frozen=True)
class Rule:
    requires: str  # the rule in a few words
    enforced_by: dict[str, str]  # framework → where it is enforced
    broken: Callable[[Model, Layout, int | None], str | None]  # why a layout breaks it


def _every(source: str) -> dict[str, str]:
    return dict.fromkeys(EVERY, source)


def _seq(spec: Model, lay: Layout) -> int:
    return lay.seq_len if lay.seq_len is not None else spec.context


def _cross_node(spec: Model, lay: Layout, per_node: int | None) -> str | None:
    if per_node is None or lay.tp <= per_node or lay.allow_cross_node_tp:
        return None
    return (f"tp={lay.tp} spans {-(-lay.tp // per_node)} nodes of {per_node} GPUs "
            f"(--allow-cross-node-tp prices it anyway)")


def _heads(spec: Model, lay: Layout, _: int | None) -> str | None:
    for heads in (spec.heads, spec.kind_heads):
        if heads and heads % lay.tp:
            return f"tp={lay.tp} does not divide the {heads} attention heads of {spec.name}"
    return None


def _kv_either(spec: Model, lay: Layout, _: int | None) -> str | None:
    for kv in (spec.kv_groups, spec.kind_kv_groups):
        if kv and kv % lay.tp and lay.tp % kv:
            return (f"tp={lay.tp} and the {kv} KV groups of {spec.name}: neither divides the "
                    f"other")
    return None


def _kv_divides(spec: Model, lay: Layout, _: int | None) -> str | None:
    for kv in (spec.kv_groups, spec.kind_kv_groups):
        if kv and kv % lay.tp:
            return f"tp={lay.tp} does not divide the {kv} KV heads of {spec.name}"
    return None


def _even_stages(spec: Model, lay: Layout, _: int | None) -> str | None:
    slots, chunks = pipeline_slots(spec.layers, lay), lay.pp * lay.vpp
    if slots % chunks == 0:
        return None
    what = (f"the {spec.layers} layers + embedding + loss" if lay.split_embedding_loss
            else f"the {spec.layers} layers")
    return (f"pp × vpp = {lay.pp} × {lay.vpp} does not divide {what} of {spec.name} (its "
            f"uneven split, --decoder-first/last-pipeline-num-layers, is not modelled)")


def _cp_sequence(spec: Model, lay: Layout, _: int | None) -> str | None:
    t = _seq(spec, lay)
    return None if lay.cp == 1 or t % (2 * lay.cp) == 0 else (
        f"seq_len={t} is not a multiple of 2 × cp = {2 * lay.cp}")


def _tp_cp_sequence(spec: Model, lay: Layout, _: int | None) -> str | None:
    t, divisor = _seq(spec, lay), lay.tp * 2 * lay.cp
    return None if t % divisor == 0 else (
        f"seq_len={t} is not a multiple of tp × 2 × cp = {divisor}")


def _experts(spec: Model, lay: Layout, _: int | None) -> str | None:
    if lay.ep == 1:
        return None
    experts = spec.experts
    if not experts or experts % lay.ep:
        return f"ep={lay.ep} does not divide the {experts} routed experts of {spec.name}"
    if lay.dp % lay.ep:
        return f"ep={lay.ep} does not divide the data-parallel degree dp={lay.dp}"
    return None


def _sequence_parallel(spec: Model, lay: Layout, _: int | None) -> str | None:
    return ("sequence parallelism with tp=1 splits nothing (drop --sequence-parallel)"
            if lay.sequence_parallel and lay.tp == 1 else None)


def _zero_offered(spec: Model, lay: Layout, _: int | None) -> str | None:
    stages = STACKS[lay.framework].zero
    if lay.zero in stages:
        return None
    offered = ", ".join(f"{stage} ({name})" for stage, name in stages.items())
    return f"ZeRO stage {lay.zero} is not one {lay.framework} runs (it has {offered})"


def _zero_pipeline(spec: Model, lay: Layout, _: int | None) -> str | None:
    return (f"ZeRO stage {lay.zero} with pp={lay.pp}" if lay.zero >= 2 and lay.pp > 1
            else None)


def _no_pipeline(spec: Model, lay: Layout, _: int | None) -> str | None:
    return f"pp={lay.pp}: {lay.framework} has no pipeline schedule" if lay.pp > 1 else None


# The stacks that recompute whole layers only, and where they do
WHOLE_LAYERS = {"hf": "transformers 5.24 modeling_utils.py activation_checkpointing_enable: "
                      "torch.utils.checkpoint around each decoder layer (every_n_layers), no "
                      "selective recomputation",
                "litgpt": "LitGPT litgpt/finetune/full.py (00af8b0d): FSDPStrategy("
                          "activation_checkpointing_policy={Block}), whole blocks only"}


def recomputations(framework: str | None, activation_offload: bool | None = False
                   ) -> tuple[Recompute, ...]:
    """The recomputations `framework` runs (None: a Layout's default), least first: what
    recompute='auto' tries; full only under activation offload, which moves checkpoints."""
    if activation_offload:
        return ("full",)
    framework = framework or Layout.model_fields["framework"].default
    return tuple(r for r in RECOMPUTE_ORDER
                 if not (r == "selective" and framework in WHOLE_LAYERS))


def _whole_layers(spec: Model, lay: Layout, _: int | None) -> str | None:
    return (f"recompute={lay.recompute!r}: {lay.framework} checkpoints whole layers (none or "
            f"full)" if lay.recompute == "selective" else None)


def _ddp_alone(spec: Model, lay: Layout, _: int | None) -> str | None:
    others = lay.tp * lay.pp * lay.cp
    return (f"unsharded data parallelism (ZeRO 0, DDP) beside tp × pp × cp = {others}"
            if lay.zero == 0 and lay.dp > 1 and others > 1 else None)


RULES: tuple[Rule, ...] = (
    Rule("tensor parallelism within a node",
         _every("calc's rule: tensor parallelism's all-reduces stay on the node's NVLink "
                "(Narayanan et al. 2021 §3.3, takeaway 1)"), _cross_node),
    Rule("tp divides the attention heads",
         {"megatron": f"{MEGATRON} megatron/core/transformer/attention.py:352 divide(heads, tp)",
          "torchtitan": f"{TORCHTITAN} torchtitan/models/llama3/model/model.py: whole heads "
                        f"per rank after the column-wise split of wq",
          "other": "Megatron-LM's rule (the stack calc prices an unnamed one with)"}, _heads),
    Rule("tp and the KV groups divide one another",
         {"megatron": f"{MEGATRON} megatron/core/transformer/attention.py:340-351 (groups "
                      f">= tp: divide(groups, tp); fewer groups than tp are sub-sharded, "
                      f"since core_v0.16.0; core_v0.15.3 and earlier refused tp > groups)",
          "other": "Megatron-LM's rule"}, _kv_either),
    Rule("tp divides the KV heads",
         {"torchtitan": f"{TORCHTITAN} torchtitan/models/llama3/model/model.py:143 (wk, wv "
                        f"of n_kv_heads · head_dim split column-wise into whole heads)"},
         _kv_divides),
    Rule("the layers divide evenly over pp × vpp",
         {"megatron": f"{MEGATRON} megatron/training/arguments.py:940 (layers, + 1 each with "
                      f"--account-for-embedding/loss-in-pipeline-split, divisible by pp) and "
                      f":915 (layers per stage divisible by layers per virtual stage)"},
         _even_stages),
    Rule("cp splits the sequence in 2 × cp chunks",
         {"megatron": f"{MEGATRON} megatron/training/arguments.py:1255",
          "other": "Megatron-LM's rule"}, _cp_sequence),
    Rule("tp × 2 × cp divides the sequence",
         {"torchtitan": f"{TORCHTITAN} torchtitan/models/llama3/infra/parallelize.py:62 "
                        f"(ParallelDims.seq_len_divisor: sequence parallelism needs tp, load-"
                        f"balanced context parallelism 2 × cp)"}, _tp_cp_sequence),
    Rule("ep divides the experts and the data-parallel group",
         {"megatron": f"{MEGATRON} megatron/core/transformer/moe/moe_layer.py:185 and "
                      f"megatron/core/parallel_state.py:787",
          "torchtitan": f"{TORCHTITAN} torchtitan/distributed/parallel_dims.py:61-64",
          "other": "Megatron-LM's rule"}, _experts),
    Rule("sequence parallelism needs tp > 1",
         _every(f"{MEGATRON} megatron/training/arguments.py:1350-1357 turns it off at tp = 1"),
         _sequence_parallel),
    Rule("the ZeRO stage is one the framework runs",
         {framework: f"calc.spec.memory.STACKS: {stack.source.split(';')[0]}"
          for framework, stack in STACKS.items()}, _zero_offered),
    Rule("ZeRO 2 and 3 without a pipeline",
         {"deepspeed": f"{DEEPSPEED} deepspeed/runtime/pipe/engine.py:78 ('ZeRO-2 and ZeRO-3 "
                       f"are incompatible with pipeline parallelism')"}, _zero_pipeline),
    Rule("no pipeline parallelism",
         {"fsdp": "PyTorch FSDP shards data-parallel ranks only (torch/distributed/fsdp/api.py "
                  "ShardingStrategy)",
          "hf": "transformers' Trainer shards data-parallel ranks only (DDP, or FSDP through "
                "accelerate)",
          "foundry": "llm-foundry trains with Composer's FSDP (fsdp_config), no pipeline",
          "litgpt": "LitGPT trains over Lightning Fabric's FSDPStrategy (litgpt/finetune/"
                    "full.py at 00af8b0d), no pipeline"},
         _no_pipeline),
    Rule("recomputation of whole layers only", WHOLE_LAYERS, _whole_layers),
    Rule("DDP only without other parallelism",
         {"torchtitan": f"{TORCHTITAN} torchtitan/models/llama3/infra/parallelize.py:139 "
                        f"('DDP has not supported > 1D parallelism')"}, _ddp_alone),
)


def refusal(spec: ModelSpec | Model, layout: Layout,
            gpus_per_node: int | None = None) -> str | None:
    """The first rule of RULES `layout` breaks under its framework, as one line naming the rule
    and where the framework enforces it; None when it breaks none. `gpus_per_node` None skips
    the node rule (no system known); a search passes the model read once (Model.of)."""
    model = spec if isinstance(spec, Model) else Model.of(spec)
    for rule in RULES:
        source = rule.enforced_by.get(layout.framework)
        if source is None:
            continue
        why = rule.broken(model, layout, gpus_per_node)
        if why is not None:
            who = "calc" if source.startswith("calc's rule") else layout.framework
            return f"{why}: {who} refuses it ({rule.requires}; {source})"
    return None


def refuse(spec: ModelSpec, layout: Layout, gpus_per_node: int | None = None) -> None:
    """CalcError with `refusal`'s line when `layout` breaks a rule of its framework."""
    why = refusal(spec, layout, gpus_per_node)
    if why is not None:
        raise CalcError(why)

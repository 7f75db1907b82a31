"""LoRA on the reference model, counted by torch: trainable parameters by numel and a training
step's FLOPs by FlopCounterMode, against calc.formulas.finetune.

Each adapted projection gets A (n_in × r) and B (r × n_out) beside its frozen weight (Hu et al.
2021 §4.1); the reference model's fused K|V projection gets one adapter per part. Every base
parameter is frozen. The token embedding's output is made to require a gradient so the first
layer's input gradients are computed too, as calc's convention counts them (autograd would
otherwise skip the products whose inputs need no gradient).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.utils.flop_counter import FlopCounterMode

from calc.spec import ModelSpec
from calc.spec.finetune import FineTune, resolve_targets
from calc.verify.altup import AltUp, Laurel
from calc.verify.attention import SplitKV
from calc.verify.count import StateCounter
from calc.verify.cross_attention import CrossAttention
from calc.verify.mixers import (
    DeltaNet,
    Griffin,
    Lightning,
    Mamba,
    Mlstm,
    Rwkv,
    RwkvChannelMix,
    ShortConv,
)
from calc.verify.model import Attention, FeedForward, PerLayerInput, build

# The reference mixers' projections and the targets that name them (calc.spec.finetune).
MIXER_PROJECTIONS = {"inp": "in_proj", "x": "x_proj", "dt": "dt_proj", "out": "out_proj",
                     "qkv": "qkv_proj", "gate": "output_gate"}


RWKV_FFN = {"up": "key", "down": "value"}
# Griffin's projections and the targets that name them (RecurrentGemmaRecurrentBlock's modules)
GRIFFIN_PROJECTIONS = {"y": "linear_y", "x": "linear_x", "out": "linear_out"}
# the mLSTM's projections and the targets that name them (xLSTMLayer's modules)
MLSTM_PROJECTIONS = {"q": "q", "k": "k", "v": "v", "ogate": "ogate_preact",
                     "igate": "igate_preact", "fgate": "fgate_preact", "out": "out_proj"}


class LoRA(nn.Module):
    """x ↦ (x·A)·B, rank r (the α/r scale is elementwise and counts no FLOPs)."""

    def __init__(self, n_in: int, n_out: int, rank: int, like: Tensor):
        super().__init__()
        options = {"device": like.device, "dtype": like.dtype}
        self.a = nn.Linear(n_in, rank, bias=False, **options)
        self.b = nn.Linear(rank, n_out, bias=False, **options)

    def forward(self, x: Tensor) -> Tensor:
        return self.b(self.a(x))


class Adapted(nn.Module):
    """A frozen linear plus adapters on slices of its output (None: that slice has none)."""

    def __init__(self, base: nn.Linear, parts: list[tuple[int, LoRA | None]]):
        super().__init__()
        self.base = base
        self.widths = [width for width, _ in parts]
        self.adapters = nn.ModuleList(adapter or nn.Identity() for _, adapter in parts)
        self.on = [adapter is not None for _, adapter in parts]

    @property
    def out_features(self) -> int:  # read by the reference Mamba's split
        return self.base.out_features

    def forward(self, x: Tensor) -> Tensor:
        pieces = [adapter(x) if on else x.new_zeros(*x.shape[:-1], width)
                  for adapter, on, width in zip(self.adapters, self.on, self.widths, strict=True)]
        return self.base(x) + torch.cat(pieces, dim=-1)


def _adapt(base: nn.Linear, widths: list[int], on: list[bool], rank: int) -> Adapted:
    parts = [(width, LoRA(base.in_features, width, rank, base.weight) if wanted else None)
             for width, wanted in zip(widths, on, strict=True)]
    return Adapted(base, parts)


def add_adapters(model: nn.Module, spec: ModelSpec, finetune: FineTune) -> nn.Module:
    """Freeze `model` (built from `spec`) and attach the adapters `finetune` names, in place."""
    targets = set(resolve_targets(spec, finetune))
    if spec.moe is not None and targets & {"up", "gate", "down", "experts",
                                           "shared_expert_gate"}:
        raise NotImplementedError("adapters on stacked expert weights are not built here")
    att = spec.attention
    fused_gate = (att.output_gate and att.output_gate_per == "channel"
                  and not (att.output_gate_own or att.output_gate_bias))
    if fused_gate and "q" in targets:
        raise NotImplementedError("transformers fuses the output gate into q_proj; the "
                                  "reference model keeps it apart")
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    r = finetune.rank
    for module in list(model.layers.modules()):  # not the MTP blocks, which calc counts apart
        if isinstance(module, Attention):
            # MLA's queries come through its latent projections, no q target (calc's "q" is
            # then another mixer's, the mLSTM's)
            if "q" in targets and module.mla is None:
                module.q = _adapt(module.q, [module.q.out_features], [True], r)
            # the layer's own K/V heads (attention.kind_shapes); a kv-shared layer has none, a
            # layer whose keys are its values no W_V
            # Inkling 2's full layers: k_proj and v_proj apart (SplitKV; MLA has no kv)
            if isinstance(getattr(module, "kv", None), SplitKV):
                for name in ("k", "v"):
                    part = getattr(module.kv, name)
                    if name in targets:
                        setattr(module.kv, name, _adapt(part, [part.out_features], [True], r))
            elif targets & {"k", "v"} and module.kv is not None:
                # keys alone: they are the values, or CCA's values are their own projections
                if module.k_eq_v or module.cca is not None:
                    kv_widths, on = [module.h_kv * module.d_qk], ["k" in targets]
                else:
                    kv_widths = [module.h_kv * module.d_qk, module.h_kv * module.d_v]
                    on = ["k" in targets, "v" in targets]
                module.kv = _adapt(module.kv, kv_widths, on, r)
            if "o" in targets:
                module.o = _adapt(module.o, [module.o.out_features], [True], r)
            if "g" in targets:  # a gate's own projection (g_proj, gate_proj)
                module.gate = _adapt(module.gate, [module.gate.out_features], [True], r)
            if "dt_proj" in targets and module.dynamic is not None:  # Doge's dynamic mask
                dt = module.dynamic.dt_proj
                module.dynamic.dt_proj = _adapt(dt, [dt.out_features], [True], r)
            relative = module.relative_logits  # Inkling's r_proj
            if "r" in targets and relative is not None:
                relative.r = _adapt(relative.r, [relative.r.out_features], [True], r)
            if "sink" in targets and module.sink_proj is not None:  # Inkling 2's sink_proj
                module.sink_proj = _adapt(module.sink_proj, [module.sink_proj.out_features],
                                          [True], r)
        elif isinstance(module, CrossAttention):  # PEFT's q/k/v/o_proj name these too
            for name in ("q", "k", "v", "o"):
                linear = getattr(module, name)
                if name in targets:
                    setattr(module, name, _adapt(linear, [linear.out_features], [True], r))
        elif isinstance(module, FeedForward):
            for name in ("up", "gate", "down"):
                linear = getattr(module, name)
                # RWKV's FFN is its channel-mix: its up and down are PEFT's key and value
                target = RWKV_FFN.get(name, name) if spec.layer_counts["rwkv"] else name
                if target in targets and linear is not None:
                    setattr(module, name, _adapt(linear, [linear.out_features], [True], r))
        elif isinstance(module, DeltaNet):  # one fused in_proj: q, k, v, z | β, α
            qkvz, ba = sum(module.widths[:4]), sum(module.widths[4:])
            if targets & {"in_proj_qkvz", "in_proj_ba"}:
                module.inp = _adapt(module.inp, [qkvz, ba], ["in_proj_qkvz" in targets,
                                                             "in_proj_ba" in targets], r)
            if "out_proj" in targets:
                module.out = _adapt(module.out, [module.out.out_features], [True], r)
        elif isinstance(module, (Rwkv, RwkvChannelMix)):
            for name in ("key", "value", "receptance", "output"):
                linear = getattr(module, name, None)
                if name in targets and isinstance(linear, nn.Linear):
                    setattr(module, name, _adapt(linear, [linear.out_features], [True], r))
        elif isinstance(module, (Griffin, Mlstm)):
            projections = GRIFFIN_PROJECTIONS if isinstance(module, Griffin) else MLSTM_PROJECTIONS
            for name, target in projections.items():
                linear = getattr(module, name)
                if target in targets:
                    setattr(module, name, _adapt(linear, [linear.out_features], [True], r))
        elif isinstance(module, (AltUp, Laurel)):  # Gemma 3n's nn.Linear modules
            names = (("router", "modality_router"), ("prediction", "prediction_coefs"),
                     ("correction", "correction_coefs"), ("left", "linear_left"),
                     ("right", "linear_right"))
            for name, target in names:
                linear = getattr(module, name, None)
                if target in targets and isinstance(linear, nn.Linear):
                    setattr(module, name, _adapt(linear, [linear.out_features], [True], r))
        elif isinstance(module, PerLayerInput):  # per_layer_input_gate, per_layer_projection
            for name, target in (("gate", "per_layer_input_gate"),
                                 ("projection", "per_layer_projection")):
                linear = getattr(module, name)
                if target in targets:
                    setattr(module, name, _adapt(linear, [linear.out_features], [True], r))
        elif isinstance(module, (Mamba, Lightning, ShortConv)):
            for name, target in MIXER_PROJECTIONS.items():
                linear = getattr(module, name, None)
                if target in targets and isinstance(linear, nn.Linear):
                    setattr(module, name, _adapt(linear, [linear.out_features], [True], r))
    streams = getattr(model, "altup", None)  # AltUp's projections into and out of the streams
    for name, target in (("into", "altup_projections"), ("out", "altup_unembed_projections")):
        if streams is not None and target in targets:
            linears = getattr(streams, name)
            for i, linear in enumerate(linears):
                linears[i] = _adapt(linear, [linear.out_features], [True], r)
    projection = getattr(model, "ple_projection", None)
    if "per_layer_model_projection" in targets and projection is not None:
        model.ple_projection = _adapt(projection, [projection.out_features], [True], r)
    # a drafter's projections and a centroid head's centroids (calc.spec.finetune)
    for owner, name, target in ((model, "pre_projection", "pre_projection"),
                                (model, "post_projection", "post_projection"),
                                (model.lm_head, "centroids", "centroids")):
        linear = getattr(owner, name, None)
        if target in targets and linear is not None:
            setattr(owner, name, _adapt(linear, [linear.out_features], [True], r))
    return model


@dataclass(frozen=True)
class FineTuneCount:
    trainable: int
    frozen: int
    forward: int  # matrix products, convolutions and a scan's state arithmetic (StateCounter)
    backward: int  # FlopCounterMode's: matrix products and convolutions only


def count_finetune(spec: ModelSpec, finetune: FineTune, seq_len: int,
                   device: str = "meta") -> FineTuneCount:
    """Trainable/frozen numel and one step's FLOPs (full T×T attention, torch's count)."""
    model = add_adapters(build(spec, device), spec, finetune)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    hook = model.token.register_forward_hook(
        lambda _module, _inputs, output: output.detach().requires_grad_(True))
    ids = torch.zeros(1, seq_len, dtype=torch.long, device=device)
    with FlopCounterMode(display=False) as forward, StateCounter() as state:
        logits = model(ids)
    with FlopCounterMode(display=False) as backward:
        logits.float().sum().backward()
    hook.remove()
    return FineTuneCount(trainable, frozen, forward.get_total_flops() + sum(state.counts.values()),
                         backward.get_total_flops())

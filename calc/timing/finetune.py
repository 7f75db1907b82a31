"""A fine-tune's step on a frozen base (LoRA, Hu et al. 2021; QLoRA, Dettmers et al. 2023): what
changes in the compute, the gradients and the optimizer when only adapters train.

- The frozen projections' backward computes input gradients only: 1 × their forward
  (calc.counting.FROZEN_BACKWARD_PER_FORWARD), the LM head's too; attention keeps its own.
- Each adapter x·A·B runs as PEFT's eager LoRA layer does (peft/tuners/lora/layer.py,
  Linear.forward: result + lora_B(lora_A(dropout(x))) * scaling): x·A reads the layer's input
  again and writes r per token, ·B reads r and writes n_out, the scaling and the add read and
  write n_out again (6 × n_out); each product is priced like every other (compute.matmul's
  roofline: a rank-r product is skinny and mostly bound by those bytes). Adapters train in
  full: backward 2 × forward.
- QLoRA dequantises every 4-bit weight before each use (bitsandbytes' dequantize_4bit inside
  Linear4bit's forward and again in MatMul4Bit's backward): read the 4-bit blocks and their
  constants, write a 16-bit matrix, at the HBM rate, once per forward, per backward and per
  recomputed forward.
- Gradients reduced over data parallelism and the optimizer step touch the adapters only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from calc.counting import FROZEN_BACKWARD_PER_FORWARD
from calc.evaluate import count_adapters, count_params, finetune_values
from calc.spec import BYTES_PER_ELEMENT, ModelSpec
from calc.spec.finetune import FFN_TARGETS, FineTune, ffn_widths, target_shapes
from calc.timing.compute import ComputeTimes, Device, tokens_per_micro_batch
from calc.timing.kernels import ACTIVATION_BYTES
from calc.timing.operators import ModelTerms

# PEFT's LoRA layer after the base product: lora_B writes n_out, `* scaling` reads and writes
# n_out, `result + ...` reads 2 and writes 1 (no fusion in eager mode).
ADAPTER_OUTPUT_PASSES = 6
# x·A reads the input and writes r; ·B reads r.
ADAPTER_RANK_PASSES = 2
ADAPTER_BACKWARD_PER_FORWARD = 2  # input and weight gradients, like any trained product
# Dequantisations of each 4-bit weight per micro-batch: the forward and the backward
# (MatMul4Bit dequantises again for the input gradient), and the recomputed forward if any.
DEQUANT_PASSES = {"none": 2, "selective": 2, "full": 3}


@dataclass(frozen=True)
class AdapterTerm:
    """One target's adapters, per token over all layers (routed experts: the top-k a token
    reaches): the summed input and output widths of the matrices it runs through."""

    name: str
    inputs: float  # Σ n_in
    outputs: float  # Σ n_out
    matrices: float  # adapted matrices a token runs through


@dataclass(frozen=True)
class FineTuneTerms:
    """What a frozen-base fine-tune adds to and removes from a step, whole model."""

    method: str
    rank: int
    adapters: tuple[AdapterTerm, ...]
    trainable: int  # adapter parameters
    params: int  # every parameter of the model
    quantised: int  # 4-bit weights (QLoRA), else 0
    quant_bytes: float  # bytes per 4-bit weight, block constants included

    @property
    def adapter_flops(self) -> float:
        """Forward FLOPs per token of every adapter: 2·r·(n_in + n_out) per matrix."""
        return sum(2 * self.rank * (a.inputs + a.outputs) for a in self.adapters)


def _layers_of(spec: ModelSpec, target: str, index: int) -> float:
    """Layers (per token: routed experts × top-k) the `index`-th matrix of `target` sits in:
    calc.spec.finetune.target_shapes lists them in this order."""
    counts, moe = spec.layer_counts, spec.moe
    if target in ("q", "k", "v") and spec.layer_counts["mlstm"] and (
            index == len(target_shapes(spec)[target].matrices) - 1):  # the mLSTM's, last
        return counts["mlstm"]
    # the model's head shapes, then a kind's own
    if target in ("q", "k", "v", "o", "g", "r", "sink"):
        own = spec.shaped_layers
        layers = counts["attention"] - own if index == 0 else own
        if target in ("k", "v"):  # none on the kv-shared layers, no W_V where k_eq_v
            shared, shared_own, _, _ = spec.kv_shared_counts
            layers -= shared - shared_own if index == 0 else shared_own
            kind = (spec.shaped_kind or "") if index else ""
            if target == "v" and spec.keys_are_values(kind):
                return 0
        return layers
    if target in FFN_TARGETS:  # the dense FFNs' widths first, then the shared experts'
        return ffn_widths(spec)[index][1]
    if target == "experts":
        assert moe is not None
        return counts["moe"] * moe.experts_per_token
    if target == "shared_expert_gate":
        return counts["moe"]
    if target in ("key", "value", "receptance", "output"):  # RWKV: every matrix on each layer
        return counts["rwkv"]
    if target in ("linear_y", "linear_x", "linear_out"):  # Griffin's recurrent block
        return counts["griffin"]
    if target in ("ogate_preact", "igate_preact", "fgate_preact"):  # the mLSTM's gates
        return counts["mlstm"]
    if target in ("per_layer_input_gate", "per_layer_projection"):  # every layer's
        return spec.n_layers
    if target in ("per_layer_model_projection", "pre_projection", "post_projection",
                  "centroids"):  # the model's, once
        return 1
    if target in ("linear_left", "linear_right", "modality_router", "prediction_coefs",
                  "correction_coefs"):  # Gemma 3n's LAuReL and AltUp: every layer's
        return spec.n_layers
    if target in ("altup_projections", "altup_unembed_projections"):  # n − 1 of each
        assert spec.altup is not None
        return spec.altup.streams - 1
    if target == "dt_proj" and spec.attention.dynamic_mask is not None:  # Doge's, a layer
        return counts["attention"]
    # the mixers' projections, in calc.spec.finetune._mixer_shapes's order
    order = {"in_proj": ("mamba", "conv"),
             "out_proj": ("mamba", "deltanet", "lightning", "mlstm", "conv"),
             "x_proj": ("mamba",), "dt_proj": ("mamba",), "in_proj_qkvz": ("deltanet",),
             "in_proj_ba": ("deltanet",), "qkv_proj": ("lightning",),
             "output_gate": ("lightning",)}[target]
    present = [kind for kind in order if counts[kind]]
    return counts[present[index]]


def adapter_terms(spec: ModelSpec, targets: tuple[str, ...]) -> tuple[AdapterTerm, ...]:
    """Each target's matrices a token runs through, summed over the layers."""
    shapes = target_shapes(spec)
    gated = spec.ffn is not None and spec.ffn.gated
    terms = []
    for target in targets:
        inputs = outputs = matrices = 0.0
        for index, (n_in, n_out) in enumerate(shapes[target].matrices):
            layers = _layers_of(spec, target, index)
            if target == "experts" and index == 0 and gated:  # up and gate, each d × d_e
                layers *= 2
            inputs += n_in * layers
            outputs += n_out * layers
            matrices += layers
        terms.append(AdapterTerm(target, inputs, outputs, matrices))
    return tuple(terms)


def finetune_terms(spec: ModelSpec, finetune: FineTune, dtype: str) -> FineTuneTerms | None:
    """The fine-tune's terms; None for full fine-tuning (priced as training)."""
    if not finetune.frozen_base:
        return None
    counts = count_adapters(spec, finetune)
    q_f = finetune_values(finetune, counts.targets, BYTES_PER_ELEMENT[dtype])["q_f"]
    return FineTuneTerms(
        method=finetune.method, rank=finetune.rank,
        adapters=adapter_terms(spec, counts.targets), trainable=counts.trainable,
        params=count_params(spec).total, quantised=counts.quantised, quant_bytes=float(q_f))


def _adapter_time(ft: FineTuneTerms, tokens: float, stage: float, tp: int,
                  device: Device) -> float:
    """Forward seconds of every adapter for `tokens` over a `stage` share of the layers: each
    target's two products, the slower of their FLOPs (the shape's efficiency) and bytes."""
    r, q = ft.rank, ACTIVATION_BYTES
    total = 0.0
    for a in ft.adapters:
        if not a.matrices:
            continue
        n_in, n_out = a.inputs / a.matrices, a.outputs / a.matrices  # the mean matrix
        calls = a.matrices * stage / tp
        flops = 2 * r * (n_in + n_out) * tokens * calls
        efficiency = (device.gemm_efficiency(tokens, r, n_in) * n_in
                      + device.gemm_efficiency(tokens, n_out, r) * n_out) / (n_in + n_out)
        traffic = calls * q * (tokens * (n_in + ADAPTER_RANK_PASSES * r
                                         + ADAPTER_OUTPUT_PASSES * n_out) + r * (n_in + n_out))
        total += max(flops / (device.gemm_peak * efficiency), traffic / device.hbm)
    return total


def frozen_times(work: ComputeTimes, terms: ModelTerms, ft: FineTuneTerms, layout,
                 device: Device, stage: float, head: float) -> ComputeTimes:
    """`work` (a full training micro-batch) on a frozen base with `ft`'s adapters: the frozen
    products' backward at 1 × forward, the head's too (`head` its product's forward seconds),
    the adapters' products and QLoRA's dequantisation added. `stage` is the stage's share of
    the layers."""
    tokens = tokens_per_micro_batch(terms, layout)
    slow = 1 / device.compute_efficiency
    adapters = _adapter_time(ft, tokens, stage, layout.tp, device) * slow
    dequant = (ft.quantised * stage / layout.tp * (ft.quant_bytes + device.gemm_bytes)
               / device.hbm * slow)
    recomputed = layout.recompute == "full"
    saved = (2 - FROZEN_BACKWARD_PER_FORWARD) * head * slow  # the head's weight gradient
    return replace(
        work, weight_gradients=False, head_backward=work.head_backward - saved,
        adapters=adapters, adapters_backward=ADAPTER_BACKWARD_PER_FORWARD * adapters,
        dequant=dequant, dequant_backward=dequant * (DEQUANT_PASSES[layout.recompute] - 1),
        recompute=work.recompute + (adapters if recomputed else 0.0))


def trainable_share(ft: FineTuneTerms | None) -> float:
    """The share of the parameters whose gradients are reduced and updated."""
    return 1.0 if ft is None else ft.trainable / ft.params

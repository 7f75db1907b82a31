"""`verify(spec)`: calc's formulas against the model torch builds from the same spec, exactly.

Parameters are compared per component; forward FLOPs per component and per operator under the
`full` attention convention (what FlopCounterMode sees: every computed product); backward must
be exactly calc.counting.BACKWARD_PER_FORWARD × forward. With `hf=True` the same config also
goes through transformers' own implementation (calc.verify.hf_reference), the count nobody here
wrote. The report model needs
no torch; building and counting import it.
"""

from __future__ import annotations

import time
from importlib.util import find_spec
from typing import Any

from pydantic import Field

from calc.counting import BACKWARD_PER_FORWARD
from calc.document import Document
from calc.errors import CalcError, install
from calc.evaluate import count_flops, count_params
from calc.host import memory_errors, require_memory
from calc.spec import ModelSpec
from calc.spec.model import Frozen

CONVENTIONS = [
    "Parameters: unique tensors of the built model (torch's named_parameters, a tied weight "
    "once), attributed to calc's components by module.",
    "FLOPs: torch.utils.flop_counter.FlopCounterMode over one forward pass of `batch` "
    "sequences of `seq_len` tokens on the chosen device; calc's side is the full attention "
    "convention (every computed QKᵀ and A·V product), per token × seq_len × batch.",
    f"Backward: FlopCounterMode over loss.backward(); its matrix products must be exactly "
    f"{BACKWARD_PER_FORWARD} × the forward's (convolutions apart: torch's count of a depthwise "
    f"conv's weight gradient ignores its groups).",
    "Scans (Mamba, gated DeltaNet, lightning attention, RWKV's WKV, Griffin's RG-LRU, xLSTM's "
    "mLSTM): run token by token; each "
    "multiply, add or subtract on the "
    "state counted as one FLOP per element by calc.verify.count.StateCounter, its reads as "
    "matmuls by FlopCounterMode.",
    "DeepSeek Sparse Attention, MiniMax-M3's block-sparse attention and Qwen4-Exp's QSA: the "
    "indexer's top-k "
    "selection passes no gradient, so torch's backward has none of the indexer's products (its "
    "projections and its scores over every key); the backward check leaves them out. calc's "
    "training FLOPs count the indexer as trained (3 × forward), as by a loss of its own.",
    "DeepSeek-V4's compressed layers: the CSA indexer's selection passes no gradient either "
    "(its compressor, projections and scores over the entries), nor does a compressor before "
    "its first whole window (no entry reads its projections); the backward check leaves them "
    "out, and calc's training FLOPs count them as trained.",
    "MoE: each token goes to exactly top-k experts (the router's top-k on real tensors, a "
    "balanced assignment on the meta device, which has no values).",
]


# Counting FLOPs runs a forward and a backward pass: fp32 weights and their gradients, 4 + 4
# bytes per parameter, before any activation.
VERIFY_BYTES_PER_PARAM = 8


class Check(Frozen):
    quantity: str
    calc: int
    torch: int | None
    match: bool


class HFComparison(Frozen):
    """calc against transformers' own model built from the same config (meta device)."""

    compared: bool
    reason: str = Field("", description="why not compared (or what was not), when not")
    model_type: str | None = None
    seq_len: int | None = None
    checks: list[Check] = Field(default_factory=list)
    device: str = Field("meta", description="where transformers' model was built and run")


class VerifyReport(Document):
    model: str
    seq_len: int
    batch: int
    device: str
    params: list[Check]
    flops: list[Check]
    operators: dict[str, int] = Field(description="forward FLOPs per aten operator")
    hf: HFComparison | None = None
    seconds: float = Field(description="wall time of building and counting")
    conventions: list[str] = Field(default_factory=lambda: list(CONVENTIONS))

    @property
    def ok(self) -> bool:
        checks = [*self.params, *self.flops, *(self.hf.checks if self.hf else [])]
        return all(check.match for check in checks)

    def to_dict(self) -> dict[str, Any]:
        return {**self.model_dump(mode="json"), "ok": self.ok}


def _whole(count: float) -> float:
    """A per-token count times the tokens: a whole number up to float rounding (windowed and
    chunked attention's per-token counts are fractions over T); anything else stays as it is,
    to fail the check."""
    whole = round(count)
    return whole if abs(count - whole) <= 1e-9 * max(1.0, abs(count)) else count


def _checks(calc_side: dict[str, int], torch_side: dict[str, int], total: str) -> list[Check]:
    keys = [*calc_side, *(k for k in torch_side if k not in calc_side)]
    checks = [Check(quantity=k, calc=calc_side.get(k, 0), torch=torch_side.get(k, 0),
                    match=calc_side.get(k, 0) == torch_side.get(k, 0)) for k in keys]
    a, b = sum(calc_side.values()), sum(torch_side.values())
    return [*checks, Check(quantity=total, calc=a, torch=b, match=a == b)]


def verify(spec: ModelSpec, seq_len: int | None = None, *, batch: int = 1,
           device: str = "meta", hf: bool = False,
           hf_config: dict | None = None) -> VerifyReport:
    """Build `spec` in torch and compare every count with calc's formulas; with `hf`, also
    with transformers' model of `hf_config` (or of the spec's export when none is given)."""
    from calc.verify.count import count_flops as torch_flops
    from calc.verify.count import count_parameters
    from calc.verify.model import build

    t = seq_len or min(spec.context_length, 128)
    analytic = count_params(spec)
    if device != "meta":  # real tensors: refuse before building what the machine cannot hold
        n = analytic.total + analytic.mtp
        require_memory(VERIFY_BYTES_PER_PARAM * n,
                       f"verify on {device}: {spec.name}'s {n:,} fp32 parameters and their "
                       f"gradients", "use --device meta (the default), which counts any size "
                       "without memory")
    start = time.perf_counter()
    with memory_errors(f"verify {spec.name} on {device} ({batch} × {t} tokens)",
                       "use --device meta, or a smaller --batch or --seq-len"):
        model = build(spec, device)
        counted_params = count_parameters(model)
        counted = torch_flops(model, t, batch)
    counted_mtp = sum(v for k, v in counted_params.items() if k.startswith("mtp/"))
    param_checks = _checks({k: v for k, v in analytic.components.items() if v},
                           {k: v for k, v in counted_params.items() if not k.startswith("mtp/")},
                           "total")
    if analytic.mtp or counted_mtp:
        param_checks.append(Check(quantity="multi-token prediction (apart)", calc=analytic.mtp,
                                  torch=counted_mtp, match=analytic.mtp == counted_mtp))
    flops = count_flops(spec, t, "full")
    analytic_flops = {k: _whole(v * t * batch) for k, v in flops.components.items() if v}
    flop_checks = _checks(analytic_flops, counted.forward_by_component, "forward")
    # FlopCounterMode's convolution backward ignores `groups` in the weight gradient (a
    # depthwise conv's comes out C times too large; torch/utils/flop_counter.py,
    # conv_backward_flop), so the check multiplies the matrix products only.
    conv = counted.forward_by_operator.get("aten.convolution", 0)
    backward = BACKWARD_PER_FORWARD * (counted.matmul_forward - conv
                                       - _selection(spec, counted.forward_by_component, t, batch))
    torch_backward = (None if counted.backward is None else counted.backward
                      - counted.backward_by_operator.get("aten.convolution_backward", 0))
    flop_checks.append(Check(quantity=f"backward ({BACKWARD_PER_FORWARD} × forward matrix "
                                      f"products)", calc=backward,
                             torch=torch_backward, match=backward == torch_backward))
    comparison = None
    if hf:
        comparison = compare_with_transformers(spec, t, hf_config)
    return VerifyReport(
        model=spec.name, seq_len=t, batch=batch, device=device,
        params=param_checks,
        flops=flop_checks, operators=counted.forward_by_operator, hf=comparison,
        seconds=time.perf_counter() - start)


def _selection(spec: ModelSpec, by_component: dict[str, int], t: int, batch: int) -> int:
    """The forward FLOPs no gradient reaches: DSA's indexers (their projections, and their
    scores q·k and head sum over all t keys of each of t queries: 2·h_I·(d_I + 1) per pair;
    MiniMax-M3's, without MLA, have no head sum: 2·h_I·d_I; Qwen4-Exp's QSA over the ⌊t/B⌋
    pooled keys);
    DeepSeek-V4's CSA indexers (the same over the ⌊t/m⌋ entries) and its compressors while t
    is shorter than their window (they make no entry)."""
    att = spec.attention
    indexer, comp = att.indexer, att.compression
    total = 0
    if indexer is not None:
        weights = int(att.mla is not None)
        # QSA's scores are over the ⌊t/B⌋ pooled keys of the complete blocks
        keys = t // indexer.block_size if indexer.pooled else t
        scores = 2 * indexer.n_heads * (indexer.head_dim + weights) * t * keys * batch
        total += by_component.get("attention/indexer", 0) + spec.n_indexer_layers * scores
    if comp is not None:
        if comp.indexer is not None:
            entries = t // comp.sparse_rate
            scores = 2 * comp.indexer.n_heads * (comp.indexer.head_dim + 1) * t * entries * batch
            total += by_component.get("attention/indexer", 0) + spec.n_sparse_layers * scores
        # kv_proj and gate_proj, d → 2·d_qk on a CSA layer, d → d_qk on an HCA one
        projection = 2 * 2 * spec.d_model * spec.head_dim_qk * t * batch
        if t < comp.sparse_rate:
            total += spec.n_sparse_layers * 2 * projection
        if t < comp.heavy_rate:
            total += spec.n_heavy_layers * projection
    return total


def hf_seq_len(spec: ModelSpec, seq_len: int) -> int:
    """transformers' eager attention computes the whole masked T×T square even in a sliding-
    window or chunked layer, where calc's full convention counts w keys (or a chunk's), and masks
    the keys DSA's indexer did not select, where calc counts its top-k (DeepseekV32Attention
    folds them into the attention mask on the eager and SDPA paths): compare where the two
    agree."""
    att, n = spec.attention, spec.layer_counts
    limits = [seq_len, *([att.sliding_window] if n["local"] and att.sliding_window else []),
              *([att.chunk_size] if n["chunked"] and att.chunk_size else [])]
    return min(limits)


# Parameters up to which `verify --hf` runs on the CPU the forward of a type the meta device
# cannot run (calc.verify.hf_reference.META_FORWARD_UNRUNNABLE): a few seconds at T = 128.
CPU_FORWARD_PARAMS = 50_000_000

# DeepSeek's own modeling code reads moe_layer_freq (calc/hf/families/deepseek.py); transformers
# ignores it, so the two build different models.
_IGNORED = {"deepseek_v2": "moe_layer_freq", "deepseek_v3": "moe_layer_freq"}


def compare_with_transformers(spec: ModelSpec, seq_len: int,
                              hf_config: dict[str, Any] | None = None) -> HFComparison:
    """Parameters equal (up to values transformers keeps as buffers); forward FLOPs equal,
    where transformers runs a part another way (calc.verify.hf_implementation) that part as it
    runs."""
    if find_spec("transformers") is None:
        raise CalcError(f"--hf needs transformers: {install('hf')}")
    from calc.hf.export import buffer_params, hf_config_from_spec, unread_params
    from calc.verify.hf_implementation import transformers_flops
    from calc.verify.hf_reference import META_FORWARD_UNRUNNABLE, count

    buffers = 0
    if hf_config is None:
        try:
            hf_config = hf_config_from_spec(spec)
        except CalcError as error:
            return HFComparison(compared=False, reason=str(error))
        buffers = buffer_params(spec, hf_config["model_type"])
    ignored = _IGNORED.get(hf_config.get("model_type", ""))
    if ignored and hf_config.get(ignored, 1) != 1:
        return HFComparison(compared=False, reason=(
            f"{ignored}={hf_config[ignored]}: transformers ignores it and builds another model "
            f"than the authors' code, whose placement calc counts"))
    unread = unread_params(spec, hf_config.get("model_type", ""))
    t = hf_seq_len(spec, seq_len)
    counted, device = count(hf_config, t), "meta"
    if counted.forward is None and counted.params <= CPU_FORWARD_PARAMS:
        # a type whose forward the meta device cannot run, small enough to run on the CPU
        counted, device = count(hf_config, t, device="cpu"), "cpu"
    params = count_params(spec).total - buffers + unread
    label = ("parameters" + (f" (less {buffers:,} kept as buffers)" if buffers else "")
             + (f" (plus {unread:,} that transformers allocates for the zero-computation "
                f"experts' gate_up_proj rows and never reads)" if unread else ""))
    checks = [Check(quantity=label, calc=params, torch=counted.params,
                    match=params == counted.params)]
    if counted.forward is None:  # calc.verify.hf_reference.META_FORWARD_UNRUNNABLE
        return HFComparison(compared=True, model_type=counted.model_type, seq_len=t,
                            checks=checks, reason=(
                                f"forward FLOPs not run on the meta device: "
                                f"{META_FORWARD_UNRUNNABLE[counted.model_type]}"))
    forward, differences = transformers_flops(spec, hf_config, t)
    as_run = f"; as transformers runs {', '.join(differences)}" if differences else ""
    checks.append(Check(quantity=f"forward FLOPs (1 × {t} tokens{as_run})", calc=forward,
                        torch=counted.forward, match=forward == counted.forward))
    return HFComparison(compared=True, model_type=counted.model_type, seq_len=t,
                        checks=checks, device=device)

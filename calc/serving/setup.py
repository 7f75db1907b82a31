"""A replica ready to price: the model's terms, the replica's memory and its StepModel, the
engine's settings and the KV-cache budget, built once (calc.plan.serving for a user's options,
calc.calibration.serving for a published row); `serve` then answers a load.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from calc.counting import GIB
from calc.errors import CalcError
from calc.serving.constants import ServingConstants
from calc.serving.layouts import Replica
from calc.serving.memory import (
    ReplicaMemory,
    kv_budget,
    replica_memory,
    sequences_that_fit,
    workspace_bytes,
)
from calc.serving.schedule import (
    EngineSettings,
    Limit,
    Load,
    Served,
    closed,
    phase_only,
    rate,
    static,
)
from calc.serving.step import StepModel, step_model
from calc.spec import GPU, ModelSpec, System
from calc.timing.operators import ModelTerms, model_terms

TERMS_LENGTH = 2048  # model_terms' products do not depend on it; attention is counted per call


@lru_cache(maxsize=64)
def terms_of(spec: ModelSpec) -> ModelTerms:
    return model_terms(spec, TERMS_LENGTH)


class DoesNotFit(CalcError):
    """The replica's weights, or one sequence's cache, do not fit its GPUs."""


@dataclass(frozen=True)
class Setup:
    model: StepModel
    engine: EngineSettings
    budget: float  # bytes of KV cache per GPU the engine allocates

    @property
    def memory(self) -> ReplicaMemory:
        return self.model.memory

    def capacity(self, tokens: float) -> int:
        return sequences_that_fit(self.memory, self.budget, tokens)


def setup(spec: ModelSpec, gpu: GPU, system: System | None, replica: Replica, dtype: str,
          compute_dtype: str, kv_dtype: str, engine: str, constants: ServingConstants,
          served_context: int | None = None, chunked: bool | None = None,
          max_sequences: int | None = None, overlap_ep: bool = False) -> Setup:
    """The replica of `spec` on `gpu` with `engine`'s defaults, unless `chunked` or
    `max_sequences` say otherwise. `served_context` is the engine's max_model_len (default
    the model's context)."""
    terms = terms_of(spec)
    defaults = constants.engine(engine)
    vendor = constants.vendor(gpu.name)
    memory = replica_memory(spec, terms, replica, dtype, kv_dtype, gpu.memory_gib)
    context = served_context or spec.context_length
    windowed = memory.window is not None or spec.layer_counts["local"] > 0
    chunks = defaults.chunks(context, vendor == "amd", windowed) if chunked is None \
        else chunked
    sequences = max_sequences or defaults.max_sequences
    settings = EngineSettings(
        name=engine, max_sequences=sequences, step_tokens=defaults.step_tokens,
        prefill_tokens=max(context, defaults.step_tokens)
        if defaults.prefill_budget == "context" else defaults.step_tokens,
        chunked=chunks, reserves_completion=defaults.reserves == "completion")
    workspace = workspace_bytes(spec, terms, replica, settings.step_tokens, sequences)
    model = step_model(spec, terms, replica, memory, gpu, system, dtype, compute_dtype, vendor,
                       overlap_ep)
    return Setup(model, settings, kv_budget(memory, defaults, replica.tp, workspace))


def context_tokens(load: Load, completion: bool = False) -> float:
    """The cache a running sequence takes: a static batch's all reach I + O together, a
    continuous batch's are spread over their outputs (I + O/2) unless the engine reserves each
    request's whole output from its admission (`completion`: I + O), a decode node's hold I."""
    if load.phase != "both":
        return load.input_len
    if load.kind == "static" or completion:
        return load.input_len + load.output_len
    return load.input_len + load.output_len / 2


def serve(s: Setup, load: Load, constants: ServingConstants) -> Served:
    """`load` on the replica `s`; DoesNotFit when the weights or one sequence do not fit."""
    tokens = context_tokens(load, s.engine.reserves_completion)
    capacity = s.capacity(tokens)
    if s.budget <= 0:
        raise DoesNotFit(f"the weights ({s.memory.weights / GIB:,.1f} GiB a GPU) leave no "
                         f"room for a KV cache in the engine's share of "
                         f"{s.memory.gpu / GIB:,.0f} GiB")
    if capacity < 1:
        raise DoesNotFit(f"one sequence of {tokens:,.0f} tokens does not fit the "
                         f"{s.budget / GIB:,.1f} GiB of KV cache a GPU has")
    most = min(capacity, s.engine.max_sequences)
    cap_limit: Limit = "memory" if capacity <= s.engine.max_sequences else "engine"
    if load.kind == "static":
        batch = load.batch or most
        if batch > capacity:
            raise DoesNotFit(f"batch={batch:,} of {tokens:,.0f}-token sequences "
                             f"does not fit; the largest that does is {capacity:,}")
        return static(s.model, load, batch, capacity, constants)
    if load.phase != "both":
        n = min(load.batch, capacity) if load.batch else most
        return phase_only(s.model, load, n, "load" if load.batch and load.batch <= capacity
                          else cap_limit, capacity, constants)
    if load.kind == "rate":
        return rate(s.model, load, most, cap_limit, capacity, s.engine, constants)
    wanted = [v for v in (load.concurrency, load.batch,
                          load.requests if load.kind == "offline" else None) if v]
    n = min([most, *wanted])
    limit: Limit = "load" if wanted and n == min(wanted) and n < most else cap_limit
    return closed(s.model, load, n, limit, capacity, s.engine, constants)

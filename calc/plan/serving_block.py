"""What calc.plan.serving planned, as the frozen block calc.infer's report carries (its `serving`
JSON: `calc infer --input-len I --output-len O ...`), and the serving options split from the
inference ones."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from calc.errors import CalcError, one_line
from calc.plan.serving import Candidate, ServingPlan
from calc.spec.inference import Serving
from calc.spec.model import Frozen

SERVING_OPTIONS = tuple(Serving.model_fields)


def serving_options(options: dict[str, Any]) -> tuple[Serving, dict[str, Any]]:
    """calc.infer's keyword arguments split: the serving ones (checked, one line when bad)
    and the rest (calc.spec.inference.InferenceWorkload's)."""
    given = {k: v for k, v in options.items() if k in SERVING_OPTIONS and v is not None}
    try:
        serving = Serving(**given)
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    if given and not serving.asked:
        named = ", ".join(f"{k}={v}" for k, v in given.items())
        raise CalcError(f"{named}: serving options need input_len and output_len "
                        f"(--input-len, --output-len)")
    return serving, {k: v for k, v in options.items() if k not in SERVING_OPTIONS}


class Layout(Frozen):
    tp: int
    pp: int
    ep: int
    replicas: int = Field(description="N / (tp·pp) copies of the weights, each serving its "
                                      "share of the requests")
    gpus: int


class Phase(Frozen):
    """One iteration's seconds by what limits them."""

    seconds: float
    compute_s: float
    bandwidth_s: float
    network_s: float
    overhead_s: float
    bound: str


class LayoutRow(Frozen):
    """One layout priced for the request mix (the search's and the layout comparison's rows)."""

    layout: str
    gpus: int
    replicas: int
    output_tokens_per_s: float | None
    ttft_s: float | None
    tpot_s: float | None
    max_rate_per_replica: float | None = Field(
        description="requests/s one replica serves within the targets (search only)")
    meets: bool
    why: str = Field(description="what binds, or why the layout is out")


class ServingBlock(Frozen):
    options: Serving = Field(description="the serving options, as given")
    engine: str
    layout: Layout
    searched: bool = Field(description="the GPU count was searched: a request rate and no "
                                       "--gpus")
    load: str = Field(description="static batch, closed loop (concurrency), offline queue, "
                                  "or Poisson arrivals at a rate")
    served_context: int = Field(description="the engine's max_model_len: input + output")
    output_tokens_per_s: float = Field(description="generated tokens/s of the whole system")
    total_tokens_per_s: float = Field(description="prompt + generated tokens/s of the system")
    output_tokens_per_s_per_gpu: float
    requests_per_s: float
    ttft_s: float = Field(description="time to first token, mean")
    tpot_s: float = Field(description="time per output token after the first, mean")
    e2e_s: float = Field(description="a request's end-to-end latency, mean")
    batch: float = Field(description="sequences decoding together on one replica (mean)")
    batch_limit: str = Field(description="what set the batch: memory (the KV cache), engine "
                                         "(its sequence cap) or load")
    max_sequences_fit: int = Field(description="sequences whose cache fits one replica")
    saturated: bool = Field(description="the rate exceeds what the GPUs serve: served as a "
                                        "queue")
    bound: str = Field(description="what binds: memory, compute, bandwidth, network, "
                                   "overhead, or the SLO target")
    weights_bytes_per_gpu: float
    kv_cache_budget_bytes_per_gpu: float
    kv_cache_bytes_per_token_per_gpu: float
    decode_step: Phase
    prefill_step: Phase
    price_per_gpu_hour: float | None
    cost_per_hour: float | None
    cost_per_million_output_tokens: float | None
    layouts: list[LayoutRow] = Field(description="every layout priced, best first")


def _phase(parts) -> Phase:
    return Phase(seconds=parts.total, compute_s=parts.compute, bandwidth_s=parts.bandwidth,
                 network_s=parts.network, overhead_s=parts.overhead, bound=parts.bound)


def _row(c: Candidate) -> LayoutRow:
    s = c.served
    return LayoutRow(layout=c.replica.label(), gpus=c.gpus, replicas=c.replicas,
                     output_tokens_per_s=c.output_tokens_per_s if s else None,
                     ttft_s=s.ttft if s else None, tpot_s=s.tpot if s else None,
                     max_rate_per_replica=c.max_rate, meets=c.meets, why=c.why)


LOADS = {"static": "static batch", "closed": "closed loop", "offline": "offline queue",
         "rate": "Poisson arrivals"}


def serving_block(plan: ServingPlan, serving: Serving) -> ServingBlock:
    chosen, served = plan.chosen, plan.chosen.served
    assert served is not None
    memory = plan.setup.memory
    replicas = chosen.replicas
    return ServingBlock(
        options=serving, engine=plan.engine,
        layout=Layout(tp=chosen.replica.tp, pp=chosen.replica.pp, ep=chosen.replica.ep,
                      replicas=replicas, gpus=chosen.gpus),
        searched=plan.searched, load=LOADS[plan.load.kind], served_context=plan.served_context,
        output_tokens_per_s=served.output_tokens_per_s * replicas,
        total_tokens_per_s=served.total_tokens_per_s * replicas,
        output_tokens_per_s_per_gpu=served.output_tokens_per_s * replicas / chosen.gpus,
        requests_per_s=served.requests_per_s * replicas, ttft_s=served.ttft,
        tpot_s=served.tpot, e2e_s=served.e2e, batch=served.batch, batch_limit=served.limit,
        max_sequences_fit=served.capacity, saturated=served.saturated, bound=plan.bound,
        weights_bytes_per_gpu=memory.weights, kv_cache_budget_bytes_per_gpu=plan.setup.budget,
        kv_cache_bytes_per_token_per_gpu=memory.kv_per_token,
        decode_step=_phase(served.decode), prefill_step=_phase(served.prefill),
        price_per_gpu_hour=plan.price, cost_per_hour=plan.cost_per_hour,
        cost_per_million_output_tokens=plan.cost_per_million_output,
        layouts=[_row(c) for c in plan.candidates])

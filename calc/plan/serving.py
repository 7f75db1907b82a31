"""Serving plans (numbers only; calc.reports.infer labels them): the options of calc.infer as a
replica layout on the GPUs and a load, what the replicas serve (calc.serving), the layouts the
engines accept and how each does, the cheapest configuration meeting latency targets at a
request rate, and the cost of a million generated tokens.

Layouts: a replica is tp·pp GPUs (calc.serving.layouts); N GPUs hold N/(tp·pp) replicas, each
taking its share of the requests. Given --tp, the layout is that one; given --gpus alone, every
valid layout of those GPUs is priced and the one serving the most tokens/s (meeting the targets,
where given) is taken; given a request rate and no GPU count, layouts are searched for the
fewest GPUs — the lowest cost at one price a GPU-hour — whose replicas, each at the highest
rate that meets the targets, serve the rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from calc.counting import MILLION, MILLISECOND, SECONDS_PER_HOUR
from calc.errors import CalcError
from calc.presets import sequence_length
from calc.serving.constants import ServingConstants, load_serving_constants
from calc.serving.layouts import Replica, check_replica, divisors, tp_problem
from calc.serving.schedule import Load, Served
from calc.serving.setup import DoesNotFit, Setup, serve, setup
from calc.spec import GPU, ModelSpec, System
from calc.spec.inference import InferenceWorkload, Serving

MAX_PP = 16
MAX_SEARCH_GPUS = 1 << 14
RATE_STEPS = 24  # bisections of the highest rate meeting the targets
LOW_RATE = 1e-3  # requests/s: "at no load" for the latency floor


@dataclass(frozen=True)
class Candidate:
    """One layout priced for the request mix."""

    replica: Replica
    replicas: int
    served: Served | None  # None: it does not fit, or misses the targets at any load
    max_rate: float | None  # requests/s a replica serves within the targets (search)
    meets: bool
    why: str  # what binds, or why it is out

    @property
    def gpus(self) -> int:
        return self.replicas * self.replica.gpus

    @property
    def output_tokens_per_s(self) -> float:
        return self.served.output_tokens_per_s * self.replicas if self.served else 0.0


@dataclass(frozen=True)
class ServingPlan:
    engine: str
    load: Load  # one replica's
    chosen: Candidate
    setup: Setup
    candidates: tuple[Candidate, ...]  # every layout priced, best first
    searched: bool  # the GPU count was searched (a rate and no --gpus)
    bound: str
    price: float | None
    cost_per_hour: float | None
    cost_per_million_output: float | None
    served_context: int


def _load(serving: Serving, workload: InferenceWorkload, replicas: int) -> Load:
    n_in, n_out = serving.input_len, serving.output_len
    assert n_in is not None and n_out is not None
    common = dict(input_len=n_in, output_len=n_out, synchronized=serving.spread == 0,
                  prefix_hit=serving.prefix_hit)
    requests = math.ceil(serving.requests / replicas) if serving.requests else None
    if serving.request_rate is not None:
        return Load("rate", rate=serving.request_rate / replicas, requests=requests,
                    **common)  # type: ignore[arg-type]
    if serving.concurrency is not None:
        return Load("closed", concurrency=math.ceil(serving.concurrency / replicas),
                    **common)  # type: ignore[arg-type]
    if _static(workload):  # the batch is the system's, split over the replicas
        return Load("static", batch=math.ceil(workload.batch / replicas),
                    **common)  # type: ignore[arg-type]
    return Load("offline", requests=requests, **common)  # type: ignore[arg-type]


def _static(workload: InferenceWorkload) -> bool:
    return workload.batch > 1 or "batch" in workload.model_fields_set


def _lengths(spec: ModelSpec, serving: Serving) -> int:
    if serving.input_len is None or serving.output_len is None:
        missing = "input_len" if serving.input_len is None else "output_len"
        raise CalcError(f"{missing}: serving needs both input_len and output_len "
                        f"(--input-len, --output-len)")
    total = serving.input_len + serving.output_len
    return sequence_length(spec, total, "--input-len + --output-len")


def _replicas(spec: ModelSpec, gpus: int, node: int, serving: Serving) -> list[Replica]:
    """The valid replica layouts (tp within a node unless asked, pp up to MAX_PP) that use at
    most `gpus` GPUs a replica and divide them (`gpus` None: any count)."""
    found = []
    top = gpus if serving.cross_node_tp else min(gpus, node)
    for tp in range(1, top + 1):
        if tp_problem(spec, tp) or gpus % tp:
            continue
        for pp in range(1, min(MAX_PP, spec.n_layers) + 1):
            if gpus % (tp * pp):
                continue
            for ep in _eps(spec, tp):
                found.append(Replica(tp=tp, pp=pp, ep=ep))
    return found


def _eps(spec: ModelSpec, tp: int) -> list[int]:
    """Expert parallelism inside a replica: 1, and tp where it divides the experts."""
    if spec.moe is None or tp == 1 or spec.moe.n_experts % tp:
        return [1]
    return [1, tp]


def _setup(spec: ModelSpec, gpu: GPU, system: System | None, replica: Replica,
           workload: InferenceWorkload, serving: Serving, context: int,
           constants: ServingConstants) -> Setup:
    return setup(spec, gpu, system, replica, workload.dtype, workload.compute_dtype_name,
                 workload.kv_dtype_name, serving.engine, constants, served_context=context,
                 chunked=serving.chunked_prefill, max_sequences=serving.max_sequences)


def _meets(served: Served, serving: Serving) -> str | None:
    """Which target `served` misses (None: it meets them)."""
    if served.saturated:
        return "the rate exceeds what the replica serves"
    if serving.ttft_ms is not None and served.ttft > serving.ttft_ms * MILLISECOND:
        return f"TTFT {served.ttft / MILLISECOND:,.0f} ms > {serving.ttft_ms:g} ms"
    if serving.tpot_ms is not None and served.tpot > serving.tpot_ms * MILLISECOND:
        return f"TPOT {served.tpot / MILLISECOND:,.1f} ms > {serving.tpot_ms:g} ms"
    return None


def _bound(served: Served) -> str:
    return "memory" if served.limit == "memory" else served.bound


def _evaluate(s: Setup, replica: Replica, replicas: int, load: Load, serving: Serving,
              constants: ServingConstants) -> Candidate:
    try:
        served = serve(s, load, constants)
    except DoesNotFit as error:
        return Candidate(replica, replicas, None, None, False, f"memory: {error}")
    missed = _meets(served, serving)
    return Candidate(replica, replicas, served, None, missed is None,
                     missed or _bound(served))


def _max_rate(s: Setup, replica: Replica, serving: Serving, load: Load,
              constants: ServingConstants) -> Candidate:
    """The highest request rate one replica serves within the targets (bisection: latency
    grows with the rate)."""
    try:
        capacity = serve(s, replace(load, kind="offline", rate=None), constants)
    except DoesNotFit as error:
        return Candidate(replica, 1, None, None, False, f"memory: {error}")
    floor = serve(s, replace(load, rate=LOW_RATE), constants)
    missed = _meets(floor, serving)
    if missed:
        return Candidate(replica, 1, floor, None, False, f"{missed} even at no load")
    low, high = LOW_RATE, capacity.requests_per_s
    for _ in range(RATE_STEPS):
        middle = math.sqrt(low * high)
        if _meets(serve(s, replace(load, rate=middle), constants), serving) is None:
            low = middle
        else:
            high = middle
    served = serve(s, replace(load, rate=low), constants)
    why = _binding(served, capacity, serving)
    return Candidate(replica, 1, served, low, True, why)


def _binding(served: Served, capacity: Served, serving: Serving) -> str:
    """What stops a replica at its highest rate: a target, or its capacity."""
    near = 0.97
    if serving.tpot_ms and served.tpot >= near * serving.tpot_ms * MILLISECOND:
        return f"slo: TPOT {serving.tpot_ms:g} ms"
    if serving.ttft_ms and served.ttft >= near * serving.ttft_ms * MILLISECOND:
        return f"slo: TTFT {serving.ttft_ms:g} ms"
    return _bound(capacity)


def serving_plan(spec: ModelSpec, gpu: GPU, system: System | None,
                 workload: InferenceWorkload, serving: Serving, price: float | None = None,
                 constants: ServingConstants | None = None) -> ServingPlan:
    """What `serving`'s requests get on `workload`'s GPUs (or, with a rate and no GPU count,
    on the fewest GPUs that serve it within the targets)."""
    constants = constants or load_serving_constants()
    context = _lengths(spec, serving)
    node = system.gpus_per_node if system is not None else 1
    if serving.tp is not None or serving.pp is not None or serving.ep is not None:
        replica = check_replica(spec, Replica(serving.tp or 1, serving.pp or 1,
                                              serving.ep or 1), node, serving.cross_node_tp)
        gpus = workload.gpus if workload.gpus > 1 else replica.gpus
        if gpus % replica.gpus:
            nearest = max(1, gpus // replica.gpus) * replica.gpus
            raise CalcError(f"gpus={gpus} is not a whole number of tp·pp = {replica.gpus}-GPU "
                            f"replicas; nearest: --gpus {nearest}")
        layouts, searched = [replica], False
    elif serving.request_rate is not None and workload.gpus == 1 \
            and "gpus" not in workload.model_fields_set:
        return _search(spec, gpu, system, workload, serving, price, context, node, constants)
    else:
        gpus = workload.gpus
        layouts, searched = _replicas(spec, gpus, node, serving), False
        if _static(workload):  # a static batch of B keeps at most B replicas busy
            layouts = [r for r in layouts if gpus // r.gpus <= workload.batch]
        if not layouts:
            raise CalcError(f"gpus={gpus}: no tensor-parallel degree of {spec.name} "
                            f"({spec.attention.n_heads} heads) divides them within a node; "
                            f"nearest: --gpus {_nearest_gpus(spec, gpus, node)}")
    candidates = []
    setups = {}
    for replica in layouts:
        replicas = gpus // replica.gpus
        s = _setup(spec, gpu, system, replica, workload, serving, context, constants)
        setups[replica] = s
        load = _load(serving, workload, replicas)
        candidates.append(_evaluate(s, replica, replicas, load, serving, constants))
    ranked = sorted(candidates, key=lambda c: (c.served is None, not c.meets,
                                               -c.output_tokens_per_s, c.replica.gpus))
    best = ranked[0]
    if best.served is None:
        raise CalcError(f"{spec.name} does not fit {gpus} × {gpu.name} in any layout: "
                        f"{best.why}; nearest: more GPUs, or a smaller --dtype/--kv-dtype")
    return _plan(serving, _load(serving, workload, best.replicas), best, setups[best.replica],
                 tuple(ranked), searched, price, context)


def _search(spec: ModelSpec, gpu: GPU, system: System | None, workload: InferenceWorkload,
            serving: Serving, price: float | None, context: int, node: int,
            constants: ServingConstants) -> ServingPlan:
    """The fewest GPUs whose replicas serve `serving.request_rate` within the targets."""
    assert serving.request_rate is not None
    rate = serving.request_rate
    base = _load(serving, workload, 1)
    candidates, setups = [], {}
    most = node if not serving.cross_node_tp else MAX_SEARCH_GPUS
    for tp in range(1, most + 1):
        if tp_problem(spec, tp):
            continue
        for pp in (1, 2, 3, 4, 6, 8, 12, 16):
            if pp > spec.n_layers:
                continue
            for ep in _eps(spec, tp):
                replica = Replica(tp, pp, ep)
                s = _setup(spec, gpu, system, replica, workload, serving, context, constants)
                found = _max_rate(s, replica, serving, base, constants)
                if found.max_rate is not None:
                    replicas = math.ceil(rate / found.max_rate * (1 - 1e-9))
                    load = replace(base, rate=rate / replicas)
                    served = serve(s, load, constants)
                    missed = _meets(served, serving)  # the share served, checked as well
                    found = Candidate(replica, replicas, served, found.max_rate,
                                      missed is None, missed or found.why)
                setups[replica] = s
                candidates.append(found)
    ranked = sorted(candidates, key=lambda c: (not c.meets, c.gpus if c.meets else 0,
                                               c.served.tpot if c.served else math.inf))
    best = ranked[0]
    if not best.meets:
        raise CalcError(_impossible(serving, ranked))
    load = replace(base, rate=rate / best.replicas)
    return _plan(serving, load, best, setups[best.replica], tuple(ranked), True, price,
                 context)


def _impossible(serving: Serving, ranked: list[Candidate]) -> str:
    """One line: no layout meets the targets, and the nearest targets that would be met."""
    fitting = [c for c in ranked if c.served is not None]
    if not fitting:
        return (f"no layout fits: {ranked[0].why}; nearest: a GPU with more memory, or "
                f"--dtype fp8/int4")
    fastest = min(fitting, key=lambda c: c.served.tpot)  # type: ignore[union-attr]
    quickest = min(fitting, key=lambda c: c.served.ttft)  # type: ignore[union-attr]
    hints = []
    if serving.tpot_ms is not None:
        hints.append(f"--tpot-ms {math.ceil(fastest.served.tpot / MILLISECOND * 1.05):g} "
                     f"({fastest.replica.label()} decodes a token in "
                     f"{fastest.served.tpot / MILLISECOND:.1f} ms at no load)")
    if serving.ttft_ms is not None:
        hints.append(f"--ttft-ms {math.ceil(quickest.served.ttft / MILLISECOND * 1.05):g}")
    asked = ", ".join(f"{name}={value:g}" for name, value in
                      (("tpot_ms", serving.tpot_ms), ("ttft_ms", serving.ttft_ms))
                      if value is not None)
    return (f"{asked}: no layout meets it at any load; nearest that works: "
            f"{' and '.join(hints)}")


def _nearest_gpus(spec: ModelSpec, gpus: int, node: int) -> int:
    valid = [t for t in divisors(node) if tp_problem(spec, t) is None]
    return min((t for t in valid), key=lambda t: (abs(t - gpus), t)) if valid else node


def _plan(serving: Serving, load: Load, chosen: Candidate, s: Setup,
          candidates: tuple[Candidate, ...], searched: bool, price: float | None,
          context: int) -> ServingPlan:
    assert chosen.served is not None
    per_hour = chosen.gpus * price if price is not None else None
    tokens = chosen.output_tokens_per_s
    per_million = per_hour / (tokens * SECONDS_PER_HOUR) * MILLION \
        if per_hour is not None and tokens > 0 else None
    bound = chosen.why if chosen.meets else _bound(chosen.served)
    return ServingPlan(engine=serving.engine, load=load, chosen=chosen, setup=s,
                       candidates=candidates, searched=searched, bound=bound, price=price,
                       cost_per_hour=per_hour, cost_per_million_output=per_million,
                       served_context=context)

"""Requests through a replica's iterations (calc.serving.step): TTFT, TPOT, end-to-end latency
and tokens/s for a static batch, a closed loop of concurrent clients (an offline queue is one
whose clients are every queued request), or arrivals at a rate.

Continuous batching keeps `n` sequences decoding; every request costs its prompt's prefill and
O decode iterations, so one cycle of the running batch — every request in it served once — is
O decode iterations plus n prompts' prefill, and the replica finishes n / cycle requests a
second (Little's law: a closed loop's end-to-end latency is the cycle). Where the engine chunks
prefill (TensorRT-LLM's in-flight batching, vLLM's chunked prefill) the prompts' tokens ride in
the decode iterations, n·I/O a step up to its token budget; where it does not (vLLM V0, SGLang)
prompts get iterations of their own, whole prompts up to the budget in each, and stall decoding
meanwhile. Decode iterations see the mean context I + O/2 (attention is linear in it).

Time to first token: a request's own prefill, after the iteration under way (half of one, on
average); with fixed lengths a closed loop's requests start and finish together, so each waits
on average for half of the others' prompts (the wave); arrivals at a rate wait in an M/D/1
queue for the prefill (Poisson arrivals, as vLLM's and SGLang's benchmark clients send them).
A rate past what the replica can serve is served like an offline queue of the run's requests.

Time per output token is the mean gap, prefill stalls spread over every token; the median gap
(what a benchmark's median inter-token latency reads) is a plain decode iteration while fewer
than half the gaps hold another request's prefill iteration, and one that holds it otherwise.
Chunked prefill spreads the prompts' tokens evenly over the decode iterations here, so its
median gap is its decode iteration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from calc.serving.constants import ServingConstants
from calc.serving.step import Parts, StepModel

Kind = Literal["static", "closed", "offline", "rate"]
Phase = Literal["both", "prefill", "decode"]
Limit = Literal["memory", "engine", "load"]
MAX_RATE_ITERATIONS = 40
CONVERGED = 1e-3


@dataclass(frozen=True)
class Load:
    kind: Kind
    input_len: int
    output_len: int
    batch: int | None = None  # static: the batch; offline/closed: a cap on running sequences
    concurrency: int | None = None
    rate: float | None = None  # requests/s offered to this replica
    requests: int | None = None  # in the run (offline waves; a saturated rate)
    synchronized: bool = True  # fixed lengths: a closed loop's requests stay in step
    phase: Phase = "both"
    prefix_hit: float = 0.0  # share of prompt tokens served from the prefix cache


@dataclass(frozen=True)
class EngineSettings:
    """The engine settings one prediction uses (from calc.serving.constants and the options)."""

    name: str
    max_sequences: int
    step_tokens: int  # an iteration's token budget with chunked prefill
    prefill_tokens: int  # a prefill-only iteration's token budget
    chunked: bool
    reserves_completion: bool = False  # a request's cache is held to I + O from its admission


@dataclass(frozen=True)
class Served:
    """One replica serving a load."""

    batch: float  # sequences decoding together (mean)
    limit: Limit  # what set it: KV memory, the engine's cap, or the load
    capacity: int  # sequences whose cache fits
    ttft: float
    tpot: float  # the mean gap between a request's tokens
    itl_median: float  # the median gap between tokens (module docstring)
    e2e: float
    requests_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float  # prompt + generated
    decode: Parts  # one decode iteration
    prefill: Parts  # one prompt's prefill iteration
    saturated: bool = False  # a rate past the replica's capacity

    @property
    def bound(self) -> str:
        return (self.prefill if self.decode.total == 0 else self.decode).bound


def _prefill_one(model: StepModel, load: Load, engine: EngineSettings, c: ServingConstants,
                 context: float) -> tuple[float, Parts]:
    """Seconds a prefill-only iteration spends per prompt (whole prompts, up to the budget)."""
    tokens = _prompt_tokens(load)
    per_iteration = max(1.0, engine.prefill_tokens / tokens)
    parts = model.iteration(0, context, per_iteration * tokens, load.input_len, c)
    return parts.total / per_iteration, parts


def _prompt_tokens(load: Load) -> float:
    return max(1.0, load.input_len * (1 - load.prefix_hit))


def static(model: StepModel, load: Load, batch: int, capacity: int,
           c: ServingConstants) -> Served:
    """One batch of `batch` requests, prefilled in one pass, then O − 1 decode iterations."""
    first = model.iteration(0, load.input_len, batch * _prompt_tokens(load), load.input_len, c)
    step = model.iteration(batch, load.input_len + load.output_len / 2, 0, load.input_len, c)
    e2e = first.total + (load.output_len - 1) * step.total
    gap = step.total if load.output_len > 1 else 0.0
    return _served(batch, "load", capacity, first.total, gap, gap, e2e, batch / e2e, load, step,
                   first)


def closed(model: StepModel, load: Load, n: float, limit: Limit, capacity: int,
           engine: EngineSettings, c: ServingConstants) -> Served:
    """`n` sequences kept running (a closed loop, or an offline queue's running batch)."""
    n_in, n_out = load.input_len, load.output_len
    context = n_in + n_out / 2
    per_prompt, prefill = _prefill_one(model, load, engine, c, context)
    tokens = _prompt_tokens(load)
    if engine.chunked:
        riding = min(n * tokens / n_out, max(0.0, engine.step_tokens - n))
        step = model.iteration(n, context, riding, n_in, c)
        leftover = n * tokens - n_out * riding  # prompt tokens the decode iterations cannot carry
        cycle = n_out * step.total + leftover / tokens * per_prompt
        own = step.total * math.ceil(tokens / max(1.0, engine.step_tokens - n))
        stalled = 0.0
    else:
        step = model.iteration(n, context, 0, n_in, c)
        cycle = n_out * step.total + n * per_prompt
        own = per_prompt
        stalled = n * per_prompt / prefill.total / n_out  # prefill iterations a decode one
    median = _median_gap(step.total, prefill.total, stalled)
    ttft = (n + 1) / 2 * per_prompt if load.synchronized else own + step.total / 2
    ttft = min(ttft, cycle)
    tpot = (cycle - ttft) / (n_out - 1) if n_out > 1 else 0.0
    if load.kind == "offline" and load.requests:
        ttft += cycle * _mean_wave(load.requests, n)
    return _served(n, limit, capacity, ttft, tpot, median if n_out > 1 else 0.0,
                   ttft + (n_out - 1) * tpot, n / cycle, load, step, prefill)


def _median_gap(decode: float, prefill: float, stalled: float) -> float:
    """The median gap between tokens when `stalled` prefill iterations (of `prefill` seconds)
    fall, on average, into each decode iteration's gap: Poisson-spread, a gap holds none with
    probability e^−stalled."""
    return decode if math.exp(-stalled) >= 0.5 else decode + prefill


def _mean_wave(requests: int, n: float) -> float:
    """The mean over `requests` queued requests of how many full cycles each waits for a slot
    when `n` run at a time."""
    slots = max(1, int(n))
    waves, rest = divmod(requests, slots)
    return (slots * waves * (waves - 1) / 2 + rest * waves) / requests


def rate(model: StepModel, load: Load, most: int, limit: Limit, capacity: int,
         engine: EngineSettings, c: ServingConstants) -> Served:
    """Poisson arrivals at `load.rate` requests/s; the running batch n solves n = rate × e2e
    (Little's law), found by bisection. Past the replica's capacity, the run's requests queue
    as offline."""
    assert load.rate is not None
    R, n_in, n_out = load.rate, load.input_len, load.output_len
    context = n_in + n_out / 2
    tokens = _prompt_tokens(load)
    per_prompt, prefill = _prefill_one(model, load, engine, c, context)

    def excess(n: float) -> tuple[float, tuple[float, float | None, Parts]]:
        latencies = _open_latencies(model, load, n, R, per_prompt, tokens, engine, c)
        ttft, tpot, _ = latencies
        if tpot is None:
            return math.inf, latencies
        return R * (ttft + (n_out - 1) * tpot) - n, latencies

    high, (gap_high, _) = float(most), excess(float(most))
    if gap_high <= 0:  # Illinois false position on the monotone excess(n)
        low, gap_low = 0.0, excess(0.0)[0]
        side = 0
        for _ in range(MAX_RATE_ITERATIONS):
            middle = high - gap_high * (high - low) / (gap_high - gap_low)
            gap, _ = excess(middle)
            if abs(gap) <= CONVERGED:  # the root itself, whichever side of it `gap` lies
                high = middle
                break
            if gap > 0:
                low, gap_low = middle, gap
                if side == 1:
                    gap_high /= 2
                side = 1
            else:
                high, gap_high = middle, gap
                if side == -1:
                    gap_low /= 2
                side = -1
            if high - low <= CONVERGED * max(1.0, high):
                break
        ttft, tpot, step = excess(high)[1]
        if tpot is not None:
            stalled = 0.0 if engine.chunked else R * tpot * per_prompt / prefill.total
            median = _median_gap(step.total, prefill.total, stalled)
            return _served(high, "load", capacity, ttft, tpot, median,
                           ttft + (n_out - 1) * tpot, R, load, step, prefill)
    queued = Load("offline", n_in, n_out, requests=load.requests, synchronized=load.synchronized,
                  prefix_hit=load.prefix_hit)
    served = closed(model, queued, min(most, load.requests or most), limit, capacity,
                    engine, c)
    return Served(**{**served.__dict__, "saturated": True})


def _open_latencies(model: StepModel, load: Load, n: float, R: float, per_prompt: float,
                    tokens: float, engine: EngineSettings, c: ServingConstants,
                    ) -> tuple[float, float | None, Parts]:
    n_in, n_out = load.input_len, load.output_len
    context = n_in + n_out / 2
    if engine.chunked:
        step = model.iteration(n, context, 0, n_in, c)
        riding = 0.0
        for _ in range(3):  # prompt tokens arriving during one iteration ride in it
            riding = R * tokens * step.total
            if riding + n > engine.step_tokens:
                return 0.0, None, step
            step = model.iteration(n, context, riding, n_in, c)
        tpot = step.total
        own = math.ceil(tokens / max(1.0, engine.step_tokens - n - riding)) * tpot
        return own + tpot / 2, tpot, step
    step = model.iteration(n, context, 0, n_in, c)
    busy = R * per_prompt  # share of time spent prefilling
    if busy >= 1:
        return 0.0, None, step
    wait = busy / (2 * (1 - busy)) * per_prompt  # M/D/1
    return per_prompt + step.total / 2 + wait, step.total / (1 - busy), step


def phase_only(model: StepModel, load: Load, n: float, limit: Limit, capacity: int,
               c: ServingConstants) -> Served:
    """Disaggregated serving: these GPUs only prefill (n prompts an iteration) or only decode
    (n sequences at context input_len)."""
    n_in = load.input_len
    if load.phase == "prefill":
        parts = model.iteration(0, n_in, n * _prompt_tokens(load), n_in, c)
        return _served(n, limit, capacity, parts.total, 0.0, 0.0, parts.total,
                       n / parts.total, load, Parts(), parts)
    parts = model.iteration(n, n_in, 0, n_in, c)
    return _served(n, limit, capacity, 0.0, parts.total, parts.total, 0.0, 0.0, load, parts,
                   Parts(), output=n / parts.total)


def _served(n: float, limit: Limit, capacity: int, ttft: float, tpot: float, itl_median: float,
            e2e: float, requests: float, load: Load, step: Parts, prefill: Parts,
            output: float | None = None) -> Served:
    out = requests * load.output_len if output is None else output
    prompts = requests * load.input_len
    if load.phase == "prefill":
        out = 0.0
    return Served(batch=n, limit=limit, capacity=capacity, ttft=ttft, tpot=tpot,
                  itl_median=itl_median, e2e=e2e,
                  requests_per_s=requests, output_tokens_per_s=out,
                  total_tokens_per_s=out + prompts, decode=step, prefill=prefill)

"""A published serving measurement: an inference engine's stated settings and what it achieved.

One entry of presets/published/serving/. The figures are kept exactly as printed — output,
input and total tokens/s for the whole system, per GPU, per node or per user; requests/s;
time to first token (TTFT), time per output token (TPOT), inter-token latency (ITL) and
end-to-end latency, each with the statistic the source printed — beside the settings that
produced them: GPUs and their layout (tp·pp·dp, ep), engine and version, weight, matmul and
KV-cache precision, request lengths, and the load (a static batch, an offline queue, a
concurrency, a request rate, a latency target, or a production service's average). Settings a
source does not print are filled in as the entry's notes say and listed in `assumed`, written
down from the source's text before any model was compared with them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from calc.spec.hardware import Dtype
from calc.spec.model import Frozen
from calc.spec.precision import StorageDtype
from calc.spec.published import PublishedRow

Engine = Literal["trt-llm", "vllm", "sglang", "other"]
Phase = Literal["both", "prefill", "decode"]
# How the requests arrive: all at once as one fixed batch run start to end (static_batch); all
# queued at once, the engine batching them as it will (offline); a closed loop of concurrent
# clients (concurrency); arrivals at a rate (request_rate); the highest rate that meets a
# latency target (slo, MLPerf's Server scenario); or a live service's average (production).
Load = Literal["static_batch", "offline", "concurrency", "request_rate", "slo", "production"]
Feature = Literal["chunked-prefill", "prefix-caching", "speculative-decoding", "cuda-graphs",
                  "pd-disaggregation", "dp-attention", "two-batch-overlap", "eplb",
                  "paged-kv-cache"]

# Settings a source may leave unprinted; `assumed` names those calc filled in (notes say how).
ASSUMABLE = ("model", "tp", "pp", "ep", "dp", "redundant_experts", "engine_version", "dtype",
             "compute_dtype", "kv_dtype", "batch", "input_len", "output_len",
             "total_tokens_per_s", "output_tokens_per_s")
FIGURES = ("output_tokens_per_s", "output_tokens_per_s_per_gpu", "output_tokens_per_s_per_node",
           "input_tokens_per_s", "input_tokens_per_s_per_node", "total_tokens_per_s",
           "requests_per_s", "output_tokens_per_s_per_user", "ttft_ms", "tpot_ms", "itl_ms",
           "e2e_ms")
PER_NODE = ("output_tokens_per_s_per_node", "input_tokens_per_s_per_node")
MAX_GPUS = 1 << 20
MAX_DEGREE = 1 << 16
MAX_TOKENS = 1 << 24  # a request's length; catches a slip, not a real limit


class Latency(Frozen):
    """One latency as printed, in milliseconds, by the statistic the source printed."""

    mean: float | None = Field(None, ge=0, description="mean over requests (or iterations)")
    median: float | None = Field(None, ge=0, description="50th percentile")
    p90: float | None = Field(None, ge=0, description="90th percentile")
    p99: float | None = Field(None, ge=0, description="99th percentile")

    @model_validator(mode="after")
    def _printed(self) -> Latency:
        if all(value is None for value in (self.mean, self.median, self.p90, self.p99)):
            raise ValueError("a latency needs a statistic: mean, median, p90 or p99")
        return self


class PublishedServing(PublishedRow):
    """A serving run that states its settings and its measured figures, with their source."""

    name: str = Field(min_length=1, description="catalogue key, e.g. 'trtllm-v090-h100-…'")
    model: str = Field(min_length=1, description="preset name in presets/models/")
    model_as_printed: str = Field(
        "", description="the model and checkpoint as the source names them")
    gpu: str = Field(min_length=1, description="GPU-catalogue key of the chips measured")
    system: str | None = Field(
        None, min_length=1, description="systems-catalogue key of the platform, if it is one")
    gpus: int = Field(ge=1, le=MAX_GPUS, description="GPUs serving, all replicas together")
    gpus_per_node: int | None = Field(
        None, ge=1, le=MAX_DEGREE, description="GPUs in one node, for per-node figures")
    tp: int = Field(1, ge=1, le=MAX_DEGREE, description="tensor-parallel degree of a replica")
    pp: int = Field(1, ge=1, le=MAX_DEGREE, description="pipeline-parallel degree of a replica")
    dp: int = Field(ge=1, le=MAX_GPUS, description="replicas (data-parallel ranks; with "
                                                  "DP attention, each attention rank)")
    ep: int = Field(1, ge=1, le=MAX_DEGREE,
                    description="expert-parallel degree of the MoE layers (within tp·dp)")
    redundant_experts: int = Field(
        0, ge=0, le=MAX_DEGREE, description="extra copies of busy experts the deployment adds "
                                            "(DeepSeek's EPLB), shared out with the experts")
    phase: Phase = Field("both", description="the phase these GPUs run: both (a whole request), "
                                             "or prefill or decode alone (disaggregated)")
    engine: Engine = Field(description="serving engine; 'other' names it in notes")
    engine_version: str = Field("", description="engine release or commit, as printed")
    dtype: StorageDtype = Field(description="how the weights are stored")
    quantization: str = Field("", description="the weight (and activation) quantisation scheme, "
                                              "as printed: per-tensor FP8, AWQ int4 g128, …")
    compute_dtype: Dtype = Field(description="the dtype the matmuls run in (fp8 for W8A8; bf16 "
                                             "or fp16 for weight-only quantisation)")
    kv_dtype: StorageDtype = Field(description="how the KV cache is stored")
    input_len: int | None = Field(
        None, ge=1, le=MAX_TOKENS, description="prompt tokens per request: fixed, or the "
                                               "dataset's mean when `dataset` is set; in a "
                                               "decode-only run, the context decoded from")
    output_len: int | None = Field(
        None, ge=1, le=MAX_TOKENS, description="generated tokens per request: fixed, or the "
                                               "dataset's mean when `dataset` is set")
    dataset: str | None = Field(
        None, min_length=1, description="the dataset or length distribution the requests are "
                                        "drawn from; None: every request has exactly "
                                        "input_len and output_len tokens")
    load: Load = Field(description="how the requests arrive (calc.spec.serving.Load)")
    batch: int | None = Field(
        None, ge=1, le=MAX_GPUS, description="sequences per replica: the static batch, or the "
                                             "engine's largest batch (max-num-seqs) as set")
    concurrency: int | None = Field(
        None, ge=1, le=MAX_GPUS, description="requests in flight (closed-loop clients)")
    request_rate: float | None = Field(
        None, gt=0, description="requests/s offered (a rate load, or MLPerf's target_qps)")
    num_requests: int | None = Field(None, ge=1, description="requests in the benchmark run")
    ttft_slo_ms: float | None = Field(
        None, gt=0, description="the TTFT limit the run had to meet, ms")
    tpot_slo_ms: float | None = Field(
        None, gt=0, description="the TPOT limit the run had to meet, ms")
    features: tuple[Feature, ...] = Field(
        (), description="engine features the source says were on")
    output_tokens_per_s: float | None = Field(
        None, gt=0, description="generated tokens/s of the whole system (all `gpus`)")
    output_tokens_per_s_per_gpu: float | None = Field(
        None, gt=0, description="generated tokens/s per GPU, as printed")
    output_tokens_per_s_per_node: float | None = Field(
        None, gt=0, description="generated tokens/s per node of `gpus_per_node` GPUs")
    input_tokens_per_s: float | None = Field(
        None, gt=0, description="prompt tokens/s of the whole system")
    input_tokens_per_s_per_node: float | None = Field(
        None, gt=0, description="prompt tokens/s per node (a prefill node's throughput)")
    total_tokens_per_s: float | None = Field(
        None, gt=0, description="prompt + generated tokens/s of the whole system")
    requests_per_s: float | None = Field(
        None, gt=0, description="completed requests/s of the whole system")
    output_tokens_per_s_per_user: float | None = Field(
        None, gt=0, description="generated tokens/s one request sees while decoding")
    ttft_ms: Latency | None = Field(None, description="time to first token, ms")
    tpot_ms: Latency | None = Field(
        None, description="time per output token after the first, ms (per request, then "
                          "averaged over requests)")
    itl_ms: Latency | None = Field(
        None, description="inter-token latency, ms (over all gaps between tokens)")
    e2e_ms: Latency | None = Field(None, description="end-to-end request (or batch) latency, ms")

    @model_validator(mode="after")
    def _consistent(self) -> PublishedServing:
        product = self.tp * self.pp * self.dp
        if product != self.gpus:
            raise ValueError(f"gpus: {self.gpus} is not tp·pp·dp = {self.tp}·{self.pp}·"
                             f"{self.dp} = {product}")
        if (self.tp * self.dp) % self.ep:
            raise ValueError(f"ep: {self.ep} does not divide tp·dp = {self.tp * self.dp}")
        if self.redundant_experts and self.ep == 1:
            raise ValueError("redundant_experts: expert copies need expert parallelism (ep > 1)")
        if all(getattr(self, figure) is None for figure in FIGURES):
            raise ValueError(f"a run needs a published figure: {', '.join(FIGURES)}")
        per_node = [figure for figure in PER_NODE if getattr(self, figure) is not None]
        if per_node and self.gpus_per_node is None:
            raise ValueError(f"gpus_per_node: required with {per_node[0]}")
        if self.dataset is None:
            if self.input_len is None:
                raise ValueError("input_len: required when the lengths are fixed (no dataset)")
            if self.output_len is None and self.phase == "both":
                raise ValueError("output_len: required when whole requests of fixed lengths "
                                 "are served (phase 'both', no dataset)")
        required = {"static_batch": "batch", "concurrency": "concurrency",
                    "request_rate": "request_rate"}.get(self.load)
        if required and getattr(self, required) is None:
            raise ValueError(f"{required}: required with load = {self.load!r}")
        if self.load == "slo" and self.ttft_slo_ms is None and self.tpot_slo_ms is None:
            raise ValueError("ttft_slo_ms or tpot_slo_ms: required with load = 'slo'")
        self.check_assumed(ASSUMABLE)
        return self


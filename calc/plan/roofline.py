"""The pieces of `calc.infer`'s roofline that are not its report: the key/value heads a GPU
caches, the largest value a monotone test allows (the largest batch or context that fits), and
the tensor-parallel all-reduces of one forward pass on the link the GPUs share."""

from __future__ import annotations

from collections.abc import Callable

from calc.presets import get_system, system_for_gpu
from calc.spec import GPU, ModelSpec
from calc.timing.collectives import all_reduce
from calc.timing.constants import load_constants
from calc.timing.mixers import tp_reductions
from calc.timing.network import network_for
from calc.timing.operators import ACTIVATION_BYTES


def kv_heads_per_gpu(spec: ModelSpec, gpus: int) -> int:
    """Key/value heads one GPU caches, h_g: ⌈h_kv/K⌉, at least a whole head (replicated when K
    exceeds the heads); MLA's one latent serves every head, so each GPU keeps it whole."""
    return 1 if spec.attention.mla else -(-spec.n_kv_heads // gpus)


def largest_true(predicate: Callable[[int], bool], low: int, high: int) -> int:
    """The largest n in [low, high] with predicate(n), for a predicate true up to some point
    (predicate(low) must hold)."""
    while low < high:
        middle = (low + high + 1) // 2
        if predicate(middle):
            low = middle
        else:
            high = middle - 1
    return low


def tensor_parallel_seconds(spec: ModelSpec, gpu: GPU, gpus: int, tokens: int,
                            system: str | None) -> tuple[float, str] | None:
    """The all-reduces of one forward pass over `tokens` tokens with the weights split over
    `gpus` GPUs by tensor parallelism: one after each sublayer (one per parallel block; Mamba-1
    adds x_proj's, calc.timing.mixers) of tokens × d 16-bit activations (Shoeybi et al. 2019
    §3), on the link the group crosses
    (calc.timing: NCCL ring or tree, the system's bandwidth and latency). None when the GPU
    has no catalogued system to price them on."""
    if gpus == 1:
        return 0.0, "none (one GPU)"
    if system is None and gpu.system is None:
        return None
    platform = get_system(system) if system else system_for_gpu(gpu.name)
    link = network_for(platform, load_constants().network).link(1, gpus)
    seconds = 0.0
    for per_layer, width in tp_reductions(spec):
        size = tokens * width * ACTIVATION_BYTES
        seconds += per_layer * spec.n_layers * all_reduce(size, gpus, link)
    return seconds, link.name

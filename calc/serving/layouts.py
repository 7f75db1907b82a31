"""How a serving replica splits a model over GPUs, and which splits the engines accept.

A replica is tp·pp GPUs holding one copy of the weights: tensor parallelism inside a layer
(Shoeybi et al. 2019 §3), pipeline parallelism across layers. N GPUs hold N/(tp·pp) replicas,
each serving its own requests. Expert parallelism spreads an MoE layer's routed experts over ep
GPUs: with ep ≤ tp they sit inside one replica (vLLM's --enable-expert-parallel, TensorRT-LLM's
moe_expert_parallel_size); with ep > tp the experts are shared by ep/tp replicas whose attention
runs data-parallel (DeepSeek's and SGLang's DP attention), and every token crosses an
all-to-all to its experts and back.

The engines refuse a tensor-parallel degree that does not divide the attention heads, and one
that neither divides the key/value heads nor is a multiple of them (vLLM's
ModelConfig.verify_with_parallel_config and QKVParallelLinear replicate KV heads only when tp is
a multiple of them); calc refuses them too, and keeps tp inside a node unless asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.errors import CalcError
from calc.spec import ModelSpec


@dataclass(frozen=True)
class Replica:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    redundant_experts: int = 0

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    @property
    def group(self) -> int:
        """Replicas whose tokens share one expert-parallel group (1 when ep ≤ tp)."""
        return max(1, self.ep // self.tp)

    def label(self) -> str:
        text = f"tp{self.tp}" + (f"·pp{self.pp}" if self.pp > 1 else "")
        return text + (f"·ep{self.ep}" if self.ep > 1 else "")


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def tp_problem(spec: ModelSpec, tp: int) -> str | None:
    """Why an engine refuses tensor parallelism `tp` for `spec`, or None."""
    if spec.attention.mla is not None or (spec.layer_counts["attention"] == 0
                                          and spec.shared_block is None):
        heads, kv = spec.attention.n_heads, None
    else:
        heads, kv = spec.attention.n_heads, spec.n_kv_heads
    kind = spec.shaped_kind  # a kind's layers with heads of their own (kind_shapes)
    own = spec.heads_of(kind) if kind else (heads, kv)
    for count in (heads, own[0]):
        if count % tp:
            return f"tp={tp} does not divide the {count} attention heads"
    for count in (kv, own[1] if kv is not None else None):
        if count is not None and count % tp and tp % count:
            return (f"tp={tp} neither divides the {count} key/value heads nor is a multiple "
                    f"of them")
    return None


def valid_tps(spec: ModelSpec, most: int) -> list[int]:
    return [t for t in divisors_up_to(most) if tp_problem(spec, t) is None]


def divisors_up_to(most: int) -> list[int]:
    return list(range(1, most + 1))


def nearest_tps(spec: ModelSpec, tp: int, most: int) -> list[int]:
    """The valid tensor-parallel degrees up to `most` nearest to `tp` (below and above)."""
    valid = valid_tps(spec, max(most, tp))
    below = [t for t in valid if t < tp]
    above = [t for t in valid if t > tp]
    return [*below[-1:], *above[:1]]


def check_replica(spec: ModelSpec, replica: Replica, gpus_per_node: int,
                  cross_node_tp: bool = False) -> Replica:
    """`replica` if the engines accept it for `spec`; CalcError naming the nearest that work."""
    problem = tp_problem(spec, replica.tp)
    if problem:
        near = nearest_tps(spec, replica.tp, gpus_per_node)
        hint = " or ".join(f"--tp {t}" for t in near)
        raise CalcError(f"{problem}; nearest that work: {hint}" if hint else problem)
    if replica.tp > gpus_per_node and not cross_node_tp:
        raise CalcError(f"tp={replica.tp} spans {replica.tp // gpus_per_node or 1}+ nodes of "
                        f"{gpus_per_node} GPUs: its all-reduces would cross the network every "
                        f"layer; use --pp {-(-replica.tp // gpus_per_node)} with "
                        f"--tp {gpus_per_node}, or replicas, or --cross-node-tp")
    if replica.pp > spec.n_layers:
        raise CalcError(f"pp={replica.pp} exceeds the {spec.n_layers} layers; nearest that "
                        f"works: --pp {spec.n_layers}")
    moe = spec.moe
    if replica.ep > 1:
        if moe is None:
            raise CalcError(f"ep={replica.ep}: {spec.name} has no routed experts; leave out --ep")
        experts = moe.n_experts + replica.redundant_experts
        if experts % replica.ep:
            good = [e for e in divisors(experts) if e <= max(replica.ep, replica.tp)]
            raise CalcError(f"ep={replica.ep} does not divide the {experts} routed experts; "
                            f"nearest that works: --ep {good[-1]}")
        if replica.ep > replica.tp and replica.ep % replica.tp:
            raise CalcError(f"ep={replica.ep} is not a multiple of tp={replica.tp}")
    return replica

"""Reading a config.json field by field the way transformers does, and the checks and shapes
several model types share.

`HFConfig[key]` is the file's value, else transformers' default for the type (its ModelType's
defaults, calc.hf.model_type); aliases resolve as the config classes' attribute_map does. Sizes
and flags are checked where they are read, so a bad value is a CalcError naming the config's
field, not the spec's.
"""

from __future__ import annotations

from typing import Any, NoReturn

from calc.errors import CalcError
from calc.hf.model_type import TRANSFORMERS_VERSION, ModelType

# transformers' activation names (transformers/activations.py ACT2CLS) → calc's: a gated FFN
# (Llama's gate_proj/up_proj/down_proj) or a plain one (GPT-2's c_fc/c_proj).
_GATED = {"silu": "swiglu", "swish": "swiglu", "relu": "reglu", "relu2": "relu2glu"}
_PLAIN = {"silu": "silu", "swish": "silu", "relu": "relu", "relu2": "relu2"}
_GELUS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu_python", "gelu_accurate",
          "gelu_10", "quick_gelu")
_LAYER_KINDS = {"full_attention": "global", "sliding_attention": "local"}


class HFConfig:
    """A config.json read as transformers reads it: the file's value, else the type's default.

    Every default it hands out is remembered (`defaulted`), so the report can list what the
    file left to transformers; a key one edit away from a field calc reads (`hiden_size`), while
    that field is missing, is refused: transformers would silently use its default instead.
    """

    def __init__(self, raw: dict[str, Any], where: str, kind: ModelType):
        self.type = raw["model_type"]
        self.kind = kind
        self.where = f"{where} (model_type {self.type!r})"
        self.values = dict(raw)
        self.aliases = {**kind.aliases, **kind.legacy_kwargs}
        self.defaulted: dict[str, Any] = {}
        self._refuse_misspellings(raw)
        for alias, field in self.aliases.items():
            if alias in raw:
                if field in raw and raw[field] != raw[alias]:
                    self.fail(f"{alias}={raw[alias]!r} and {field}={raw[field]!r} name the same "
                              f"field with different values")
                self.values[field] = raw[alias]
        if (raw.get("per_layer_config") is not None
                and "per_layer_config" not in kind.getattr_fields):  # configuration_utils.py
            self.fail("per_layer_config gives layers different shapes; calc's spec has one "
                      "shape for every layer")

    def fail(self, message: str) -> NoReturn:
        raise CalcError(f"{self.where}: {message}")

    def known(self) -> set[str]:
        """Every key calc reads for this model type, aliases included."""
        return {*self.kind.defaults, *self.aliases, *self.kind.getattr_fields}

    def _refuse_misspellings(self, raw: dict[str, Any]) -> None:
        known = self.known()
        present = {self.aliases.get(key, key) for key in raw}
        for key in raw:
            if key in known:
                continue
            near = sorted(field for field in known - {key} if one_edit(key, field)
                          and self.aliases.get(field, field) not in present)
            if near:
                field = self.aliases.get(near[0], near[0])
                default = self.kind.defaults.get(field)
                instead = (f"transformers would use its default {field}={default!r} instead"
                           if default is not None else f"transformers would derive {field}")
                self.fail(f"{key!r} is not a field of {self.type} configs; did you mean "
                          f"{' or '.join(map(repr, near))}? ({instead})")

    def __getitem__(self, key: str) -> Any:
        key = self.aliases.get(key, key)
        if key in self.values:
            return self.values[key]
        if key in self.kind.getattr_fields:
            return None
        value = self.kind.defaults[key]  # a KeyError here is a field missing from the table
        if value is not None:  # None: derived from other fields, which the reader does
            self.defaulted[key] = value
        return value

    def defaulted_note(self) -> list[str]:
        """The sentence listing the fields the file left out (none: no sentence)."""
        if not self.defaulted:
            return []
        shown = ", ".join(f"{key}={value!r}" for key, value in self.defaulted.items())
        return [f"Not in the config, so transformers {TRANSFORMERS_VERSION}'s {self.type} "
                f"defaults were used: {shown}."]

    def given(self, key: str) -> bool:
        return self[key] is not None

    def size(self, key: str, minimum: int = 1) -> int:
        """A whole number >= minimum, or a CalcError naming the field."""
        value = self[key]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(f"{key}={value!r} must be a whole number >= {minimum}")
        return value

    def flag(self, key: str) -> bool:
        value = self[key]
        if not isinstance(value, bool):
            self.fail(f"{key}={value!r} must be true or false")
        return value

    def activation(self, key: str, gated: bool) -> str:
        """calc's activation for the field `key` names (gated: the FFN is gated)."""
        return self.activation_of(key, self[key], gated)

    def activation_of(self, key: str, name: Any, gated: bool) -> str:
        """calc's activation for `name`, read from `key` (a nested field's dotted name)."""
        table = _GATED if gated else _PLAIN
        if name in _GELUS:
            return "geglu" if gated else "gelu"
        if name not in table:
            self.fail(f"{key}={name!r} is not an activation calc knows; use one of "
                      f"{', '.join(sorted({*table, *_GELUS}))}")
        return table[name]


def one_edit(a: str, b: str) -> bool:
    """Whether b is a within one insertion, deletion, substitution or swap of two neighbours
    (hiden_size, hidden_szie, hiddensize → hidden_size)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = next((i for i, (x, y) in enumerate(zip(short, long, strict=False)) if x != y),
             len(short))
    return short[i:] == long[i + 1:]


# ---- checks several types share -------------------------------------------------------------
def heads(c: HFConfig, kv_key: str | None = "num_key_value_heads",
          heads_key: str = "num_attention_heads", width_key: str = "hidden_size",
          head_dim_key: str | None = "head_dim") -> dict[str, Any]:
    """n_heads, n_kv_heads and head_dim, checked the way the modeling code needs them."""
    d, h = c.size(width_key), c.size(heads_key)
    head_dim = c.size(head_dim_key) if head_dim_key and c.given(head_dim_key) else None
    if head_dim is None and d % h:
        c.fail(f"{heads_key}={h} does not divide {width_key}={d} and no head_dim is given")
    kv = c.size(kv_key) if kv_key and c.given(kv_key) else h
    if h % kv:
        c.fail(f"{kv_key}={kv} must divide {heads_key}={h}")
    return {"n_heads": h, "n_kv_heads": kv, "head_dim": head_dim}


def divides(c: HFConfig, heads_key: str = "num_attention_heads",
            width_key: str = "hidden_size") -> None:
    """Refuse what the config class's validate_architecture refuses (llama, gemma2, gpt_neox,
    deepseek_v2 in configuration_<type>.py): hidden_size a multiple of the heads."""
    if c.size(width_key) % c.size(heads_key):
        c.fail(f"{heads_key}={c[heads_key]} must divide {width_key}={c[width_key]} "
               f"(transformers' validate_architecture)")


def no_null_head_dim(c: HFConfig) -> None:
    """These attentions read config.head_dim through getattr with a fallback that a null in the
    file (or a class default of None) bypasses: transformers then fails on None."""
    if ("head_dim" in c.values or "head_dim" in c.kind.defaults) and c["head_dim"] is None:
        c.fail(f"head_dim=None: transformers' {c.type} attention reads config.head_dim with no "
               f"fallback for None; give the head width")


def top_k(c: HFConfig, key: str, experts: int, experts_key: str) -> int:
    chosen = c.size(key)
    if chosen > experts:
        c.fail(f"{key}={chosen} must not exceed {experts_key}={experts}")
    return chosen


def layer_kinds(c: HFConfig, default: list[str]) -> list[str]:
    """global/local per layer: the config's layer_types (full/sliding) if it has them, else
    `default`, the rule the config class applies without them."""
    if not c.given("layer_types"):
        return default
    types = c["layer_types"]
    if not isinstance(types, list) or len(types) != c.size("num_hidden_layers"):
        c.fail(f"layer_types must list one type per layer ({c['num_hidden_layers']}), "
               f"got {types!r}")
    for kind in types:
        if kind not in _LAYER_KINDS:
            c.fail(f"layer_types has {kind!r}; calc supports {', '.join(_LAYER_KINDS)}")
    return [_LAYER_KINDS[kind] for kind in types]


def layer_pattern(c: HFConfig, kinds: list[str]) -> dict[str, Any]:
    """sliding_window and the shortest repeating layer_pattern that gives `kinds`."""
    if "local" not in kinds:
        return {}
    window = c.size("sliding_window")
    if "global" not in kinds:
        return {"sliding_window": window}
    period = next(p for p in range(1, len(kinds) + 1)
                  if all(kind == kinds[i % p] for i, kind in enumerate(kinds)))
    if period > 1024:
        c.fail(f"layer_types repeat only every {period} layers; calc's layer_pattern holds "
               f"at most 1024")
    return {"sliding_window": window, "layer_pattern": tuple(kinds[:period])}


# ---- the two decoder shapes -----------------------------------------------------------------
def decoder(c: HFConfig, attention_heads: dict[str, Any], act_key: str | None = "hidden_act",
            ffn_bias: bool = False, **spec: Any) -> dict[str, Any]:
    """A Llama-shaped decoder: RMSNorm before each sublayer, gated FFN (SwiGLU where the
    modeling code fixes it: act_key None), RoPE. `d_ff` replaces intermediate_size for a type
    without one (every layer a mixture of experts)."""
    attention = {**attention_heads, **spec.pop("attention", {})}
    d_ff = spec.pop("d_ff", None) or c["intermediate_size"]
    return {
        "vocab_size": c["vocab_size"], "d_model": c["hidden_size"],
        "n_layers": c["num_hidden_layers"], "context_length": c["max_position_embeddings"],
        "attention": attention,
        "ffn": {"activation": c.activation(act_key, gated=True) if act_key else "swiglu",
                "d_ff": d_ff, "bias": ffn_bias},
        "norm": {"kind": "rmsnorm", "placement": "pre"},
        "position": {"kind": "rope"},
        "tie_embeddings": c.flag("tie_word_embeddings"),
        **spec,
    }


def biased_decoder(c: HFConfig, qkv: bool, out: bool, mlp: bool,
                   **spec: Any) -> dict[str, Any]:
    """`decoder` with biases on q, k, v (qkv), o (out) and the MLP (mlp): the switches
    Llama-shaped types spell each their own way."""
    attention = {"qkv_bias": qkv, "out_bias": out, **spec.pop("attention", {})}
    return decoder(c, heads(c), ffn_bias=mlp, attention=attention, **spec)


def layernorm_decoder(c: HFConfig, attention_heads: dict[str, Any], d_ff: int,
                      activation: str, bias: bool, context: int | None = None,
                      **spec: Any) -> dict[str, Any]:
    """GPT-NeoX / Falcon / BLOOM / OPT: LayerNorms with β before each sublayer, a plain FFN,
    biases on every projection or none."""
    return {
        "vocab_size": c["vocab_size"], "d_model": c["hidden_size"],
        "n_layers": c["num_hidden_layers"],
        "context_length": context or c["max_position_embeddings"],
        "attention": {**attention_heads, "qkv_bias": bias, "out_bias": bias},
        "ffn": {"activation": activation, "d_ff": d_ff, "bias": bias},
        "norm": {"kind": "layernorm", "placement": "pre"},
        "tie_embeddings": c.flag("tie_word_embeddings"),
        **spec,
    }


# ---- defaults -------------------------------------------------------------------------------
# The fields every Llama-shaped type's config class has, in the order decoder_defaults takes.
_DECODER_FIELDS = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                   "num_attention_heads", "num_key_value_heads", "hidden_act",
                   "max_position_embeddings", "tie_word_embeddings")


def decoder_defaults(*values: Any, **more: Any) -> dict[str, Any]:
    """A ModelType's defaults: _DECODER_FIELDS' values in that order, then the type's own."""
    return {**dict(zip(_DECODER_FIELDS, values, strict=True)), **more}

"""What calc knows of one transformers model_type: its reader, its defaults, its writer and the
traits that say what it is. A family module (calc/hf/families/) defines one ModelType per type
it holds; calc.hf.registry lists them all, in the order calc.hf.export tries their writers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from calc.spec import ModelSpec

# The transformers release every reader repeats and every default was read from; pinned by the
# `hf` extra in pyproject.toml, compared with the installed classes by tests/test_hf_defaults.py.
TRANSFORMERS_VERSION = "5.24.0"


@dataclass(frozen=True)
class Traits:
    """The few fields that tell architectures apart: when no writer holds a spec, the error
    speaks for the architecture most like it (calc.hf.export). The defaults are Llama's."""

    norm: str = "rmsnorm"
    positions: tuple[str, ...] = ("rope",)
    gated: bool = True  # a gated FFN (SwiGLU, GeGLU, ...)
    moe: bool = False
    mla: bool = False  # multi-head latent attention
    ssm: bool = False  # Mamba mixers
    ffn: bool = True  # an FFN on every layer (a pure Mamba stack has none)
    head: bool = False  # a prediction head before the LM head (ModernBERT's decoder)


@dataclass(frozen=True)
class ModelType:
    """One model_type of transformers' config.json, as calc reads and writes it.

    `read` takes the config (calc.hf.fields.HFConfig) and returns the spec's fields, repeating
    what transformers' modeling_<type>.py builds; `defaults` holds, for every field it reads,
    the default of the type's config class (None: derived from other fields, as the reader
    does). `write` maps a spec onto the type's config or raises calc.hf.writing.Unexpressible
    naming the field it cannot hold; a type without one is read only (an earlier writer in the
    registry holds its specs). `traits` come with a writer.
    """

    name: str
    read: Callable[[Any], dict[str, Any]]
    defaults: Mapping[str, Any]
    write: Callable[[ModelSpec], dict[str, Any]] | None = None
    traits: Traits | None = None
    # {name in a file: name calc reads}: the config class's attribute_map, resolved on every
    # get and set
    aliases: Mapping[str, str] = field(default_factory=dict)
    # old keyword names the class's __post_init__ still accepts (not in attribute_map)
    legacy_kwargs: Mapping[str, str] = field(default_factory=dict)
    # fields the modeling code reads with getattr and a fallback that are not class fields:
    # their "default" is absence
    getattr_fields: tuple[str, ...] = ()
    # transformers keeps the routing bias (moe.router_bias) as a buffer, not a parameter
    # (DeepSeek-V3's e_score_correction_bias): calc.hf.export.buffer_params
    router_bias_buffer: bool = False
    # transformers allocates expert weights no token reads (LongCat-Flash's gate_up_proj rows
    # of the zero-computation experts): calc.hf.export.unread_params
    zero_expert_rows: bool = False
    # the config field that gives the LM head fewer rows than the vocabulary
    # (ModelSpec.output_vocab_size), where the type has one; a writer without it builds a head
    # of vocab_size rows, and calc.hf.export does not try it for a narrower head
    head_rows_field: str | None = None

    def __post_init__(self) -> None:
        if (self.write is None) != (self.traits is None):
            raise ValueError(f"{self.name}: a writer comes with its traits and only with them")

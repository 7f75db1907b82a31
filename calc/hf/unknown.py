"""The one line for a config.json whose model_type calc does not read.

It names the supported types closest to it (by name, and by the transformers class the file's
`architectures` names) and the way to count the model anyway: a spec file (docs/custom-models.md
writes one for a model calc does not read). Types whose architecture the spec cannot express say
which feature is missing.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from calc.errors import CalcError
from calc.hf.registry import supported_types

# Model types transformers builds that the spec cannot express exactly, and the missing feature.
NEEDS = {
    "apertus1p5_text": "an LM head of output_vocab_size rows beside an embedding of vocab_size",
    "doge": "dynamic-mask attention (A, dt_proj) and learned residual scales",
    # modeling_laguna.py: g_proj is Linear(d, heads) by default (gating true or "per-head"), one
    # softplus gate per head, where attention.output_gate is one gate per channel (d × h·d_v);
    # and num_attention_heads_per_layer varies the query heads by layer (poolside/Laguna-XS.2:
    # 48 on its sliding layers, 64 on its full ones).
    "laguna": "a gate of one value per attention head (g_proj d → heads) and a different number "
              "of query heads on each layer (num_attention_heads_per_layer)",
    "mllama": "cross-attention layers to the image features between the self-attention layers",
}
SPEC_FILE = ("write the model as a spec file (TOML, docs/custom-models.md) and pass its path "
             "instead")


def _closest(model_type: str, config: dict[str, Any]) -> list[str]:
    supported = supported_types()
    names = [model_type.lower()]
    for arch in config.get("architectures") or []:
        # LlamaForCausalLM → llama; Qwen2VLForConditionalGeneration → qwen2vl
        names.append(re.sub(r"For\w+$|Model$|LMHead\w*$", "", str(arch)).lower())
    found: list[str] = []
    for name in names:
        flat = {kind.replace("_", "").replace("-", ""): kind for kind in supported}
        for match in difflib.get_close_matches(name.replace("_", "").replace("-", ""), flat,
                                               n=3, cutoff=0.6):
            if flat[match] not in found:
                found.append(flat[match])
    return found[:3]


def unsupported(model_type: Any, config: dict[str, Any], where: str) -> CalcError:
    """The CalcError for a model_type no reader reads."""
    if model_type in NEEDS:
        return CalcError(f"{where}: model_type={model_type!r} needs {NEEDS[model_type]}, which "
                         f"calc's spec cannot express yet; a spec file of the nearest model "
                         f"(docs/custom-models.md) counts it approximately")
    close = _closest(str(model_type), config) if model_type else []
    hint = (f"closest supported: {', '.join(close)}" if close
            else f"supported: {', '.join(supported_types())}")
    return CalcError(f"{where}: model_type={model_type!r} is not supported ({hint}); "
                     f"{SPEC_FILE}")

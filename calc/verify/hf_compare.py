"""calc against transformers' own model of the same config: the count nobody here wrote.

The config is the user's config.json when the model came from one, else the export of the spec
to the transformers architecture that expresses it exactly (calc.hf.export). Parameters must be
equal, up to the values transformers keeps as buffers (DeepSeek-V3's routing biases); forward
FLOPs × T must equal FlopCounterMode on transformers' eager forward (calc's full convention),
where transformers runs a part another way (calc.verify.hf_implementation) that part as it runs.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from calc.errors import CalcError
from calc.evaluate import count_params
from calc.spec import ModelSpec
from calc.verify.report import Check, HFComparison


def hf_seq_len(spec: ModelSpec, seq_len: int) -> int:
    """transformers' eager attention computes the whole masked T×T square even in a sliding-
    window or chunked layer, where calc's full convention counts w keys (or a chunk's): compare
    where the two agree."""
    att, n = spec.attention, spec.layer_counts
    limits = [seq_len, *([att.sliding_window] if n["local"] and att.sliding_window else []),
              *([att.chunk_size] if n["chunked"] and att.chunk_size else [])]
    return min(limits)


def compare_with_transformers(spec: ModelSpec, seq_len: int,
                              hf_config: dict[str, Any] | None = None) -> HFComparison:
    if find_spec("transformers") is None:
        raise CalcError("--hf needs transformers: pip install -e '.[hf]'")
    from calc.hf import hf_config_from_spec
    from calc.hf.export import buffer_params
    from calc.verify.hf_implementation import transformers_flops
    from calc.verify.hf_reference import count

    buffers = 0
    if hf_config is None:
        try:
            hf_config = hf_config_from_spec(spec)
        except CalcError as error:
            return HFComparison(compared=False, reason=str(error))
        buffers = buffer_params(spec, hf_config["model_type"])
    t = hf_seq_len(spec, seq_len)
    counted = count(hf_config, t)
    params = count_params(spec).total - buffers
    label = "parameters" + (f" (less {buffers:,} kept as buffers)" if buffers else "")
    forward, differences = transformers_flops(spec, hf_config, t)
    as_run = f"; as transformers runs {', '.join(differences)}" if differences else ""
    return HFComparison(
        compared=True, model_type=counted.model_type, seq_len=t,
        checks=[Check(quantity=label, calc=params, torch=counted.params,
                      match=params == counted.params),
                Check(quantity=f"forward FLOPs (1 × {t} tokens{as_run})", calc=forward,
                      torch=counted.forward, match=forward == counted.forward)])

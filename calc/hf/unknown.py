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
    # modular_inkling2_loop.py: Inkling2's layers (inkling2_text, read), with layers
    # loop_layer_index_start to loop_layer_index_end run loop_num_passes times per token (a
    # cache slot per pass): that schedule is loop.runs [[0, s-1, 1], [s, e-1, passes],
    # [e, L-1, 1]] (calc.spec.loop). Each later pass is fed the previous pass's blocks through
    # Inkling2LoopMessageGate (down_proj 2d → loop_gate_rank, forget_gate_proj and
    # message_gate_proj back to d) and Inkling2LoopMessageAttentionResidual's learned queries
    # (4 per loop layer), which the spec lacks, as it lacks block_residual through a loop.
    "inkling2_loop_text": "the message gates between its loop's passes "
                          "(Inkling2LoopMessageGate 2d → loop_gate_rank → d, learned message "
                          "queries) over its attention residuals over blocks",
    "reformer": "LSH and chunked local attention, axial position embeddings and reversible "
                "layers",
    "phi4_multimodal": "the image and audio encoders built inside the language model's "
                       "embedding (no text_config to count apart)",
}
# Model types transformers' causal-LM mapping (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) builds that are
# not decoder-only language models, and what they are: calc counts decoder-only LMs (and the
# language model of a multimodal wrapper, calc.hf.multimodal). tests/test_hf_coverage.py fails
# for a type of the mapping that is neither read, nor here, nor in NEEDS.
_ENCODER = ("a bidirectional encoder of the BERT family; transformers' causal-LM class runs it "
            "with a causal mask")
_CROSS = ("the decoder of an encoder-decoder model: each layer cross-attends to the encoder's "
          "output")
NOT_DECODER_LMS = {
    **dict.fromkeys(("bert", "bert-generation", "big_bird", "camembert", "data2vec-text",
                     "electra", "ernie", "megatron-bert", "rembert", "roberta",
                     "roberta-prelayernorm", "roc_bert", "roformer", "xlm-roberta",
                     "xlm-roberta-xl", "xmod"), _ENCODER),
    "xlm": "XLM, a cross-lingual masked-LM encoder with language embeddings",
    "xlnet": "XLNet, a permutation language model (two-stream relative attention over a "
             "memory), not a causal decoder",
    **dict.fromkeys(("bart", "bigbird_pegasus", "blenderbot", "blenderbot-small", "marian",
                     "mbart", "mvp", "pegasus", "plbart", "prophetnet"), _CROSS),
    "trocr": f"{_CROSS} (an image encoder's)",
    "whisper": f"{_CROSS} (a speech encoder's)",
    "musicgen": "the audio-token decoder of a text-to-music model (one embedding and head per "
                "codebook, cross-attention to a text encoder)",
    "musicgen_melody": "the audio-token decoder of a text-to-music model (one embedding and head "
                       "per codebook)",
    "moshi": "a speech-text model: a depth decoder over audio codebooks beside the text decoder",
    "git": "an image-captioning model: a vision encoder's tokens prefix a BERT-style decoder",
    "blt": "a byte-level model: a patcher, a local encoder and decoder and a global transformer "
           "over byte patches",
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
    if model_type in NOT_DECODER_LMS:
        return CalcError(f"{where}: model_type={model_type!r} is {NOT_DECODER_LMS[model_type]}; "
                         f"calc counts decoder-only language models")
    if model_type in NEEDS:
        return CalcError(f"{where}: model_type={model_type!r} needs {NEEDS[model_type]}, which "
                         f"calc's spec cannot express yet; a spec file of the nearest model "
                         f"(docs/custom-models.md) counts it approximately")
    close = _closest(str(model_type), config) if model_type else []
    hint = (f"closest supported: {', '.join(close)}" if close
            else f"supported: {', '.join(supported_types())}")
    return CalcError(f"{where}: model_type={model_type!r} is not supported ({hint}); "
                     f"{SPEC_FILE}")

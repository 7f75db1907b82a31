"""The language model inside a multimodal config.json (LLaVA, Mistral 3, Idefics 3, Gemma 3, ...).

A vision-language (or audio-language) config wraps its text model's config in `text_config` next
to `vision_config` / `audio_config`. calc counts the language model: the text config read by
its own model_type's reader, with the LM head tied as the wrapper's transformers class ties it
(WRAPPERS); the vision and audio towers and their projectors are not counted, and the report
says so. The table is data read from transformers (calc.hf.model_type.TRANSFORMERS_VERSION) and
tests/test_hf_reference.py checks it against the installed classes.
"""

from __future__ import annotations

from typing import Any, Literal

from calc.errors import CalcError
from calc.hf.registry import find

# Which flag ties the LM head to the embedding in the wrapper's transformers model: "top" the
# wrapper's own tie_word_embeddings (text_config's is ignored), "either" the wrapper's or
# text_config's. The wrapper's default flag comes third.
TieRule = Literal["top", "either"]
WRAPPERS: dict[str, tuple[str, TieRule, bool]] = {
    # wrapper model_type: (text model_type when text_config names none, tie rule, default)
    "llava": ("llama", "either", False),
    "llava_next": ("llama", "top", False),
    "llava_next_video": ("llama", "either", False),
    "llava_onevision": ("qwen2", "either", False),
    "vipllava": ("llama", "top", False),
    "video_llava": ("llama", "top", False),
    "mistral3": ("mistral", "top", True),
    "internvl": ("qwen2", "top", True),
    "paligemma": ("gemma", "top", True),
    "idefics3": ("llama", "top", False),
    "smolvlm": ("llama", "top", False),
    "gemma3": ("gemma3_text", "top", True),
    "gemma3n": ("gemma3n_text", "top", True),
    "gemma4": ("gemma4_text", "top", True),
    "gemma4_unified": ("gemma4_unified_text", "top", True),
    "llama4": ("llama4_text", "either", False),
    # MllamaForConditionalGeneration ties no head (calc.hf.families.mllama); its reader says so
    "mllama": ("mllama_text_model", "top", False),
    "lfm2_vl": ("lfm2", "top", True),
    "cohere2_vision": ("cohere2", "top", True),
    "got_ocr2": ("qwen2", "top", True),
    "qwen3_5": ("qwen3_5_text", "top", False),
    "qwen3_5_moe": ("qwen3_5_moe_text", "top", False),
    "qwen4_exp": ("qwen4_exp_text", "top", False),
    "fuyu": ("persimmon", "top", False),
    "moss_transcribe_diarize": ("qwen3", "top", True),
    "emu3": ("emu3_text_model", "top", False),
    # Apertus 1.5: discrete image and audio tokenizers feed the language model's embedding;
    # Apertus1p5ForConditionalGeneration's lm_head has text_config's output_vocab_size rows
    "apertus1p5": ("apertus1p5_text", "top", False),
    # dots3-note: vision and audio towers beside dots3's text model
    "dots3_note": ("dots3_note_text", "top", False),
    # MiniMaxM3VLConfig.__post_init__ takes text_config's tie when its own is false
    "minimax_m3_vl": ("minimax_m3_vl_text", "either", False),
    # Inkling: vision and audio towers beside inkling_text; InklingForConditionalGeneration
    # ties no head (_tied_weights_keys = {}), which the text reader holds whatever the flag
    "inkling_mm_model": ("inkling_text", "top", False),
    # Inkling 2: a vision tower beside inkling2_text; Inkling2ForConditionalGeneration ties no
    # head (_tied_weights_keys = {}) and builds its lm_head of unpadded_vocab_size rows
    "inkling2": ("inkling2_text", "top", False),
}
# Keys that hold a sub-config which is not a tower.
_NOT_TOWERS = ("text_config", "quantization_config")
# Wrappers whose published config.json holds the text model's fields at its top level
# (configuration_dots3_note.py, Dots3NoteConfig.__post_init__: without text_config it builds
# Dots3NoteTextConfig from the top-level keywords), with the wrapper's own fields
TOP_LEVEL_TEXT = {"dots3_note": ("image_token_id", "video_token_id", "audio_token_id")}


def is_multimodal(config: dict[str, Any]) -> bool:
    """A wrapper whose language model calc counts; a type calc reads whole with its
    text_config (Gemma 4's assistants, calc.hf.families.gemma) is none."""
    if find(config.get("model_type")) is not None:
        return False
    return (isinstance(config.get("text_config"), dict)
            or (config.get("model_type") in TOP_LEVEL_TEXT and "text_config" not in config))


def _towers(config: dict[str, Any]) -> list[str]:
    return sorted(key for key, value in config.items()
                  if key.endswith("_config") and key not in _NOT_TOWERS
                  and isinstance(value, dict))


def language_config(config: dict[str, Any], where: str) -> tuple[dict[str, Any], str]:
    """The text model's config of a multimodal config.json, as calc's readers read it, and the
    note that says what is left out."""
    wrapper = config.get("model_type")
    if "text_config" in config:
        text = dict(config["text_config"])
    else:  # the text model's fields at the top level (TOP_LEVEL_TEXT)
        own = {"model_type", "architectures", *TOP_LEVEL_TEXT[wrapper]}
        text = {key: value for key, value in config.items()
                if key not in own and key not in _towers(config)}
    default_type, rule, tied = WRAPPERS.get(wrapper, (None, None, None))
    text_type = text.setdefault("model_type", default_type)
    if text_type is None:
        raise CalcError(f"{where}: text_config has no model_type and calc does not know the "
                        f"default text model of model_type={wrapper!r}; add the text model's "
                        f"model_type to text_config")
    top = config.get("tie_word_embeddings", tied)
    kind = find(text_type)
    own = text.get("tie_word_embeddings",
                   kind.defaults.get("tie_word_embeddings") if kind else None)
    if rule == "top":
        text["tie_word_embeddings"] = top
    elif rule == "either":
        text["tie_word_embeddings"] = bool(top) or bool(own)
    elif "tie_word_embeddings" in config and config["tie_word_embeddings"] != own:
        raise CalcError(f"{where}: tie_word_embeddings={config['tie_word_embeddings']!r} and "
                        f"text_config.tie_word_embeddings={own!r}: calc does not know which one "
                        f"model_type={wrapper!r} ties its LM head by; make them agree")
    towers = _towers(config)
    names = " and ".join(tower.removesuffix("_config") for tower in towers)
    left_out = (f"the {names} {'tower' if len(towers) == 1 else 'towers'} "
                f"({', '.join(towers)}) and the projector are" if towers
                else "the modules outside text_config are")
    note = (f"{wrapper} is multimodal: the counts are its language model (text_config, "
            f"model_type {text_type}); {left_out} not counted.")
    return text, note

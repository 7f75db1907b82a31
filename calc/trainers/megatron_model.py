"""The model a Megatron-LM argument list trains: a ModelSpec built from its shape flags
(megatron/training/arguments.py defaults: learned absolute positions, LayerNorm, GeLU, biases,
tied embeddings, dropout 0.1, the vocabulary padded to a multiple of 128 × t; MoE from
--num-experts), or, for what that builder cannot express (multi-latent attention, MoE layer
patterns, multi-token prediction), the preset whose checkpoint --tokenizer-model names when
its shape agrees."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from calc.errors import CalcError, one_line
from calc.presets import load_preset, preset_for_hub_id
from calc.spec import ModelSpec
from calc.trainers.base import TrainerConfig

GPT2_BPE_VOCAB = 50257  # the GPT-2 BPE tokenizer the examples' gpt2-vocab.json holds
# Llama 2's SentencePiece tokenizer (Llama2Tokenizer): meta-llama/Llama-2-7b-hf config.json
# vocab_size 32000, the preset llama2-7b cites it
LLAMA2_VOCAB = 32000
PAD_MULTIPLE = 128  # --make-vocab-size-divisible-by default
DROPOUT = 0.1  # --hidden-dropout and --attention-dropout defaults

# Flags that set the model's shape: read here, turned into a spec below.
SHAPE = ("--num-layers", "--hidden-size", "--num-attention-heads", "--ffn-hidden-size",
         "--num-query-groups", "--group-query-attention", "--max-position-embeddings",
         "--swiglu", "--normalization", "--position-embedding-type",
         "--untie-embeddings-and-output-weights", "--disable-bias-linear", "--vocab-size",
         "--vocab-file", "--merge-file", "--tokenizer-type", "--make-vocab-size-divisible-by",
         "--hidden-dropout", "--attention-dropout", "--seq-length", "--num-experts",
         "--moe-router-topk", "--moe-ffn-hidden-size", "--tokenizer-model", "--kv-channels")
# Shapes the builder does not express: the model then comes from --tokenizer-model.
BEYOND = ("--multi-latent-attention", "--moe-layer-freq", "--mtp-num-layers",
          "--moe-shared-expert-intermediate-size", "--hybrid-layer-pattern")


def _int(flag: str, values: list[str]) -> int:
    if not values:
        raise CalcError(f"{flag}: expected a value")
    try:
        return int(values[0])
    except ValueError:
        raise CalcError(f"{flag}={values[0]!r}: expected a whole number") from None


def _vocab(flags: dict[str, list[str]], tp: int) -> tuple[int, str] | None:
    """Megatron's padded vocabulary (megatron/training/tokenizer: _vocab_size_with_padding)."""
    tokenizer = flags.get("--tokenizer-type", [""])[0]
    if "--vocab-size" in flags:
        raw, why = _int("--vocab-size", flags["--vocab-size"]), "--vocab-size"
    elif "--merge-file" in flags or tokenizer == "GPT2BPETokenizer":
        raw, why = GPT2_BPE_VOCAB, "the GPT-2 BPE tokenizer (--vocab-file/--merge-file)"
    elif tokenizer == "Llama2Tokenizer":
        raw, why = LLAMA2_VOCAB, "Llama 2's tokenizer (Llama2Tokenizer)"
    else:
        return None
    multiple = PAD_MULTIPLE * tp
    if "--make-vocab-size-divisible-by" in flags:
        multiple = _int("--make-vocab-size-divisible-by",
                        flags["--make-vocab-size-divisible-by"]) * tp
    padded = -(-raw // multiple) * multiple
    return padded, f"{raw:,} from {why}, padded to a multiple of {multiple:,}: {padded:,}"


def _take_shape(config: TrainerConfig, flags: dict[str, list[str]], meaning: str) -> None:
    for flag in (*SHAPE, *BEYOND):
        if flag in flags:
            config.take(flag, " ".join(flags[flag]), meaning)


def _from_tokenizer(flags: dict[str, list[str]], config: TrainerConfig) -> str | None:
    """The preset of the checkpoint --tokenizer-model names, when its layers, width and heads
    are the flags'."""
    tokenizer = flags.get("--tokenizer-model", [""])[0]
    preset = preset_for_hub_id(tokenizer) if "/" in tokenizer else None
    if preset is None:
        return None
    spec = load_preset(preset).spec
    shape = {"--num-layers": spec.n_layers, "--hidden-size": spec.d_model,
             "--num-attention-heads": spec.attention.n_heads}
    if any(flag in flags and _int(flag, flags[flag]) != value for flag, value in shape.items()):
        return None
    _take_shape(config, flags, f"the model: preset {preset} (the checkpoint --tokenizer-model "
                               f"names, with these layers, width and heads)")
    return preset


def model(flags: dict[str, list[str]], config: TrainerConfig) -> ModelSpec | str | None:
    """The model the flags train (a spec, or a preset name), its shape flags recorded as read;
    None when they do not say (MODEL must be given)."""
    if any(flag in flags for flag in BEYOND):
        preset = _from_tokenizer(flags, config)
        if preset is None:
            _take_shape(config, flags, "a shape calc builds only from a preset (MLA, MoE layer "
                                       "patterns, MTP): give MODEL")
        return preset
    needed = ("--num-layers", "--hidden-size", "--num-attention-heads")
    if any(flag not in flags for flag in needed):
        _take_shape(config, flags, "the model's shape is incomplete: give MODEL")
        return None
    tp = config.options.get("tp", 1)
    vocab = _vocab(flags, tp)
    if vocab is None:
        preset = _from_tokenizer(flags, config)
        if preset is None:
            _take_shape(config, flags, "no vocabulary size or tokenizer in the arguments: "
                                       "give MODEL")
        return preset
    spec = _spec(flags, config, vocab[0])
    _take_shape(config, flags, "the model's shape")
    config.take("(vocabulary)", vocab[0], vocab[1])
    return spec


def _spec(flags: dict[str, list[str]], config: TrainerConfig, vocab: int) -> ModelSpec:
    d = _int("--hidden-size", flags["--hidden-size"])
    heads = _int("--num-attention-heads", flags["--num-attention-heads"])
    swiglu = "--swiglu" in flags
    # arguments.py: d_ff = 4h, or int(4h · 2/3 / 64) · 64 with SwiGLU
    d_ff = (_int("--ffn-hidden-size", flags["--ffn-hidden-size"])
            if "--ffn-hidden-size" in flags else
            int(4 * d * 2 / 3 / 64) * 64 if swiglu else 4 * d)
    groups = (_int("--num-query-groups", flags["--num-query-groups"])
              if "--group-query-attention" in flags and "--num-query-groups" in flags
              else heads)
    seq = _int("--seq-length", flags["--seq-length"]) if "--seq-length" in flags else None
    rope = flags.get("--position-embedding-type", ["learned_absolute"])[0] == "rope"
    positions = (_int("--max-position-embeddings", flags["--max-position-embeddings"])
                 if "--max-position-embeddings" in flags else seq)
    bias = "--disable-bias-linear" not in flags
    rms = flags.get("--normalization", ["LayerNorm"])[0] == "RMSNorm"
    dropout = any(float(flags.get(f, [DROPOUT])[0]) > 0
                  for f in ("--hidden-dropout", "--attention-dropout"))
    fields = {
        "name": Path(config.path).stem, "vocab_size": vocab, "d_model": d,
        "n_layers": _int("--num-layers", flags["--num-layers"]),
        "context_length": seq or positions or 2048,
        "attention": {"n_heads": heads, "n_kv_heads": groups, "qkv_bias": bias,
                      "out_bias": bias},
        "ffn": {"activation": "swiglu" if swiglu else "gelu", "d_ff": d_ff, "bias": bias},
        "norm": {"kind": "rmsnorm" if rms else "layernorm", "placement": "pre"},
        "position": {"kind": "rope"} if rope else {"kind": "learned",
                                                   "max_positions": positions},
        "tie_embeddings": "--untie-embeddings-and-output-weights" not in flags,
    }
    if "--num-experts" in flags:  # every layer's FFN a mixture (Megatron's default pattern)
        fields["moe"] = {
            "n_experts": _int("--num-experts", flags["--num-experts"]),
            "top_k": _int("--moe-router-topk", flags.get("--moe-router-topk", ["2"])),
            "d_expert": (_int("--moe-ffn-hidden-size", flags["--moe-ffn-hidden-size"])
                         if "--moe-ffn-hidden-size" in flags else d_ff)}
    try:
        spec = ModelSpec(**fields)
    except ValidationError as error:
        raise CalcError(one_line(error, f"--from {config.path}")) from None
    config.options.setdefault("dropout", dropout)
    if seq is not None:
        config.options["seq_len"] = seq
    return spec

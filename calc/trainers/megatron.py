"""A Megatron-LM argument list (the `--tensor-model-parallel-size 8 ...` line, or the bash
arrays of examples/gpt3/train_gpt3_175b_distributed.sh): layout, precision, recomputation and
the model's shape, from which a ModelSpec is built (megatron/training/arguments.py defaults:
learned absolute positions, LayerNorm, GeLU, biases, tied embeddings, dropout 0.1, the
vocabulary padded to a multiple of 128 × t)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from pydantic import ValidationError

from calc.errors import CalcError, one_line
from calc.spec import ModelSpec
from calc.trainers.base import TrainerConfig

GPT2_BPE_VOCAB = 50257  # the GPT-2 BPE tokenizer the examples' gpt2-vocab.json holds
PAD_MULTIPLE = 128  # --make-vocab-size-divisible-by default
DROPOUT = 0.1  # --hidden-dropout and --attention-dropout defaults

# Flags that set the model's shape: read here, turned into a spec below.
SHAPE = ("--num-layers", "--hidden-size", "--num-attention-heads", "--ffn-hidden-size",
         "--num-query-groups", "--group-query-attention", "--max-position-embeddings",
         "--swiglu", "--normalization", "--position-embedding-type",
         "--untie-embeddings-and-output-weights", "--disable-bias-linear", "--vocab-size",
         "--vocab-file", "--merge-file", "--tokenizer-type", "--make-vocab-size-divisible-by",
         "--hidden-dropout", "--attention-dropout", "--seq-length")


# A shell assignment of a literal (MP_SIZE=1, GPUS_PER_NODE=8): launch scripts name the values
# they pass as flags (DeepSpeedExamples' `--model-parallel-size ${MP_SIZE}`).
ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=([\w.+-]+)\s*(?:#.*)?$", re.M)


def _substitute(text: str) -> str:
    """`text` with $NAME and ${NAME} replaced where the script assigns NAME a literal."""
    values = dict(ASSIGNMENT.findall(text))
    return re.sub(r"\$\{(\w+)\}|\$(\w+)",
                  lambda m: values.get(m.group(1) or m.group(2), m.group(0)), text)


def _tokens(text: str) -> list[str]:
    """The words of `text`; a quoted string of flags (gpt_options=" --num-layers 50 ...") is
    split into its own words."""
    words = []
    for token in shlex.split(text, posix=True):
        if " --" in f" {token}" and any(c.isspace() for c in token):
            words.extend(_tokens(token))
        else:
            words.append(token)
    return words


def arguments(text: str) -> dict[str, list[str]]:
    """Every `--flag value...` in `text`, comments dropped (a shell script or one line), the
    script's literal shell variables substituted."""
    lines = [line.split("#", 1)[0] for line in _substitute(text).splitlines()]
    tokens = _tokens(" ".join(lines).replace("\\", " "))
    flags: dict[str, list[str]] = {}
    current = None
    for token in tokens:
        if token.startswith("--"):
            flag, _, inline = token.partition("=")
            current = flag
            flags[current] = [inline] if inline else []
        elif current is not None:
            flags[current].append(token)
            if len(flags[current]) >= 3:  # --rampup-batch-size takes three; nothing takes more
                current = None
    return flags


def looks_like(text: str) -> bool:
    """Megatron-LM arguments: a flag of its model or layout (pretrain_gpt.py's)."""
    return any(flag in text for flag in ("--num-layers", "--tensor-model-parallel-size",
                                         "--micro-batch-size", "--pipeline-model-parallel-size"))


def read(text: str, path: Path) -> TrainerConfig:
    config = TrainerConfig("megatron", str(path))
    flags = arguments(text)
    for flag, values in flags.items():
        if flag in SHAPE:
            continue
        if not _take(config, flag, values):
            config.ignored.append(flag)
    spec = _spec(flags, config)
    if spec is not None:
        config.model = spec
    return config


def _value(flag: str, values: list[str]) -> str:
    if not values:
        raise CalcError(f"{flag}: expected a value")
    return values[0]


def _int(flag: str, values: list[str]) -> int:
    try:
        return int(_value(flag, values))
    except ValueError:
        raise CalcError(f"{flag}={values[0]!r}: expected a whole number") from None


def _take(config: TrainerConfig, flag: str, values: list[str]) -> bool:
    shown = " ".join(values)
    simple = {"--tensor-model-parallel-size": "tp", "--pipeline-model-parallel-size": "pp",
              "--micro-batch-size": "micro_batch", "--global-batch-size": "global_batch",
              "--context-parallel-size": "cp", "--expert-model-parallel-size": "ep",
              # Megatron-LM v1 (and DeepSpeedExamples' fork of it): tensor parallelism and the
              # per-GPU batch under their old names
              "--model-parallel-size": "tp", "--batch-size": "micro_batch"}
    if values and values[0].startswith("$"):
        return False  # a shell variable the script does not assign
    if flag in simple:
        n = _int(flag, values)
        word = simple[flag].replace("_", "-" if simple[flag] == "micro_batch" else " ")
        config.take(flag, shown, f"{word} {n}", **{simple[flag]: n})
    elif flag in ("--bf16", "--fp16"):
        config.take(flag, shown, f"dtype {flag[2:]}, mixed precision", dtype=flag[2:])
    elif flag == "--sequence-parallel":
        config.take(flag, shown, "sequence parallelism", sequence_parallel=True)
    elif flag == "--use-distributed-optimizer":
        config.take(flag, shown, "optimizer states sharded over data parallelism: ZeRO 1",
                    zero=1)
    elif flag == "--checkpoint-activations":  # Megatron-LM v1: every layer's input kept
        config.take(flag, shown, "full recomputation (Megatron-LM v1 flag)", recompute="full")
    elif flag == "--recompute-activations":
        config.take(flag, shown, "selective recomputation", recompute="selective")
    elif flag == "--recompute-granularity":
        config.take(flag, shown, f"{_value(flag, values)} recomputation",
                    recompute=_value(flag, values))
    elif flag == "--use-flash-attn" or (flag == "--attention-backend" and values
                                        and values[0] in ("flash", "fused", "auto")):
        config.take(flag, shown, "flash/fused attention: no s×s scores stored",
                    flash_attention=True)
    elif flag == "--fp8-format":
        config.take(flag, shown, "FP8 GEMMs (Transformer Engine)", precision="fp8")
    elif flag == "--optimizer" and values and values[0] in ("adam", "sgd"):
        name = "adamw" if values[0] == "adam" else "sgd"
        config.take(flag, shown, f"optimizer {name}", optimizer=name)
    else:
        return False
    return True


def _vocab(flags: dict[str, list[str]], tp: int) -> tuple[int, str] | None:
    """Megatron's padded vocabulary (megatron/training/tokenizer: _vocab_size_with_padding)."""
    if "--vocab-size" in flags:
        raw, why = _int("--vocab-size", flags["--vocab-size"]), "--vocab-size"
    elif "--merge-file" in flags or flags.get("--tokenizer-type", [""])[0] == "GPT2BPETokenizer":
        raw, why = GPT2_BPE_VOCAB, "the GPT-2 BPE tokenizer (--vocab-file/--merge-file)"
    else:
        return None
    multiple = PAD_MULTIPLE * tp
    if "--make-vocab-size-divisible-by" in flags:
        multiple = _int("--make-vocab-size-divisible-by",
                        flags["--make-vocab-size-divisible-by"]) * tp
    padded = -(-raw // multiple) * multiple
    return padded, f"{raw:,} from {why}, padded to a multiple of {multiple:,}: {padded:,}"


def _spec(flags: dict[str, list[str]], config: TrainerConfig) -> ModelSpec | None:
    needed = ("--num-layers", "--hidden-size", "--num-attention-heads")
    if any(flag not in flags for flag in needed):
        for flag in SHAPE:
            if flag in flags:
                config.take(flag, " ".join(flags[flag]), "the model's shape is incomplete: "
                                                         "give MODEL")
        return None
    tp = config.options.get("tp", 1)
    vocab = _vocab(flags, tp)
    if vocab is None:
        config.take("--num-layers", " ".join(flags["--num-layers"]),
                    "no vocabulary size or tokenizer in the arguments: give MODEL")
        return None
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
        "name": Path(config.path).stem, "vocab_size": vocab[0], "d_model": d,
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
    try:
        spec = ModelSpec(**fields)
    except ValidationError as error:
        raise CalcError(one_line(error, f"--from {config.path}")) from None
    for flag in SHAPE:
        if flag in flags:
            config.take(flag, " ".join(flags[flag]), "the model's shape")
    config.take("(vocabulary)", vocab[0], vocab[1])
    config.options.setdefault("dropout", dropout)
    if seq is not None:
        config.options["seq_len"] = seq
    return spec

"""A Megatron-LM argument list (the `--tensor-model-parallel-size 8 ...` line, the bash arrays of
its example scripts, or the MODEL_ARGS of its release-test YAMLs): the layout as Megatron-LM
resolves it (megatron/training/arguments.py at 779c5b748d: virtual stages from layers per
virtual stage, sequence parallelism off at tp 1, the distributed optimizer, Megatron-FSDP's
sharding, recomputation, fp8), the world size its launcher line gives, and the model
(calc.trainers.megatron_model)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from calc.errors import CalcError
from calc.trainers.base import TrainerConfig
from calc.trainers.megatron_model import BEYOND, SHAPE, model

# A shell assignment of a literal (MP_SIZE=1, GPUS_PER_NODE=8), or of a variable with a default
# (TP=${TP:-1}, NNODES=${SLURM_NNODES:-"1"}): launch scripts name the values they pass as flags.
ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=([\w.+-]+)\s*(?:#.*)?$", re.M)
DEFAULTED = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=\$\{\w+:-\"?([\w.+-]*)\"?\}", re.M)
# Megatron-FSDP's --data-parallel-sharding-strategy (arguments.py:2861) as a ZeRO stage
SHARDING = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3}
# Launchers' flags whose product is the world size: torchrun, the deepspeed launcher
WORLD = {"--nproc_per_node": "GPUs per node", "--nnodes": "nodes", "--num_gpus": "GPUs per node",
         "--num_nodes": "nodes"}


def _substitute(text: str) -> str:
    """`text` with $NAME, ${NAME} and ${NAME:-default} replaced where the script assigns NAME a
    literal (or a variable with a default), or gives a default."""
    values = {**dict(DEFAULTED.findall(text)), **dict(ASSIGNMENT.findall(text))}

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(3)
        if name in values:
            return values[name]
        return match.group(2) if match.group(2) is not None else match.group(0)

    return re.sub(r"\$\{(\w+):-\"?([^}\"]*)\"?\}|\$\{(\w+)\}|\$(\w+)",
                  lambda m: value(m) if m.group(4) is None else values.get(m.group(4),
                                                                           m.group(0)), text)


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
    script's shell variables substituted."""
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
    return read_flags(arguments(text), path)


def read_flags(flags: dict[str, list[str]], path: Path) -> TrainerConfig:
    """The run `flags` (flag → its values) describe, as Megatron-LM resolves them."""
    config = TrainerConfig("megatron", str(path), framework="megatron")
    for flag, values in flags.items():
        if flag in SHAPE or flag in BEYOND or flag in WORLD or flag in LATER:
            continue
        if not _take(config, flag, values):
            config.ignored.append(flag)
    spec = model(flags, config)
    if spec is not None:
        config.model = spec
    if "--seq-length" in flags:
        config.options["seq_len"] = _int("--seq-length", flags["--seq-length"])
    _world(config, flags)
    _resolve(config, flags, spec)
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


SIMPLE = {"--tensor-model-parallel-size": "tp", "--pipeline-model-parallel-size": "pp",
          "--micro-batch-size": "micro_batch", "--global-batch-size": "global_batch",
          "--context-parallel-size": "cp", "--expert-model-parallel-size": "ep",
          "--num-virtual-stages-per-pipeline-rank": "vpp",
          # Megatron-LM v1 (and DeepSpeedExamples' fork of it): tensor parallelism and the
          # per-GPU batch under their old names
          "--model-parallel-size": "tp", "--batch-size": "micro_batch"}
# Flags resolved once every flag is read (_resolve): they depend on others.
LATER = ("--sequence-parallel", "--num-layers-per-virtual-pipeline-stage",
         "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
         "--use-megatron-fsdp", "--data-parallel-sharding-strategy", "--deepspeed_config",
         "--deepspeed")


def _take(config: TrainerConfig, flag: str, values: list[str]) -> bool:
    shown = " ".join(values)
    if values and values[0].startswith("$"):
        return False  # a shell variable the script does not assign
    if flag in SIMPLE:
        n, option = _int(flag, values), SIMPLE[flag]
        word = option.replace("_", "-" if option == "micro_batch" else " ")
        config.take(flag, shown, f"{word} {n}", **{option: n})
    elif flag in ("--bf16", "--fp16"):
        config.take(flag, shown, f"dtype {flag[2:]}, mixed precision", dtype=flag[2:])
    elif flag == "--use-distributed-optimizer":
        config.take(flag, shown, "optimizer states and fp32 main weights sharded over the "
                                 "data-parallel ranks: ZeRO 1", zero=1)
    elif flag == "--checkpoint-activations":  # Megatron-LM v1: every layer's input kept
        config.take(flag, shown, "full recomputation (Megatron-LM v1 flag)", recompute="full")
    elif flag == "--recompute-activations":
        config.take(flag, shown, "selective recomputation (arguments.py:568-570)",
                    recompute="selective")
    elif flag == "--recompute-granularity":
        config.take(flag, shown, f"{_value(flag, values)} recomputation",
                    recompute=_value(flag, values))
    elif flag in ("--recompute-modules", "--recompute-method", "--recompute-num-layers"):
        config.take(flag, shown, "which layers or modules recompute (calc: the granularity "
                                 "alone)")
    elif flag == "--use-flash-attn" or (flag == "--attention-backend" and values
                                        and values[0] in ("flash", "fused", "auto")):
        config.take(flag, shown, "flash/fused attention: no s×s scores stored",
                    flash_attention=True)
    elif flag == "--fp8-format":
        config.take(flag, shown, f"FP8 GEMMs ({_value(flag, values)}; Transformer Engine)",
                    precision="fp8")
    elif flag in ("--fp8-recipe", "--fp8-param-gather", "--fp8-amax-history-len",
                  "--fp8-amax-compute-algo"):
        config.take(flag, shown, "how FP8 runs (calc: fp8 GEMMs with their weight copies)")
    elif flag == "--megatron-fsdp-main-grads-dtype" and values:
        bf16 = values[0] == "bf16"
        config.take(flag, shown, "bf16 main gradients beside the fp32 main weights: recipe "
                                 "'mixed' (16-bit weights and gradients)" if bf16 else
                    f"{values[0]} main gradients", **({"recipe": "mixed"} if bf16 else {}))
    elif flag == "--megatron-fsdp-grad-comm-dtype":
        config.take(flag, shown, "the dtype gradients are reduced in")
    elif flag == "--grad-reduce-in-bf16":
        config.take(flag, shown, "gradients reduced in bf16; the main gradients stay fp32")
    elif flag == "--expert-tensor-parallel-size":
        config.take(flag, shown, f"expert tensor parallelism {_value(flag, values)} (calc "
                                 f"splits the experts over tp too: not modelled)")
    elif flag == "--optimizer" and values and values[0] in ("adam", "sgd"):
        name = "adamw" if values[0] == "adam" else "sgd"
        config.take(flag, shown, f"optimizer {name}", optimizer=name)
    elif flag == "--cpu-optimizer":  # DeepSpeedExamples' Megatron fork: ZeRO-Offload
        config.take(flag, "", "optimizer on the CPU (ZeRO-Offload)", offload_optimizer="cpu")
    elif flag == "--rampup-batch-size":
        config.take(flag, shown, "the global batch ramps up to --global-batch-size (calc "
                                 "prices the full batch)")
    else:
        return False
    return True


def _world(config: TrainerConfig, flags: dict[str, list[str]]) -> None:
    """The world size the launcher line gives (GPUs per node × nodes), when it does."""
    found = {flag: values for flag, values in flags.items() if flag in WORLD}
    numbers = {}
    for flag, values in found.items():
        try:
            numbers[flag] = int(_value(flag, values))
        except (ValueError, CalcError):
            config.ignored.append(flag)
            return
    per_node = numbers.get("--nproc_per_node", numbers.get("--num_gpus"))
    nodes = numbers.get("--nnodes", numbers.get("--num_nodes", 1))
    if per_node is None:
        config.ignored.extend(found)
        return
    config.world_size = per_node * nodes
    for flag, n in numbers.items():
        config.take(flag, n, f"{WORLD[flag]}: world size {config.world_size}")


def _resolve(config: TrainerConfig, flags: dict[str, list[str]], spec: Any) -> None:
    """The flags that depend on others, as Megatron-LM's arguments.py resolves them."""
    options = config.options
    tp = options.get("tp", 1)
    if "--sequence-parallel" in flags:
        if tp > 1:
            config.take("--sequence-parallel", "", "sequence parallelism",
                        sequence_parallel=True)
        else:  # arguments.py:1350-1357
            config.take("--sequence-parallel", "", "off: Megatron-LM disables it at tp = 1 "
                                                   "(arguments.py:1350-1357)",
                        sequence_parallel=False)
    embedding = "--account-for-embedding-in-pipeline-split" in flags
    loss = "--account-for-loss-in-pipeline-split" in flags
    for flag in ("--account-for-embedding-in-pipeline-split",
                 "--account-for-loss-in-pipeline-split"):
        if flag in flags:
            config.take(flag, "", "the embedding and the loss count as layers in the split"
                        if embedding and loss else "one of embedding/loss as a layer: not "
                        "modelled alone", **({"split_embedding_loss": True}
                                             if embedding and loss else {}))
    if "--num-layers-per-virtual-pipeline-stage" in flags:
        per_chunk = _int("--num-layers-per-virtual-pipeline-stage",
                         flags["--num-layers-per-virtual-pipeline-stage"])
        layers = (_layers(flags, spec) or 0) + embedding + loss
        pp = options.get("pp", 1)
        if layers and layers % pp == 0 and (layers // pp) % per_chunk == 0:
            vpp = layers // pp // per_chunk  # arguments.py:895-921; 1 means no interleaving
            config.take("--num-layers-per-virtual-pipeline-stage", per_chunk,
                        f"{layers} layers / pp {pp} / {per_chunk} = {vpp} virtual stages per "
                        f"pipeline rank", vpp=vpp)
        else:
            config.take("--num-layers-per-virtual-pipeline-stage", per_chunk,
                        "virtual stages need the layers, which the file does not give: give "
                        "--vpp" if not layers else
                        f"{layers} layers do not split into pp {pp} × {per_chunk}-layer chunks "
                        f"(Megatron-LM refuses it)")
    if "--use-megatron-fsdp" in flags:
        strategy = flags.get("--data-parallel-sharding-strategy", ["optim_grads_params"])
        stage = SHARDING.get(strategy[0] if strategy else "", 3)
        config.take("--use-megatron-fsdp", "", f"Megatron-FSDP, sharding {strategy[0]}: "
                                               f"ZeRO {stage}", zero=stage)
        if "--data-parallel-sharding-strategy" in flags:
            config.take("--data-parallel-sharding-strategy", strategy[0], f"ZeRO {stage}")
    elif "--data-parallel-sharding-strategy" in flags:
        config.ignored.append("--data-parallel-sharding-strategy")
    if "--deepspeed" in flags:
        config.framework = "deepspeed"
        config.take("--deepspeed", "", "DeepSpeed runs the optimizer and ZeRO: framework "
                                       "deepspeed")
    if "--deepspeed_config" in flags:
        _deepspeed_config(config, flags["--deepspeed_config"])


def _layers(flags: dict[str, list[str]], spec: Any) -> int | None:
    if "--num-layers" in flags:
        return _int("--num-layers", flags["--num-layers"])
    return getattr(spec, "n_layers", None)


def _deepspeed_config(config: TrainerConfig, values: list[str]) -> None:
    """The DeepSpeed JSON the script names, read when it lies beside the script."""
    from calc.trainers import deepspeed

    name = Path(values[0] if values else "")
    beside = Path(config.path).parent / name.name
    if not beside.is_file():
        config.take("--deepspeed_config", str(name),
                    f"not beside {Path(config.path).name}: its ZeRO stage, batch and offload "
                    f"are not read (give --zero, --global-batch, --offload-optimizer)")
        return
    import json

    read = deepspeed.read(json.loads(beside.read_text(encoding="utf-8")), beside)
    config.take("--deepspeed_config", str(name), f"read {beside}")
    config.read.extend(read.read)
    config.options.update(read.options)
    config.ignored.extend(read.ignored)

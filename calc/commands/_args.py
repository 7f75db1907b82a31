"""What the commands share: the parser whose errors are one line, the value types that name the
bad value and what is allowed, and the flag groups several commands take."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import get_args

from calc.counting import DEFAULT_MFU, DEFAULT_PUE_NOTE
from calc.errors import CalcError, install
from calc.numbers import quantity
from calc.spec.memory import Recompute
from calc.tables import FORMATS


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one CalcError line instead of usage + exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CalcError(message.replace("argument ", ""))


# ---- value types: argparse puts the flag in front of each message ---------------------------
def number(kind: str) -> Callable[[str], float]:
    """An argparse type for a calc.numbers.RANGES quantity, read by the library's own parser
    (k, M, B or G, T, P suffixes are decimal: 2T = 2e12)."""

    def read(text: str) -> float:
        try:
            return quantity(text, "", kind)
        except CalcError as error:
            raise argparse.ArgumentTypeError(str(error).removeprefix(": ")) from None

    read.__name__ = kind  # argparse names the type in some messages
    return read


def positive_int(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number; expected an integer >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; expected an integer >= 1")
    return value


def assignment(text: str) -> tuple[str, object]:
    """KEY=VALUE for --set; VALUE is read as JSON when it can be (numbers, true, null)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEY=VALUE (e.g. vocab_size=65 or attention.n_kv_heads=8)")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def add_model(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    parser.add_argument("model", metavar="MODEL", nargs="?" if optional else None,
                        help="a preset name (python -m calc list), a spec file (TOML/JSON) "
                             "or a Hugging Face config.json")


def add_from(parser: argparse.ArgumentParser, takes: str) -> None:
    """--from FILE: a trainer config (calc.trainers reads them) whose settings `takes` names."""
    parser.add_argument("--from", dest="from_file", metavar="FILE",
                        help="a trainer config (DeepSpeed JSON, Megatron-LM arguments, "
                             f"torchtitan TOML, axolotl YAML, transformers TrainingArguments "
                             f"JSON): its {takes}; every setting is echoed, the ignored ones "
                             f"listed, and the flags given here override it and say so")


def add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", default="text", choices=FORMATS,
                        help="output format (default: text); csv is one tidy table: table, "
                             "row, column, value")
    parser.add_argument("--table", metavar="NAME",
                        help="only the table NAME (its title's first words, e.g. parameters), "
                             "in csv as it prints: a header and one line per row")


def add_workload(parser: argparse.ArgumentParser) -> None:
    """The flags of calc.estimate's workload; `workload(args)` reads them back."""
    from calc.spec import DTYPES

    parser.add_argument("--tokens", type=number("tokens"),
                        help="training tokens, e.g. 2e12 or 2T")
    parser.add_argument("--gpu", help="GPU catalogue name (python -m calc gpus)")
    parser.add_argument("--gpus", type=positive_int, default=1,
                        help="GPUs the run is spread over (for days)")
    mfu = parser.add_mutually_exclusive_group()
    mfu.add_argument("--mfu", type=number("mfu"),
                     help=f"model FLOPs utilisation in (0, 1] (default {DEFAULT_MFU:g})")
    mfu.add_argument("--mfu-from", metavar="BENCH_JSON",
                     help="use the MFU measured by `python -m calc bench --save BENCH_JSON`")
    parser.add_argument("--seq-len", type=positive_int,
                        help="context T (default: the model's training context)")
    parser.add_argument("--attention", default="causal", choices=("causal", "full"),
                        help="count attention over the causal triangle or the full square")
    parser.add_argument("--dtype", default="bf16", choices=DTYPES,
                        help="compute dtype whose dense peak is used (default bf16)")
    cost = parser.add_argument_group("cost and energy")
    cost.add_argument("--price", type=number("price"),
                      help="price of one GPU-hour (any currency; calc has no built-in prices)")
    cost.add_argument("--energy", action="store_true",
                      help="energy from the GPU's TDP × GPU-hours × PUE")
    cost.add_argument("--pue", type=number("pue"),
                      help=f"power usage effectiveness ({DEFAULT_PUE_NOTE}; implies --energy)")
    cost.add_argument("--grid-intensity", type=number("grid_intensity"), metavar="G_PER_KWH",
                      help="grid carbon intensity, g CO2e per kWh (implies --energy)")


def workload(args: argparse.Namespace) -> dict[str, object]:
    """The keyword arguments of calc.estimate that add_workload's flags set."""
    mfu, mfu_source = args.mfu, None
    if args.mfu_from:  # a saved measurement (calc.verify.throughput; no torch needed to read)
        from calc.reports.bench import load_bench, measured_mfu

        measured = load_bench(args.mfu_from)
        mfu, mfu_source = measured_mfu(measured, args.gpu), measured.mfu_source
    return {"tokens": args.tokens, "gpu": args.gpu, "seq_len": args.seq_len,
            "attention": args.attention, "dtype": args.dtype, "mfu": mfu, "gpus": args.gpus,
            "mfu_source": mfu_source, "price": args.price, "pue": args.pue,
            "grid_intensity": args.grid_intensity, "energy": args.energy}


def add_layout(parser: argparse.ArgumentParser, seq_len: bool = True) -> None:
    """The layout flags (calc.spec.layout.Layout's fields) that step and the main report share
    (`seq_len=False` where the command has its own --seq-len); `layout_fields(args)` reads them
    back."""
    for flag, name in (("--tp", "tensor"), ("--pp", "pipeline"), ("--cp", "context"),
                       ("--ep", "expert")):
        parser.add_argument(flag, type=positive_int, help=f"{name}-parallel degree (default 1)")
    parser.add_argument("--dp", type=positive_int,
                        help="data-parallel degree (default: gpus / (tp × pp × cp))")
    parser.add_argument("--vpp", type=positive_int,
                        help="virtual pipeline stages per GPU (interleaved 1F1B; default 1)")
    parser.add_argument("--split-embedding-loss", action="store_true", default=None,
                        help="count the embedding and the loss as one layer each in the "
                             "pipeline split (first and last stage hold a layer fewer)")
    parser.add_argument("--micro-batch", type=positive_int, help="sequences per micro-batch")
    parser.add_argument("--global-batch", type=positive_int,
                        help="sequences per step (default dp × micro-batch without a pipeline)")
    if seq_len:
        parser.add_argument("--seq-len", type=positive_int,
                            help="sequence length (default: the model's training context)")
    parser.add_argument("--recompute", choices=get_args(Recompute),
                        help="activation recomputation (default none)")
    parser.add_argument("--zero", type=int, choices=(0, 1, 2, 3),
                        help="ZeRO stage over the data-parallel ranks (default 0)")
    parser.add_argument("--sequence-parallel", action="store_true", default=None,
                        help="split norms and dropouts along the sequence over the tp ranks")
    _add_attention_dropout(parser)


def _add_attention_dropout(parser: argparse.ArgumentParser) -> None:
    """--flash-attention and --dropout, each with its --no- form; unset keeps the default,
    current practice (calc.spec.memory.CURRENT_PRACTICE: flash attention, no dropout)."""
    parser.add_argument("--flash-attention", action=argparse.BooleanOptionalAction,
                        default=None, help="an attention kernel that stores no s×s scores "
                                           "(default: on; --no-flash-attention stores them)")
    parser.add_argument("--dropout", action=argparse.BooleanOptionalAction, default=None,
                        help="dropout after attention and the MLP (default: off, as current "
                             "LLMs train)")


def layout_fields(args: argparse.Namespace) -> dict[str, object]:
    """The Layout fields add_layout's flags set (unset flags keep the Layout's defaults)."""
    names = ("tp", "pp", "dp", "cp", "ep", "vpp", "split_embedding_loss", "micro_batch",
             "global_batch", "seq_len", "recompute", "zero", "sequence_parallel",
             "flash_attention", "dropout", "dtype", "framework")
    return {name: getattr(args, name) for name in names
            if getattr(args, name, None) is not None}
def add_activations(parser: argparse.ArgumentParser) -> None:
    """The flags that set the stored activations of one micro-batch (calc.memory's options);
    `activations(args)` reads them back."""
    from typing import get_args

    from calc.spec.memory import Recompute

    parser.add_argument("--micro-batch", type=positive_int, default=1,
                        help="sequences per micro-batch b (default 1)")
    parser.add_argument("--recompute", default="none", choices=get_args(Recompute),
                        help="activation recomputation (default none)")
    _add_attention_dropout(parser)
    parser.add_argument("--paper-2022", action="store_true",
                        help="Korthikanti et al. 2022's setting: eager attention and dropout "
                             "(--no-flash-attention --dropout)")


def activations(args: argparse.Namespace) -> dict[str, object]:
    """calc.memory's keyword arguments that add_activations' flags set; an explicit flag wins
    over --paper-2022, which wins over the defaults."""
    from calc.spec.memory import PAPER_2022

    chosen: dict[str, object] = dict(PAPER_2022) if args.paper_2022 else {}
    for key in ("flash_attention", "dropout"):
        if getattr(args, key) is not None:
            chosen[key] = getattr(args, key)
    return {"micro_batch": args.micro_batch, "recompute": args.recompute, **chosen}


def add_formula(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--formula", action="store_true",
                        help="print the formulas (text/LaTeX/JSON by --format) instead of the "
                             "numbers; a MODEL's structure substituted")


def show_formulas(command: str, args: argparse.Namespace) -> bool:
    """Print `command`'s formulas (add_formula's --formula) for args.model if any, in
    args.format; True when it did, and the command has nothing more to do."""
    if not args.formula:
        return False
    from calc.reports.formulas import command_formulas  # sympy: only when asked
    from calc.views import render

    formulas = command_formulas(command, getattr(args, "model", None))
    print(render(formulas, args.format, args.table), end="")
    return True


def require_torch(command: str) -> None:
    """One line, not a traceback, when a command that builds models in torch runs without it;
    each such command (verify, bench) is also the name of the extra that installs torch."""
    from importlib.util import find_spec

    if find_spec("torch") is None:
        raise CalcError(f"{command} needs torch: {install(command)} (or pip install "
                        f"torch==2.13.0)")



def add_finetune(parser: argparse.ArgumentParser) -> None:
    """Fine-tuning flags (calc.spec.finetune); `finetune(args)` reads them back."""
    group = parser.add_argument_group("fine-tuning")
    group.add_argument("--finetune", default="full", choices=("full", "lora", "qlora"),
                       help="what trains: every weight, or LoRA adapters on a frozen base "
                            "(qlora: stored in 4 bits); default full")
    group.add_argument("--lora-rank", type=positive_int, help="adapter rank r (default 8)")
    group.add_argument("--lora-targets", metavar="TARGETS|all-linear",
                       help="projections with an adapter, comma-separated: q, k, v, o, up, "
                            "gate, down, experts, shared_expert_gate, in_proj, x_proj, "
                            "dt_proj, out_proj, in_proj_qkvz, in_proj_ba (default q,v)")
    group.add_argument("--base-dtype", help="QLoRA's 4-bit storage: nf4 (default) or fp4")
    group.add_argument("--no-double-quant", dest="double_quant", action="store_false",
                       default=None, help="QLoRA without quantising the block constants")
    group.add_argument("--paged", action="store_true", default=None,
                       help="paged optimizer states (bitsandbytes): moved to the host when "
                            "the GPU runs short")


def finetune(args: argparse.Namespace) -> dict[str, object]:
    """The keyword arguments of calc.memory / calc.estimate that add_finetune's flags set."""
    return {"finetune": args.finetune, "lora_rank": args.lora_rank,
            "lora_targets": args.lora_targets, "base_dtype": args.base_dtype,
            "double_quant": args.double_quant, "paged": args.paged}


def add_precision(parser: argparse.ArgumentParser) -> None:
    from calc.spec.gemm_precision import GEMM_PRECISIONS

    parser.add_argument("--precision", default="bf16", choices=list(GEMM_PRECISIONS),
                        help="GEMM recipe: the layers' projections in fp8 (Transformer Engine), "
                             "mxfp8 or nvfp4 (Blackwell); default bf16 (the --dtype)")


def add_offload(parser: argparse.ArgumentParser, system: bool = False,
                timing: bool = False) -> None:
    """ZeRO-Offload / ZeRO-Infinity flags (calc.spec.offload) that memory, step and layout
    share (`system=True` adds --system to the group, for a command without one; `timing=True`
    the NVMe rates the step time needs); `offload(args)` reads them back."""
    group = parser.add_argument_group("offload (DeepSpeed ZeRO-Offload / ZeRO-Infinity)")
    group.add_argument("--offload-optimizer", choices=("none", "cpu", "nvme"),
                       help="fp32 master weights, optimizer states and fp32 gradients off "
                            "the GPU (needs --zero >= 1)")
    group.add_argument("--offload-params", choices=("none", "cpu", "nvme"),
                       help="the ZeRO-3 parameter partitions off the GPU (needs --zero 3)")
    if system:
        group.add_argument("--system", help="systems-catalogue name whose node host memory "
                                            "bounds the offload (default: the GPU's system)")
    group.add_argument("--host-memory-gib", type=number("host_memory_gib"),
                       help="host memory per node, GiB (instead of the system's)")
    group.add_argument("--gpus-per-node", type=positive_int,
                       help="GPUs sharing a node's host memory (default: the system's, or 8)")
    if timing:
        for way in ("read", "write"):
            group.add_argument(f"--nvme-{way}-gb-s", type=number("nvme_gb_s"),
                               help=f"the node's NVMe {way} bandwidth, GB/s, drives together "
                                    f"(default: the system's, where published)")


def offload(args: argparse.Namespace) -> dict[str, object]:
    """The keyword arguments add_offload's flags set (None where not given)."""
    names = ("offload_optimizer", "offload_params", "host_memory_gib", "gpus_per_node",
             "nvme_read_gb_s", "nvme_write_gb_s")
    return {name: getattr(args, name) for name in names if hasattr(args, name)}

"""`python -m calc verify MODEL [--seq-len T] [--batch B] [--device meta|cpu] [--hf]`:
build the model in torch (and transformers') and compare every count with calc's; exit 0 only
when everything compared matches."""

from __future__ import annotations

from collections.abc import Sequence

from calc.commands._args import Parser, add_format, add_model, positive_int, require_torch
from calc.views import render


def run(argv: Sequence[str]) -> int:
    from calc.presets import load_model, sequence_length
    from calc.reports.verify import verify

    parser = Parser(prog="python -m calc verify",
                    description="Build MODEL in PyTorch and check calc's parameter and FLOP "
                                "counts against it exactly.")
    add_model(parser)
    parser.add_argument("--seq-len", type=positive_int,
                        help="tokens per sequence (default: min(context, 128))")
    parser.add_argument("--batch", type=positive_int, default=1, help="sequences (default 1)")
    parser.add_argument("--device", choices=("meta", "cpu"), default="meta",
                        help="meta: shapes only, any size (default); cpu: real tensors")
    parser.add_argument("--hf", action="store_true",
                        help="also build transformers' own model of the same config (meta) "
                             "and compare parameters and forward FLOPs")
    parser.add_argument("--memory", action="store_true",
                        help="sum the tensors transformers' model saves for the backward "
                             "(eager and SDPA; full, LoRA, and QLoRA built on the CPU for "
                             "small models) against calc's activation bytes")
    add_format(parser)
    args = parser.parse_args(argv)
    require_torch("verify")
    preset = load_model(args.model)
    spec = preset.spec
    if args.seq_len:
        sequence_length(spec, args.seq_len)  # refused past a learned position table
    if args.memory:
        from calc.reports.memory_check import verify_memory

        checked = verify_memory(spec, preset.hf_config, args.seq_len or min(
            spec.context_length, 128), batch=args.batch, device=args.device)
        print(render(checked, args.format, args.table), end="")
        return 0 if checked.ok else 1
    report = verify(spec, args.seq_len, batch=args.batch, device=args.device, hf=args.hf,
                    hf_config=preset.hf_config)
    print(render(report, args.format, args.table), end="")
    return 0 if report.ok else 1

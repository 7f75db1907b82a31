"""`python -m calc bench [--device cpu|cuda] [--dtype bf16|fp16|fp32] [MODEL] [--save PATH]`:
measure the matmul ceiling and a training step here; save the result for --mfu-from."""

from __future__ import annotations

from collections.abc import Sequence

from calc.commands._args import Parser, add_format, positive_int, require_torch
from calc.files import output_path, write_atomic
from calc.tables import render_json
from calc.views import render


def run(argv: Sequence[str]) -> int:
    parser = Parser(prog="python -m calc bench",
                    description="Measure the device at hand: matmul ceiling, a real training "
                                "step, achieved FLOP/s and MFU.")
    parser.add_argument("model", metavar="MODEL", nargs="?",
                        help="preset or spec file to train (default: chapter-char-gpt on the "
                             "CPU, gpt3-1.3b on CUDA)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--dtype", choices=("fp32", "bf16", "fp16"),
                        help="default: fp32 on the CPU, bf16 (autocast) on CUDA")
    parser.add_argument("--batch", type=positive_int, help="sequences per step")
    parser.add_argument("--seq-len", type=positive_int, help="tokens per sequence")
    parser.add_argument("--matmul-size", type=positive_int, help="n of the n×n products")
    parser.add_argument("--save", metavar="PATH", help="also write the result as JSON")
    parser.add_argument("--force", action="store_true",
                        help="let --save overwrite an existing file")
    add_format(parser)
    args = parser.parse_args(argv)
    # the output is checked before minutes of measuring, not after
    save = output_path(args.save, "--save", force=args.force) if args.save else None
    require_torch("bench")
    from calc.reports.bench import bench

    report = bench(args.device, args.dtype, args.model, args.batch, args.seq_len,
                   args.matmul_size)
    if save is not None:
        write_atomic(save, render_json(report.to_dict()))
    print(render(report, args.format, args.table), end="")
    return 0

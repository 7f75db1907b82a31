"""`python -m calc bench [--device cpu|cuda] [--dtype bf16|fp16|fp32] [MODEL] [--save PATH]`:
measure the matmul ceiling and a training step here; save the result for --mfu-from."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from calc.commands._args import Parser, add_format, positive_int, require_torch
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
    add_format(parser)
    args = parser.parse_args(argv)
    require_torch("bench")
    from calc.reports.bench import bench

    report = bench(args.device, args.dtype, args.model, args.batch, args.seq_len,
                   args.matmul_size)
    if args.save:
        Path(args.save).write_text(render_json(report.to_dict()), encoding="utf-8")
    print(render(report, args.format), end="")
    return 0

"""`python -m calc verify MODEL [--seq-len T] [--batch B] [--device meta|cpu] [--hf]`:
build the model in torch (and transformers') and compare every count with calc's; exit 0 only
when everything compared matches."""

from __future__ import annotations

from collections.abc import Sequence

from calc.cli import Parser, add_format, add_model, positive_int
from calc.render import render


def run(argv: Sequence[str]) -> int:
    from calc.presets import load_model
    from calc.verify.report import verify

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
    add_format(parser)
    args = parser.parse_args(argv)
    require_torch()
    preset = load_model(args.model)
    spec = preset.spec
    if args.seq_len and spec.position_table and args.seq_len > spec.position_table:
        from calc.errors import CalcError

        raise CalcError(f"--seq-len: {args.seq_len} exceeds {spec.name}'s learned position "
                        f"table of {spec.position_table}")
    report = verify(spec, args.seq_len, batch=args.batch, device=args.device, hf=args.hf,
                    hf_config=preset.hf_config)
    print(render(report, args.format), end="")
    return 0 if report.ok else 1


def require_torch() -> None:
    from importlib.util import find_spec

    from calc.errors import CalcError

    if find_spec("torch") is None:
        raise CalcError("verify needs torch: pip install torch==2.13.0 (or pip install -e "
                        "'.[verify]')")

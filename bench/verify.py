"""Verification speed: build each model on the meta device and count it with torch.

    python bench/verify.py [MODEL ...] [--seq-len 128]

Target (issue "The verifier"): verifying llama3.1-405b takes seconds, not minutes. Prints the
wall time of `calc.reports.verify.verify` (build + parameter count + forward and backward under
FlopCounterMode) per model; asserts nothing.
"""

from __future__ import annotations

import argparse
import time

import calc
from calc.reports.verify import verify

DEFAULT = ["gpt2", "llama2-7b", "llama2-70b", "mixtral-8x7b", "llama3.1-405b", "deepseek-v3"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=DEFAULT)
    parser.add_argument("--seq-len", type=int, default=128)
    args = parser.parse_args()
    verify(calc.load_preset("gpt2").spec, 8)  # import torch and warm its dispatcher first
    print(f"{'model':16s} {'params':>18s} {'seconds':>8s}  result   (T = {args.seq_len}, meta)")
    for name in args.models:
        spec = calc.load_preset(name).spec
        start = time.perf_counter()
        report = verify(spec, args.seq_len)
        seconds = time.perf_counter() - start
        print(f"{name:16s} {calc.count_params(spec).total:18,d} {seconds:8.2f}  "
              f"{'match' if report.ok else 'MISMATCH'}")


if __name__ == "__main__":
    main()

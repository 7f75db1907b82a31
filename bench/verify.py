"""Verification speed: build each model on the meta device and count it with torch.

    python bench/verify.py [MODEL ...] [--seq-len 128] [--memory MODEL ...]

Targets: verifying llama3.1-405b takes seconds, not minutes (issue "The verifier"); the memory
verifier is timed on Llama 3.1 8B (issue 20). Prints the wall time of
`calc.reports.verify.verify` (build + parameter count + forward and backward under
FlopCounterMode, one layer of each structure: calc.verify.count) per model, then of
`calc.reports.memory_check.verify_memory` (transformers' model built twice, eager and SDPA, one
training forward each under saved_tensors_hooks) per --memory model; asserts nothing.
"""

from __future__ import annotations

import argparse
import time

import calc
from calc.reports.verify import verify

DEFAULT = ["gpt2", "llama2-7b", "llama2-70b", "mixtral-8x7b", "llama3.1-405b", "deepseek-v3"]
MEMORY = ["llama3.1-8b"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=DEFAULT)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--memory", nargs="*", default=MEMORY, metavar="MODEL",
                        help="models whose memory verifier is timed (none: skip)")
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
    if args.memory:
        from calc.reports.memory_check import verify_memory

        print(f"\n{'verify --memory':16s} {'saved bytes':>18s} {'seconds':>8s}  "
              f"(eager and SDPA, T = {args.seq_len}, meta)")
    for name in args.memory:
        preset = calc.load_preset(name)
        start = time.perf_counter()
        checked = verify_memory(preset.spec, preset.hf_config, args.seq_len)
        seconds = time.perf_counter() - start
        saved = next(c.saved_bytes for c in checked.memory_check
                     if c.attention == "eager" and c.part == "total")
        print(f"{name:16s} {saved:18,d} {seconds:8.2f}")


if __name__ == "__main__":
    main()

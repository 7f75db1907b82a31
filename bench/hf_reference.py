"""transformers cross-check speed: build transformers' model on meta and count it.

    python bench/hf_reference.py [MODEL ...] [--seq-len 128]

Target (issue 3): checking llama3.1-405b against transformers takes seconds, not minutes. For
each preset, its config (calc.hf.export) is built by AutoModelForCausalLM.from_config under
torch.device("meta") and counted (parameters by numel, one forward under FlopCounterMode);
prints the build and count seconds and whether both counts equal calc's. Asserts nothing.
"""

from __future__ import annotations

import argparse
import time

import calc
from calc.hf.export import buffer_params, hf_config_from_spec
from calc.verify import hf_reference

DEFAULT = ["gpt2", "llama2-7b", "mixtral-8x7b", "llama3.1-405b", "deepseek-v3"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=DEFAULT)
    parser.add_argument("--seq-len", type=int, default=128)
    args = parser.parse_args()
    start = time.perf_counter()
    hf_reference.count(hf_config_from_spec(calc.load_preset("gpt2").spec), 8)  # imports, warm-up
    print(f"first call (imports torch and transformers): {time.perf_counter() - start:.2f} s")
    print(f"{'model':16s} {'params':>18s} {'build s':>8s} {'count s':>8s}  result"
          f"   (T = {args.seq_len}, meta)")
    for name in args.models:
        spec = calc.load_preset(name).spec
        counted = hf_reference.count(hf_config_from_spec(spec), args.seq_len)
        same = (counted.params == calc.count_params(spec).total - buffer_params(spec)
                and counted.forward
                == calc.count_flops(spec, args.seq_len, "full").forward * args.seq_len)
        print(f"{name:16s} {counted.params:18,d} {counted.build_seconds:8.2f} "
              f"{counted.count_seconds:8.2f}  {'match' if same else 'MISMATCH'}")


if __name__ == "__main__":
    main()

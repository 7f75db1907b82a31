"""Verification speed: build each model on the meta device and count it with torch.

    python bench/verify.py [MODEL ...] [--seq-len 128] [--memory MODEL ...] [--qlora]

Targets: verifying llama3.1-405b takes seconds, not minutes (issue "The verifier"); the memory
verifier is timed on Llama 3.1 8B (issue 20). Prints the wall time of
`calc.reports.verify.verify` (build + parameter count + forward and backward under
FlopCounterMode, one layer of each structure: calc.verify.count) per model, then of
`calc.reports.memory_check.verify_memory` (transformers' model built twice, eager and SDPA, one
training forward each under saved_tensors_hooks) per --memory model; with --qlora, the same
with and without its QLoRA rows (bitsandbytes' 4-bit model loaded and run on the CPU) on Llama
3.1 8B's config shrunk to about the CPU budget (QLORA_SHAPE: 187,188,224 parameters, T = 128;
on 2 shared cores 100 s with the QLoRA rows, 7 s without, torch's import included). Asserts
nothing.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import calc
from calc.reports.verify import verify

DEFAULT = ["gpt2", "llama2-7b", "llama2-70b", "mixtral-8x7b", "llama3.1-405b", "deepseek-v3"]
MEMORY = ["llama3.1-8b"]
# Llama 3.1 8B's config (tests/data/hf_configs) at a width, depth and vocabulary the CPU quantises
# and runs: just under calc.verify.memory.QLORA_CPU_PARAMETERS, the slowest QLoRA check.
QLORA_CONFIG = Path(__file__).parents[1] / "tests" / "data" / "hf_configs" / "llama-3.1-8b.json"
QLORA_SHAPE = {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 8,
               "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 64,
               "vocab_size": 32_000, "tie_word_embeddings": False, "pad_token_id": None,
               "bos_token_id": 1, "eos_token_id": 2}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=DEFAULT)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--memory", nargs="*", default=MEMORY, metavar="MODEL",
                        help="models whose memory verifier is timed (none: skip)")
    parser.add_argument("--qlora", action="store_true",
                        help="time the memory verifier's QLoRA rows (CPU, minutes)")
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
    if args.qlora:
        qlora(args.seq_len)


def qlora(seq_len: int) -> None:
    """verify_memory with and without its QLoRA rows on QLORA_SHAPE."""
    from calc.hf import spec_from_hf_config
    from calc.reports.memory_check import verify_memory

    config = {**json.loads(QLORA_CONFIG.read_text()), **QLORA_SHAPE}
    spec = spec_from_hf_config(config)
    print(f"\n{'verify --memory':16s} {'params':>18s} {'seconds':>8s}  (T = {seq_len}, "
          f"QLoRA rows on the CPU)")
    for with_qlora in (False, True):
        start = time.perf_counter()
        checked = verify_memory(spec, config, seq_len, qlora=with_qlora)
        seconds = time.perf_counter() - start
        label = "with QLoRA" if with_qlora else "without QLoRA"
        print(f"{label:16s} {calc.count_params(spec).total:18,d} {seconds:8.2f}  "
              f"{'match' if checked.ok else 'MISMATCH'}")


if __name__ == "__main__":
    main()

"""Layout-search benchmark: layouts priced per second by `calc layout`.

    python bench/layout.py [--runs 3]

Target (issue 10): thousands of layouts in well under a second on a 2-core machine. A layout
counts when it is valid (calc.spec.layout's validators and model checks), its memory is
evaluated (calc.formulas.memory) and its step time is priced (calc.timing). Prints the median
of --runs after one warm-up per case, and the CPU time beside the wall time (the machine is
shared: wall time includes waiting); asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import statistics
import time

from calc.plan.search import search_layouts
from calc.presets import load_preset

CASES = (  # model, GPU, GPUs, global batch
    ("llama2-7b", "a100", 64, 512),
    ("llama2-70b", "a100", 1024, 1024),
    ("gpt3-175b", "h100", 1024, 1536),
    ("mixtral-8x7b", "h100", 256, 1024),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'case':34} {'layouts':>8} {'fit':>7} {'wall s':>7} {'cpu s':>7} "
          f"{'layouts/s (cpu)':>16}")
    for model, gpu, gpus, batch in CASES:
        spec = load_preset(model).spec
        search_layouts(spec, gpu=gpu, gpus=gpus, global_batch=batch)  # warm-up
        walls, cpus = [], []
        found = None
        for _ in range(args.runs):
            wall, cpu = time.perf_counter(), time.process_time()
            _, found = search_layouts(spec, gpu=gpu, gpus=gpus, global_batch=batch)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        assert found is not None
        cpu = statistics.median(cpus)
        case = f"{model} on {gpus} × {gpu}, B={batch}"
        print(f"{case:34} {found.evaluated:>8,} {len(found.ranked):>7,} "
              f"{statistics.median(walls):>7.3f} {cpu:>7.3f} {found.evaluated / cpu:>16,.0f}")


if __name__ == "__main__":
    main()

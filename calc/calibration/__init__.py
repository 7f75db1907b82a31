"""Calibrating step time, serving and fine-tuning: the published runs as calc's inputs and the
fits on them.

Beside the engine it calibrates (calc.timing): the published runs as step times and stated
layouts (throughput.py), the fit of the model's global constants on some of them (fit.py), the
error on the others (validate.py); the serving benchmarks' fit (serving.py); the published
fine-tunes as calc's options by one fixed table of rules (finetune.py).

    python -m calc.calibration     # refit and rewrite presets/timing.toml's fitted values
"""

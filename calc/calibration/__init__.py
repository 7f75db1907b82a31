"""Calibrating step time: the published runs as step times and the fit on them.

Beside the engine it calibrates (calc.timing): the published runs as step times and stated
layouts (throughput.py), the fit of the model's global constants on some of them (fit.py), the
error on the others.

    python -m calc.calibration     # refit and rewrite presets/timing.toml's fitted values
"""

"""Verification against PyTorch: the only package of calc that imports torch.

`model.build(spec)` makes any ModelSpec a torch module (meta device for any size); `count`
counts its parameters and FLOPs the way torch does; `hf_reference` builds transformers' own
model of a config.json and counts it the same way; `throughput` times real matmuls and training
steps. calc.reports.verify and calc.reports.bench compare and report what these measure.
"""

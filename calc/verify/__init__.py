"""Verification against PyTorch: the only package of calc that imports torch.

`model.build(spec)` makes any ModelSpec a torch module (meta device for any size); `count`
counts its parameters and FLOPs the way torch does; `report.verify(spec)` compares them with
calc's formulas, exactly; `hf_reference` builds transformers' own model of a config.json and
counts it the same way.
"""

"""A training layout's step time: compute, communication, pipeline, optimizer.

Compute as operators, communication on the links each group crosses, the pipeline schedule, the
optimizer (docs/step-time.md).

    terms = model_terms(spec, seq_len)            # once per model (calc.timing.operators)
    step_time(terms, layout, device, network, framework)   # cheap arithmetic per layout

Pure Python: no sympy, numpy or torch, so the layout search can price thousands of layouts.
"""

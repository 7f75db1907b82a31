"""The planning engine (numbers, no prose): a run's memory, cost, step, layouts, serving.

One run configuration (options.py) and, from it, a run's memory with what would make it fit, its
offload, fine-tuning and cost, a token budget's GPU-hours, one step of a layout, the search over
every valid layout, and a deployment's roofline and served requests. The reports label what it
returns.
"""

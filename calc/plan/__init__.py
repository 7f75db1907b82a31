"""The planning engine, numbers only: one run configuration (options.py) and, from it, a run's
memory with what would make it fit, its offload, fine-tuning and cost, one step of a layout,
and the search over every valid layout. The reports label what it returns."""

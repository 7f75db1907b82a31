import gc

from calc.cli import main

status = main()
# The process ends here. With every object the collector tracks frozen (gc.freeze), CPython's
# collections at shutdown skip them instead of walking them all once more: sympy's caches
# after --formula, a tenth of a second of `memory MODEL --formula` (bench/formulas.py); the
# operating system frees the memory either way.
gc.freeze()
raise SystemExit(status)

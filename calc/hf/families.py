"""The family modules (calc/hf/family_*.py) together: their readers, writers and traits.

calc.hf.readers and calc.hf.export merge these into their own tables; a family module's
reader and writer of one model type sit side by side.
"""

from __future__ import annotations

from calc.hf import family_gpt, family_layernorm, family_llama

FAMILIES = (family_llama, family_layernorm, family_gpt)

READERS = {name: read for family in FAMILIES for name, read in family.READERS.items()}
WRITERS = {name: write for family in FAMILIES for name, write in family.WRITERS.items()}
TRAITS = {name: traits for family in FAMILIES for name, traits in family.TRAITS.items()}
# Types without a writer of their own, and the writer that holds every spec they can.
COVERED_BY = {name: by for family in FAMILIES for name, by in family.COVERED_BY.items()}

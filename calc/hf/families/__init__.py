"""One module per model family: every model_type calc reads, with its reader, writer, defaults
and traits side by side (a calc.hf.model_type.ModelType each). Each reader repeats what
transformers' modeling_<type>.py (of calc.hf.model_type.TRANSFORMERS_VERSION) builds from the
config, each rule commented with the file it comes from; each writer maps a spec onto that
type's config.

A family is a lineage, named as a newcomer would look for it: the types whose model_type names
one line of models (qwen2 … qwen3_next: qwen.py; gemma … vaultgemma: gemma.py; the GPT-2 line
and the models named after it: gpt.py). A type without relatives is a family of its own, named
after it (dbrx.py). calc.hf.registry lists every ModelType, one line each, in the order
calc.hf.export tries their writers; helpers several families use live in calc.hf.fields
(reading), calc.hf.per_layer (per-layer lists) and calc.hf.writing (writing).
"""

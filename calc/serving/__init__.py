"""The serving model (docs/serving.md): what one engine iteration costs on a replica's GPUs and
what a stream of requests makes of those iterations.

    model = step_model(spec, replica)              # once per model and layout (step.py)
    model.step(decode=b, context=c, prefill=p)     # one iteration's seconds, cheap arithmetic
    serve(model, load, constants)                  # TTFT, TPOT, e2e, tokens/s (schedule.py)

memory.py holds a replica's bytes (weights with their quantisation scales, KV cache per token)
and the sequences that fit; layouts.py the tensor/pipeline/expert splits the engines accept;
constants.py the kernel efficiencies and engine settings of presets/serving.toml. Pure Python,
like calc.timing, whose links and collectives it prices communication with.
"""

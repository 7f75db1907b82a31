"""Every model_type calc reads, one line each (calc/hf/families/ defines them).

The order is calc.hf.export's writer priority: it tries the writers from the top and keeps the
first config that reads back as the same model, so a spec two architectures can hold takes the
one listed first (llama before its relatives: a plain Llama-shaped spec is written as llama; the
per-layer types last, so a uniform spec keeps its own). Types without a writer (an earlier one
holds their specs) close the list; where they stand changes nothing.

A new type: its ModelType in its family's module, then one line here; where its writer stands
decides which specs it takes from the writers after it.
"""

from __future__ import annotations

from calc.hf.families import (
    afmoe,
    apertus,
    arcee,
    aria,
    bamba,
    biogpt,
    bitnet,
    bloom,
    cohere,
    ctrl,
    dbrx,
    deepseek,
    dots1,
    emu3,
    ernie,
    exaone,
    falcon,
    flint,
    gemma,
    glm,
    gpt,
    granite,
    helium,
    hunyuan,
    hyperclovax,
    internlm3,
    jais2,
    jamba,
    jetmoe,
    kimi,
    kolibri,
    lara,
    lfm2,
    llama,
    mamba,
    mellum,
    minicpm3,
    minimax,
    mistral,
    mpt,
    nanochat,
    nemotron,
    olmo,
    opt,
    persimmon,
    phi,
    qwen,
    sarvam,
    seed_oss,
    smollm3,
    solar_open,
    stablelm,
    starcoder2,
    xglm,
    youtu,
)
from calc.hf.model_type import ModelType

MODEL_TYPES: tuple[ModelType, ...] = (
    # dense Llama-shaped types, then their mixtures of experts and latent attention
    llama.LLAMA,
    mistral.MISTRAL,
    qwen.QWEN2,
    qwen.QWEN3,
    gemma.GEMMA2,
    olmo.OLMO2,
    mistral.MIXTRAL,
    qwen.QWEN3_MOE,
    qwen.QWEN2_MOE,
    deepseek.DEEPSEEK_V3,
    deepseek.DEEPSEEK_V2,
    deepseek.DEEPSEEK_V32,
    glm.GLM_MOE_DSA,
    # LayerNorm decoders: learned positions, rotary, ALiBi
    gpt.GPT2,
    opt.OPT,
    gpt.GPT_NEOX,
    falcon.FALCON,
    bloom.BLOOM,
    # one switch or norm each that the types above lack
    seed_oss.SEED_OSS,
    mistral.MINISTRAL,
    glm.GLM4,
    arcee.ARCEE,
    minicpm3.MINICPM3,
    apertus.APERTUS,
    nanochat.NANOCHAT,
    granite.GRANITE_SWA,
    starcoder2.STARCODER2,
    nemotron.NEMOTRON,
    stablelm.STABLELM,
    persimmon.PERSIMMON,
    phi.PHI,
    cohere.COHERE,
    mpt.MPT,
    olmo.OLMO,
    gpt.GPT_BIGCODE,
    gpt.GPT_NEO,
    gpt.GPTJ,
    # per-layer structure: layer kinds, MoE placement, other mixers
    gemma.GEMMA3_TEXT,
    olmo.OLMOE,
    gpt.GPT_OSS,
    llama.LLAMA4_TEXT,
    qwen.QWEN3_NEXT,
    kimi.KIMI_LINEAR,
    mamba.MAMBA,
    mamba.MAMBA2,
    olmo.OLMO3,
    exaone.EXAONE4,
    gemma.VAULTGEMMA,
    cohere.COHERE2,
    bitnet.BITNET,
    glm.GLM4_MOE,
    phi.PHIMOE,
    ernie.ERNIE4_5_MOE,
    jamba.JAMBA,
    lfm2.LFM2,
    falcon.FALCON_H1,
    dots1.DOTS1,
    hunyuan.HUNYUAN_V1_MOE,
    dbrx.DBRX,
    jetmoe.JETMOE,
    flint.FLINT,
    olmo.FLEX_OLMO,
    minimax.MINIMAX_M2,
    exaone.EXAONE_MOE,
    nemotron.NEMOTRON_H,
    bamba.BAMBA,
    granite.GRANITEMOEHYBRID,
    olmo.OLMO_HYBRID,
    lara.LARA_MINI,
    granite.GRANITEMOE_SWA,
    kolibri.KOLIBRI1,
    afmoe.AFMOE,
    xglm.XGLM,
    ctrl.CTRL,
    cohere.COHERE2_MOE,
    lfm2.LFM3,
    apertus.APERTUS1P5_TEXT,
    # read only: no writer of their own (their family module says which writer holds them)
    gemma.GEMMA,
    phi.PHI3,
    smollm3.SMOLLM3,
    granite.GRANITE,
    granite.GRANITEMOE,
    internlm3.INTERNLM3,
    exaone.EXAONE,
    helium.HELIUM,
    ernie.ERNIE4_5,
    hunyuan.HUNYUAN_V1_DENSE,
    glm.GLM,
    gpt.CODEGEN,
    gpt.OPENAI_GPT,
    gpt.GPT_SW3,
    llama.IQUESTCODER,
    mistral.MINISTRAL3,
    sarvam.SARVAM_MLA,
    sarvam.SARVAM_MOE,
    qwen.QWEN3_5_TEXT,
    qwen.QWEN3_5_MOE_TEXT,
    granite.GRANITEMOESHARED,
    llama.CWM,
    glm.GLM4_MOE_LITE,
    solar_open.SOLAR_OPEN,
    hyperclovax.HYPERCLOVAX,
    jais2.JAIS2,
    youtu.YOUTU,
    lfm2.LFM2_MOE,
    mamba.FALCON_MAMBA,
    hunyuan.HY_V3,
    mellum.MELLUM,
    cohere.COHERE_COMPASS_TEXT,
    aria.ARIA_TEXT,
    biogpt.BIOGPT,
    emu3.EMU3_TEXT_MODEL,
)

_BY_NAME = {entry.name: entry for entry in MODEL_TYPES}


def find(model_type: object) -> ModelType | None:
    """The ModelType of a config's model_type, or None when calc does not read it."""
    return _BY_NAME.get(model_type) if isinstance(model_type, str) else None


def supported_types() -> list[str]:
    return sorted(_BY_NAME)


def writers() -> tuple[ModelType, ...]:
    """The types with a writer, in the order calc.hf.export tries them."""
    return tuple(entry for entry in MODEL_TYPES if entry.write is not None)

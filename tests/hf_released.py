"""The released config.json files of tests/data/hf_configs (README.md cites each): the ones
calc reads, and the ones it refuses with the words of its one-line refusal."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from calc.spec.model import Activation

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
# Squared ReLU (Persimmon, Nemotron, Arcee): read once the spec's activations include it.
RELU2 = "relu2" in get_args(Activation)
REFUSED = {
    "opt-350m": "word_embed_proj_dim=512 differs from hidden_size=1024",
    **({} if RELU2 else {"persimmon-8b-base": "hidden_act='relu2' is not an activation"}),
}
REAL = sorted(path for path in CONFIGS.glob("*.json") if path.stem not in REFUSED)

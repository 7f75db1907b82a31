"""The released config.json files of tests/data/hf_configs (README.md cites each): the ones
calc reads, and the ones it refuses with the words of its one-line refusal."""

from __future__ import annotations

from pathlib import Path

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
REFUSED = {"opt-350m": "word_embed_proj_dim=512 differs from hidden_size=1024"}
REAL = sorted(path for path in CONFIGS.glob("*.json") if path.stem not in REFUSED)

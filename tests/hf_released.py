"""The released config.json files of tests/data/hf_configs (README.md cites each); calc reads
every one of them."""

from __future__ import annotations

from pathlib import Path

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
# Every released config here is read (OPT-350m's word_embed_proj_dim was the last refused).
REAL = sorted(CONFIGS.glob("*.json"))

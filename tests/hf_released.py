"""The released config.json files of tests/data/hf_configs (README.md cites each): the ones
calc reads, and the ones it refuses with the words of its one-line refusal."""

from __future__ import annotations

from pathlib import Path

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
REFUSED: dict[str, str] = {}  # none today: OPT-350m's word_embed_proj_dim is read
REAL = sorted(path for path in CONFIGS.glob("*.json") if path.stem not in REFUSED)

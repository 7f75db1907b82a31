"""Preset data (TOML), shipped as the package calc.preset_data; read by calc.presets."""

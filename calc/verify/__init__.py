"""Verification against PyTorch: the only package of calc that imports torch."""

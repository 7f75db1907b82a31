"""The minimal character GPT (preset chapter-char-gpt), trained on the CPU until it memorises.

calc's reference model of the preset, with V = the characters of this file, trains on this
file's text repeated 20 times (B = 16, T = 64, AdamW lr 3e-3, 300 steps): a short repeated
text it can learn by heart, so its loss must fall from about ln V (a uniform guess) to well
under 1. That the model learns at all checks the reference model's wiring end to end; that its
numel equals calc's count ties the trained model to the counted one.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import calc  # noqa: E402
from calc.verify.model import build  # noqa: E402


@pytest.mark.slow
def test_minimal_gpt_memorises_its_source():
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one core: beside the other test process (pytest -n), two threads
    # contend and take ten times as long
    text = Path(__file__).read_text() * 20
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text])
    spec = calc.load_preset("chapter-char-gpt").spec.updated(vocab_size=len(chars))
    model = build(spec, "cpu")
    assert sum(p.numel() for p in model.parameters()) == calc.count_params(spec).total
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    batch, block = 16, 64
    losses = []
    for _ in range(301):
        ix = torch.randint(len(data) - block - 1, (batch,))
        x = torch.stack([data[i:i + block] for i in ix])
        y = torch.stack([data[i + 1:i + block + 1] for i in ix])
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, len(chars)), y.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert abs(losses[0] - math.log(len(chars))) < 0.5  # starts near ln V
    assert sum(losses[-10:]) / 10 < 0.5  # well under 1: memorised

"""The source chapter's minimal character GPT, trained on the CPU with the chapter's recipe.

../shared/seeds/000 (1.3 Transformer, 代码): the model trains on its own source text repeated
(`open(__file__).read() * 20`), B = 32, T = 64, AdamW lr 3e-3, 300 steps, and its loss falls
from about ln V to 0.1-0.2 "because it memorises this short repeated text". Here the text is
this file (a short script, like the chapter's) and the model is calc's reference model of the
`chapter-char-gpt` preset with V = the characters of that text.
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
    torch.set_num_threads(2)
    text = Path(__file__).read_text() * 20
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text])
    spec = calc.load_preset("chapter-char-gpt").spec.updated(vocab_size=len(chars))
    model = build(spec, "cpu")
    assert sum(p.numel() for p in model.parameters()) == calc.count_params(spec).total
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    batch, block = 32, 64
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
    assert sum(losses[-10:]) / 10 < 0.5  # "well under 1"

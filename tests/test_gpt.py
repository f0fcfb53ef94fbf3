"""``nlpcourse.models.gpt``: the causal LM never reads the future, learns, and samples reproducibly; its
classifier reads the last real token and adds the auxiliary LM loss while it fine-tunes."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from causal_support import redrawn
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpcourse.data.batching import pad_batch
from nlpcourse.data.wordpiece import WordPieces
from nlpcourse.errors import ConfigError, ShapeError
from nlpcourse.finetune import FineTuneConfig, fine_tune_classifier
from nlpcourse.models.gpt import GPT, GPTClassifier, GPTConfig, gpt_from_config, gpt_loss, sample
from nlpcourse.train import load_checkpoint

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def tiny(seed: int = 0, device: str = "cpu", **kw) -> GPT:
    torch.manual_seed(seed)
    cfg = dict(vocab=10, d_model=16, heads=2, layers=2, d_ff=32, max_len=12, dropout=0.0) | kw
    return GPT(GPTConfig(**cfg)).to(device).eval()


@settings(max_examples=20, deadline=None)
@given(cut=st.integers(1, 7), seed=st.integers(0, 100))
def test_changing_later_tokens_never_changes_earlier_logits(cut, seed):
    model = tiny(seed)
    ids, other = redrawn((2, 8), 1, 10, cut, seed)
    with torch.no_grad():
        a, b = model(ids), model(other)
    assert torch.allclose(a[:, :cut], b[:, :cut], atol=1e-5)


def test_gpt_learns_a_sequence_and_samples_it_back():
    model = tiny().train()
    ids = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3]] * 8)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(150):
        loss = gpt_loss(model, ids)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss.detach()) < 0.05
    out = sample(model.eval(), torch.tensor([[1, 2]]), 8, torch.Generator().manual_seed(0), temperature=0.5)
    assert out.tolist() == [[1, 2, 3, 4, 5, 6, 7, 8, 9, 1]]


@pytest.mark.parametrize("device", DEVICES)
def test_sampling_is_reproducible_and_top_k_keeps_to_the_k_best(device):
    model = tiny(device=device)
    prompt = torch.tensor([[1, 2], [3, 4]], device=device)
    a = sample(model, prompt, 5, torch.Generator().manual_seed(1), top_k=3)
    b = sample(model, prompt, 5, torch.Generator().manual_seed(1), top_k=3)
    assert torch.equal(a, b) and a.shape == (2, 7) and torch.equal(a[:, :2], prompt)
    greedy = sample(model, prompt, 5, torch.Generator().manual_seed(2), top_k=1)
    with torch.no_grad():
        ids = prompt
        for _ in range(5):
            ids = torch.cat([ids, model(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(greedy, ids), "top_k=1 is greedy decoding"
    long = sample(model, prompt, 15, torch.Generator().manual_seed(3))
    assert long.shape == (2, 17), "the context is cut to max_len, the output is not"


def test_bad_settings_are_refused():
    with pytest.raises(ConfigError):
        GPTConfig(vocab=10, d_model=10, heads=3)
    with pytest.raises(ConfigError):
        sample(tiny(), torch.tensor([[1]]), 2, torch.Generator(), temperature=0.0)
    with pytest.raises(ShapeError, match="max_len"):
        tiny()(torch.ones(1, 13, dtype=torch.long))


def test_training_script_writes_a_checkpoint_that_loads(tmp_path):
    """``scripts/train_gpt.py --tiny`` (the chapter BERT's vocabulary): a model of seconds, saved, loaded back."""
    out = tmp_path / "gpt.pt"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "train_gpt.py"), "--tiny", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, env=os.environ | {"NLPCOURSE_PROGRESS": "0"})
    assert proc.returncode == 0 and "nats per piece" in proc.stdout, proc.stderr[-2000:]
    ck = load_checkpoint(out, build=gpt_from_config)
    assert ck.model.config.vocab == WordPieces.from_json(ck.extra["tokenizer"]).vocab_size
    assert 0 < ck.extra["val_loss"] < 9 and ck.extra["seconds"] > 0 and ck.extra["train_config"]["layers"] == 1


# ------------------------------------------------------------------ fine-tuning for classification


def test_classifier_reads_the_last_real_token_and_padding_changes_nothing():
    model = GPTClassifier(tiny(1), classes=3).eval()
    a, b = [2, 5, 7, 3], [2, 4, 3]
    alone = model(torch.tensor([b]))  # (1,3)
    batched = model(pad_batch([a, b]).tokens)  # b padded with one 0
    torch.testing.assert_close(batched[1], alone[0])
    h = model.gpt.states(torch.tensor([b]))  # (1,3,D)
    torch.testing.assert_close(alone[0], model.out(h[0, -1]))
    assert model.aux_loss is None  # evaluation mode: no auxiliary loss
    with pytest.raises(ConfigError):
        GPTClassifier(tiny(), classes=1)


def test_classifier_keeps_the_lm_loss_of_the_same_pass_and_fine_tuning_adds_it():
    ids = torch.tensor([[2, 5, 7, 3], [2, 4, 6, 3]])
    model = GPTClassifier(tiny(2), classes=2, lm_weight=0.5).train()
    model(ids)
    torch.testing.assert_close(model.aux_loss, 0.5 * gpt_loss(model.gpt, ids))
    groups = model.layer_groups()
    assert sorted(map(id, (p for g in groups for p in g))) == sorted(map(id, model.parameters()))
    data = ([[2, 5, 3], [2, 6, 3], [2, 5, 5, 3], [2, 7, 3]], torch.tensor([1, 0, 1, 0]))
    tuned = []
    for weight in (0.5, 0.0):
        torch.manual_seed(0)
        model = GPTClassifier(tiny(3), classes=2, lm_weight=weight)
        fine_tune_classifier(model, data, data, FineTuneConfig(epochs=1, batch=2, lr=1e-2))
        tuned.append(model.gpt.tok_embed.weight.detach())
    assert not torch.allclose(*tuned)  # the LM loss moved the weights: fine-tuning added it

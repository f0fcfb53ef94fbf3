"""``nlpcourse.widgets.next_token_explorer``: the RNN LM chapter's widget draws the next-token distribution
of a language model and redraws it when the prompt, the temperature or top-k change."""
import math

import pytest
import torch

from nlpcourse.errors import ConfigError
from nlpcourse.models.rnnlm import RNNLMConfig, build_rnnlm
from nlpcourse.widgets import _next_token_probs, next_token_explorer

ITOS = ["<unk>", "the", "cat", "sat", "on", "mat"]


@pytest.fixture
def model():
    return build_rnnlm(RNNLMConfig(vocab_size=len(ITOS), embed_dim=8, hidden_dim=8, layers=1), seed=0)


def test_next_token_probs_temperature_and_top_k():
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0])
    assert torch.allclose(_next_token_probs(logits, 1.0, None), torch.softmax(logits.double(), -1))
    cold, hot = _next_token_probs(logits, 0.5, None), _next_token_probs(logits, 5.0, None)
    assert cold[0] > torch.softmax(logits.double(), -1)[0] > hot[0]  # colder: sharper
    cut = _next_token_probs(logits, 1.0, 2)
    assert (cut[2:] == 0).all() and math.isclose(cut.sum().item(), 1.0)
    assert torch.allclose(cut[:2], torch.softmax(logits[:2].double(), -1))


def test_next_token_explorer_draws_and_redraws(model):
    box = next_token_explorer(model, ITOS, "the cat sat on the", temperature=1.0, top_k=None, k=4)
    first = box.result.value
    assert first.startswith('<img src="data:image/png;base64,') and "6 of 6 tokens can be drawn" in first
    box.top_k.value = 2
    assert "2 of 6 tokens can be drawn" in box.result.value
    box.temperature.value = 0.2
    box.text.value = "the dog"
    assert "dog" in box.result.value and "&lt;unk&gt;" in box.result.value  # dog is not in the vocabulary
    assert repr(box) == "NextTokenExplorer(prompt='the dog', temperature=0.20, top_k=2)"
    box.text.value = "  "
    assert box.result.value == "<p>Type a prompt.</p>"


def test_next_token_explorer_character_level():
    itos = ["<unk>", " ", "a", "b", "\n"]
    m = build_rnnlm(RNNLMConfig(vocab_size=len(itos), embed_dim=4, hidden_dim=4, layers=1), seed=0)
    box = next_token_explorer(m, itos, "ab a", level="char", k=3)
    assert "3 of" not in box.result.value and "5 of 5 tokens" in box.result.value


@pytest.mark.parametrize("kwargs, words", [
    ({"level": "byte"}, "level"),
    ({"temperature": 0.0}, "temperature"),
    ({"top_k": 0}, "top_k"),
    ({"top_k": 7}, "top_k"),
])
def test_next_token_explorer_rejects_bad_arguments(model, kwargs, words):
    with pytest.raises(ConfigError, match=words):
        next_token_explorer(model, ITOS, "the", **kwargs)
    with pytest.raises(ConfigError, match="itos"):
        next_token_explorer(model, ITOS[:-1], "the")

"""Looking inside the pretraining chapter's BERT: ``attention_maps`` (the same weights as Hugging Face's
``output_attentions`` for the same model), ``fill_masks``, and the ``bert_explorer`` widget."""
from __future__ import annotations

import pytest
import torch
from test_bert import pairs, tiny

from nlpcourse.data.wordpiece import MASK_ID, WordPieces, train_wordpiece
from nlpcourse.errors import ConfigError, ShapeError
from nlpcourse.models.bert import attention_maps, fill_masks, to_huggingface
from nlpcourse.widgets import bert_explorer

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def test_attention_maps_are_hugging_faces_attentions_and_ignore_padding():
    model = tiny()
    ids, segments = pairs()
    ours = attention_maps(model, ids, segments)
    hf = to_huggingface(model)
    hf.config._attn_implementation = "eager"  # the implementation that returns its weights
    with torch.no_grad():
        theirs = hf(input_ids=ids, token_type_ids=segments, attention_mask=(ids != 0).long(),
                    output_attentions=True).attentions
    assert len(ours) == len(theirs) == 2
    for a, b in zip(ours, theirs):
        assert a.shape == (2, 2, 8, 8)
        torch.testing.assert_close(a[0], b[0], rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(a[1, :, :6], b[1, :, :6], rtol=1e-4, atol=1e-6)  # rows of real positions
        assert float(a[1, :, :, 6:].abs().max()) == 0.0  # padded keys get no weight
        torch.testing.assert_close(a.sum(-1), torch.ones(2, 2, 8))


def test_fill_masks_ranks_the_masked_lm_head_at_each_mask():
    model = tiny()
    ids = torch.tensor([2, 10, MASK_ID, 12, MASK_ID, 3])
    guesses = fill_masks(model, ids, k=3)
    assert [t for t, _, _ in guesses] == [2, 4]
    probs = torch.softmax(model.mlm_logits(model(ids[None]))[0], -1)  # (T,V)
    for t, top, p in guesses:
        assert top == probs[t].topk(3).indices.tolist()
        assert p == pytest.approx(probs[t].topk(3).values.tolist(), rel=1e-5)
    assert fill_masks(model, torch.tensor([2, 10, 3])) == []
    with pytest.raises(ShapeError):
        fill_masks(model, ids[None])


def test_bert_explorer_draws_guesses_and_redraws():
    wp = WordPieces(train_wordpiece(["a good film", "a bad film", "the acting is good"] * 5, 38))
    model = tiny(vocab=wp.vocab_size)
    box = bert_explorer(model, wp, "a [MASK] film")
    first = box.result.value
    assert first.startswith('<img src="data:image/png;base64,') and "position 2:" in first
    box.layer.value = 0
    assert box.result.value != first and repr(box) == "BertExplorer(sentence='a [MASK] film', layer=0)"
    box.text.value = "a good film"
    assert "no [MASK]" in box.result.value
    box.text.value = " "
    assert "Type a sentence" in box.result.value
    with pytest.raises(ConfigError, match="pieces, the tokenizer"):
        bert_explorer(tiny(vocab=wp.vocab_size + 1), wp, "film")
    with pytest.raises(ConfigError, match="layer must be in 0..1"):
        bert_explorer(model, wp, "film", layer=2)

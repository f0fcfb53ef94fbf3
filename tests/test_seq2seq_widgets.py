"""``nlpcourse.widgets.attention_explorer``: the seq2seq chapter's widget translates a sentence with an
attention model and draws the attention weights; it redraws when the sentence or the decoding changes."""
from types import SimpleNamespace

import pytest

from nlpcourse.data.translation import TranslationSplit
from nlpcourse.data.vocab import Vocab
from nlpcourse.errors import ConfigError
from nlpcourse.models.seq2seq import Seq2SeqConfig, build_seq2seq
from nlpcourse.widgets import attention_explorer

SRC = Vocab.build([["and", "god", "said", "let", "there", "be", "light"]])
TGT = Vocab.build([["y", "dijo", "dios", "sea", "la", "luz"]])
SPLIT = TranslationSplit([], [], [], SRC, TGT, 20)


def model(attention: str = "dot"):
    return build_seq2seq(Seq2SeqConfig(len(SRC), len(TGT), 8, 8, attention, 4, 0.0), seed=0)


def test_attention_explorer_draws_and_redraws():
    box = attention_explorer(model(), SPLIT, "And God said, let there be light", beam=3)
    first = box.result.value
    assert first.startswith('<img src="data:image/png;base64,') and "beam 3, alpha 1" in first
    box.decoding.value = 1
    assert "(greedy; log P =" in box.result.value
    box.text.value = "God said zebra"  # an unknown word is drawn, read as <unk>
    assert box.result.value.startswith("<img") and box.result.value != first
    assert repr(box) == "AttentionExplorer(sentence='God said zebra', decoding=1)"
    box.text.value = "   "
    assert "Type an English sentence" in box.result.value


def test_attention_explorer_refuses_what_it_cannot_show():
    with pytest.raises(ConfigError, match="no attention to show"):
        attention_explorer(model("none"), SPLIT, "light")
    other = SimpleNamespace(src_vocab=SRC, tgt_vocab=Vocab.build([["luz"]]))
    with pytest.raises(ConfigError, match="not the split's"):
        attention_explorer(model(), other, "light")
    with pytest.raises(ConfigError, match="beam must be >= 1"):
        attention_explorer(model(), SPLIT, "light", beam=0)

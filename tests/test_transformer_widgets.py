"""``nlpcourse.widgets.head_explorer``: the Transformer chapter's widget translates a sentence and draws
every head of one attention layer; it redraws when the sentence, the attention or the layer changes."""
import pytest

from nlpcourse.data.subword import SubwordSplit, train_bpe
from nlpcourse.data.translation import TranslationSplit
from nlpcourse.data.vocab import Vocab
from nlpcourse.errors import ConfigError
from nlpcourse.models.transformer import TransformerConfig, build_transformer
from nlpcourse.widgets import head_explorer

TOKENIZER = train_bpe(["and god said let there be light", "y dijo dios sea la luz"], vocab_size=60)
SUB = SubwordSplit(TranslationSplit([], [], [], Vocab.build([["a"]]), Vocab.build([["a"]]), 20), TOKENIZER)


def model(**kw):
    cfg = dict(vocab=SUB.vocab_size, d_model=8, heads=2, enc_layers=2, dec_layers=1, d_ff=8, dropout=0.0) | kw
    return build_transformer(TransformerConfig(**cfg), seed=0).eval()


def test_head_explorer_draws_and_redraws():
    box = head_explorer(model(), SUB, "And God said, let there be light")
    first = box.result.value
    assert first.startswith('<img src="data:image/png;base64,') and "(greedy;" in first
    assert box.layer.value == 0 and box.layer.max == 0  # the decoder's one layer
    box.kind.value = "encoder"
    assert box.layer.max == 1 and box.result.value != first
    box.layer.value = 1
    assert repr(box) == "HeadExplorer(sentence='And God said, let there be light', kind='encoder', layer=1)"
    box.kind.value = "decoder"  # the encoder's layer 1 does not exist in the decoder: shown as its last
    assert box.layer.max == 0 and box.result.value.startswith("<img")
    box.text.value = "   "
    assert "Type an English sentence" in box.result.value


def test_head_explorer_refuses_what_it_cannot_show():
    with pytest.raises(ConfigError, match="pieces, the tokenizer"):
        head_explorer(model(vocab=SUB.vocab_size + 1), SUB, "light")
    with pytest.raises(ConfigError, match="kind must be one of"):
        head_explorer(model(), SUB, "light", kind="both")
    with pytest.raises(ConfigError, match="layer must be in 0..1"):
        head_explorer(model(), SUB, "light", kind="encoder", layer=2)

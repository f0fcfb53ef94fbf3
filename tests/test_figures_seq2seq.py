"""The concept figures of book/seq2seq.md draw without pyplot and show the numbers they are drawn from."""
from matplotlib.figure import Figure

from nlpcourse.figures import seq2seq as figures


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_every_figure_draws():
    drawn = [figures.rnn_shapes(), figures.encoder_decoder(False), figures.encoder_decoder(True),
             figures.attention_step([[1, 0], [0, 1], [1, 1]], [2, 1]), figures.teacher_forcing(),
             figures.beam_tree([{"a": -0.1, "b": -2.0}], [{"a"}], greedy="a"),
             figures.bleu_matches("a b a".split(), "a b c".split())]
    assert all(isinstance(fig, Figure) and fig.axes for fig in drawn)


def test_attention_step_shows_the_softmax_weights_and_the_context():
    texts = _texts(figures.attention_step([[1, 0], [0, 1], [1, 1]], [2, 1]))
    assert {"0.24", "0.09", "0.67", "(0.91, 0.76)"} <= set(texts)


def test_bleu_matches_clips_repeated_words():
    texts = _texts(figures.bleu_matches("a a b".split(), "a b c".split()))
    assert "1-grams: 2/3 match" in texts and "2-grams: 1/2 match" in texts

"""The concept figures of book/rnnlm.md draw without pyplot and show the numbers they are drawn from."""
from matplotlib.figure import Figure

from nlpcourse.figures import rnnlm as figures

TOY = [["<s>", "i", "like", "san", "francisco", "</s>"], ["<s>", "the", "fog", "</s>"],
       ["<s>", "i", "like", "fog", "</s>"], ["<s>", "san", "francisco", "is", "foggy", "</s>"]]


def test_every_figure_draws():
    drawn = [figures.bptt_unrolled(), figures.lstm_cell(), figures.gru_cell(), figures.truncated_bptt(),
             figures.class_softmax(), figures.continuation_counts(TOY, ["francisco", "fog"]),
             figures.temperature(["a", "b", "c"], [2.0, 1.0, 0.0]),
             figures.power_norms({"A": [1.0, 0.5, 0.25]}, bound=2.0)]
    assert all(isinstance(fig, Figure) and fig.axes for fig in drawn)


def test_temperature_titles_give_the_top_words_share():
    fig = figures.temperature(["a", "b"], [0.0, 0.0], taus=(1.0,))
    assert fig.axes[0].get_title() == r"$\tau = 1$: top word 50%"

"""The cnn chapter's concept figures draw without error and without pyplot (nlpcourse.figures.cnn)."""
import numpy as np
from matplotlib.figure import Figure

from nlpcourse.figures import cnn as figures

WORDS = ["it", "is", "not", "good", "."]


def test_every_figure_draws():
    X = np.array([[0, 0, 1], [0, 1, 1], [1, 0, 0], [0, 2, 0], [0, 0, 1]])
    W = np.array([[2, 0, 0], [0, 1, -1]])
    drawn = [
        figures.filter_over_sentence(WORDS, X, W, -1.0, [-1.0, -1.0, 3.0, -2.0]),
        figures.narrow_and_wide(WORDS, h=3),
        figures.multichannel(WORDS),
        figures.kim_architecture(WORDS),
        figures.kmax_pooling(WORDS, [0.1, -0.2, 0.5, 0.3, 0.0, -0.1, 0.2], h=3, k=2),
        figures.padding_mask(WORDS[:2], WORDS, [-0.3, -0.1, -0.4], h=2),
    ]
    for fig in drawn:
        assert isinstance(fig, Figure)
        fig.canvas.draw()

"""The concept figures of the word2vec chapter draw without error and without pyplot."""
from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from nlpcourse.errors import ConfigError
from nlpcourse.figures import word2vec as figures


def test_every_figure_draws() -> None:
    drawn = [
        figures.skip_gram_window("in the beginning god created the heaven".split(), 4, 2),
        figures.skip_gram_and_cbow(),
        figures.ppmi_svd_pipeline(["a", "b", "c"], np.array([[1, 2, 0], [2, 1, 3], [0, 3, 1]]),
                                  np.array([[0.5, 1.0, 0.0], [1.0, 0.2, 0.8], [0.0, 0.8, 0.3]])),
        figures.negative_sampling("created", "god", [("the", 0.03), ("of", 0.02)]),
        figures.subsampling_keep(["the", "sword"], [0.05, 3e-4]),
        figures.hierarchical_softmax(),
        figures.analogy_parallelogram(),
    ]
    for fig in drawn:
        assert isinstance(fig, Figure)
        fig.canvas.draw()  # lays out every artist: fails on bad mathtext


def test_hierarchical_softmax_needs_a_power_of_two() -> None:
    with pytest.raises(ConfigError, match="3 words"):
        figures.hierarchical_softmax(("a", "b", "c"), target=0)

"""The concept figures of book/transformer.md draw without pyplot and show the numbers they are drawn from."""
import math

import numpy as np
from matplotlib.figure import Figure

from nlpcourse.figures import transformer as figures


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_every_figure_draws():
    drawn = [figures.layer_diagrams(), figures.scaled_attention(), figures.head_split(),
             figures.head_split(d_model=12, heads=3, length=2), figures.mask_grids(),
             figures.cross_attention(), figures.sinusoid_waves(), figures.kv_cache_steps()]
    assert all(isinstance(fig, Figure) and fig.axes for fig in drawn)


def test_scaled_attention_shows_the_scaled_scores_and_the_softmax_weights():
    texts = _texts(figures.scaled_attention(q=[[2, 0]], k=[[1, 0], [0, 1], [-1, 0]],
                                            v=[[1, 0], [0, 1], [1, 1]]))
    # scores (2, 0, -2) / sqrt(2); softmax e^1.41, e^0, e^-1.41 over their sum 5.36: (0.77, 0.19, 0.05);
    # output 0.77 (1, 0) + 0.19 (0, 1) + 0.05 (1, 1) = (0.81, 0.23)
    assert {"1.41", "0.00", "-1.41"} <= set(texts)
    assert {"0.77", "0.19", "0.05"} <= set(texts)
    assert {"0.81", "0.23"} <= set(texts)


def test_head_split_gives_each_head_its_own_block_of_columns():
    texts = _texts(figures.head_split(d_model=12, heads=3, length=2))
    assert {"head 1: columns 0–3", "head 2: columns 4–7", "head 3: columns 8–11"} <= set(texts)


def test_mask_grids_count_the_allowed_pairs():
    texts = _texts(figures.mask_grids(("a", "b", "c", "<pad>", "<pad>")))
    allowed = [t for t in texts if t.endswith("pairs allowed")]
    # causal: 1+2+3+4+5; padding: 3 real keys for 5 queries; both: 1+2+3+3+3
    assert allowed == ["15 of 25 pairs allowed", "15 of 25 pairs allowed", "12 of 25 pairs allowed"]


def test_sinusoid_waves_follow_the_formula_and_name_their_wavelengths():
    fig = figures.sinusoid_waves(d_model=16, length=30, pairs=(1,))
    dots = [line for line in fig.axes[0].lines if line.get_marker() == "o"][0]
    p = np.arange(30)
    assert np.allclose(dots.get_ydata(), np.sin(p / 10000 ** (2 / 16)))
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == [f"i = 1: wavelength {2 * math.pi * 10000 ** (2 / 16):.1f}"] == ["i = 1: wavelength 19.9"]


def test_kv_cache_steps_count_the_work():
    texts = _texts(figures.kv_cache_steps(6))
    assert "21 computed, 15 of them again" in texts and "6 computed, 15 read back" in texts

"""The concept figures of book/building_blocks.md draw without pyplot and without error."""
import numpy as np
from matplotlib.figure import Figure

from nlpcourse.figures import building_blocks as figures


def test_every_figure_draws():
    paths = {"SGD": np.array([[-4.0, 1.0], [-3.6, -0.8], [-3.3, 0.6]])}
    drawn = [figures.chain_rule_graph(), figures.two_layer_shapes(B=4, D=5, M=3, C=2),
             figures.softmax_cross_entropy((2.0, 1.0, 0.0), target=0), figures.optimiser_paths(paths),
             figures.dropout_network(), figures.residual_block(), figures.broadcasting(),
             figures.early_stopping([0.6, 0.5, 0.4], [0.6, 0.55, 0.57], patience=1)]
    assert all(isinstance(fig, Figure) and fig.axes for fig in drawn)


def test_chain_rule_graph_shows_the_chain_rule_numbers():
    fig = figures.chain_rule_graph(x=2.0, w=-0.5, b=0.8)
    texts = [t.get_text() for t in fig.axes[0].texts]
    # dL/dw = dL/dz0 * x: with L = -log sigmoid(-0.2), dL/dz0 = sigmoid(-0.2) - 1 = -0.550
    assert "-1.100" in texts and "-0.550" in texts

import matplotlib
import pytest
import torch

from nlpcourse import ShapeError, check_shape
from nlpcourse.plot import confusion_matrix, embedding_map, heatmap, plot_confusion, plot_curves, project_2d

matplotlib.use("Agg")


def test_check_shape_binds_letters_across_axes_and_calls():
    dims = check_shape(torch.zeros(2, 5, 8), ("B", "T", 8))
    assert dims == {"B": 2, "T": 5}
    check_shape(torch.zeros(2, 5), ("B", "T"), dims=dims)
    with pytest.raises(ShapeError, match=r"mask: axis 1 is T.*T=5 elsewhere but here 4"):
        check_shape(torch.zeros(2, 4), ("B", "T"), "mask", dims=dims)


@pytest.mark.parametrize("x, expected, message", [
    (torch.zeros(2, 3), ("B",), "expected 1 dims"),
    (torch.zeros(2, 3), ("B", 4), "axis 1 should be 4"),
    (torch.zeros(3, 2), ("N", "N"), "N=3 elsewhere but here 2"),
    ([1, 2], ("B",), "expected a torch.Tensor"),
])
def test_check_shape_errors_name_the_problem(x, expected, message):
    with pytest.raises(ShapeError, match=message):
        check_shape(x, expected, "x")


def test_confusion_matrix_counts():
    cm = confusion_matrix([0, 0, 1, 1, 1], [0, 1, 1, 1, 0])
    assert cm.tolist() == [[1, 1], [1, 2]]
    with pytest.raises(ShapeError, match="5 true labels but 4 predictions"):
        confusion_matrix([0, 0, 1, 1, 1], [0, 1, 1, 1])


def test_project_2d_keeps_the_main_direction_and_is_sign_stable():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, 1, generator=g) * torch.tensor([[3.0, 0.0, 0.0]]) + 0.01 * torch.randn(50, 3, generator=g)
    xy = project_2d(x)
    assert xy.shape == (50, 2)
    assert xy[:, 0].var() > 100 * xy[:, 1].var()
    assert torch.allclose(project_2d(x), project_2d(x))


def test_plots_draw_and_check_their_inputs():
    ax = plot_curves({"train_loss": [1.0, 0.5], "val_loss": [1.1, 0.7]}, best_epoch=1)
    assert len(ax.lines) == 3
    ax = heatmap(torch.rand(3, 4), ["a", "b", "c"], list("wxyz"))
    assert len(ax.texts) == 12
    with pytest.raises(ShapeError, match="2 row labels for 3 rows"):
        heatmap(torch.rand(3, 4), ["a", "b"])
    with pytest.raises(ShapeError, match="expected 2 dims"):
        heatmap(torch.rand(3))
    plot_confusion([0, 1, 1], [0, 1, 0], ["rotten", "fresh"])
    ax = embedding_map(torch.randn(5, 8), list("abcde"))
    assert len(ax.texts) == 5
    with pytest.raises(ShapeError, match="4 labels for 5 vectors"):
        embedding_map(torch.randn(5, 8), list("abcd"))
    matplotlib.pyplot.close("all")

"""nlpcourse.figures: every concept figure of the book draws, from code, without pyplot.

Each chapter's figures are the public functions of ``nlpcourse.figures.<chapter>`` (see
book/authoring.md); a function called with no argument draws the chapter's own example.
"""
import importlib
import inspect
import pkgutil

import matplotlib
import pytest
from matplotlib.figure import Figure

import nlpcourse.figures as figures
from nlpcourse.figures import CourseFigure, arrow, box, canvas, cells, label

matplotlib.use("Agg")

MODULES = sorted(m.name for m in pkgutil.iter_modules(figures.__path__))


def figure_functions():
    for name in MODULES:
        module = importlib.import_module(f"nlpcourse.figures.{name}")
        for fname, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module.__name__ and not fname.startswith("_"):
                params = inspect.signature(fn).parameters.values()
                if all(p.default is not inspect.Parameter.empty for p in params):
                    yield pytest.param(fn, id=f"{name}.{fname}")


@pytest.mark.parametrize("draw", list(figure_functions()))
def test_every_figure_draws_something(draw):
    fig = draw()
    assert isinstance(fig, Figure)
    assert any(ax.patches or ax.lines or ax.texts or ax.collections or ax.images for ax in fig.axes), \
        "an empty figure"


def test_a_course_figure_shows_itself_as_png_once():
    fig, ax = canvas(4, 2)
    box(ax, 1, 1, "x", colour="input")
    arrow(ax, (1.5, 1), (2.5, 1), "f")
    cells(ax, 2.6, 1.5, [[1, 2], [3, 4]])
    label(ax, 3.5, 0.2, "label")
    assert isinstance(fig, CourseFigure)
    png = fig._repr_png_()
    assert png.startswith(b"\x89PNG") and len(png) > 1000
    assert "matplotlib.pyplot" not in inspect.getsource(figures)  # no figure left open in pyplot


def test_cells_take_a_row_or_a_grid_and_colours_per_cell():
    fig, ax = canvas(3, 2)
    cells(ax, 0, 2, [0.5, 1.25], fmt="{:.1f}", colour=["highlight", "muted"])
    cells(ax, 0, 1, [["a", ""], ["c", None]])
    assert len(ax.patches) == 6
    assert [t.get_text() for t in ax.texts] == ["0.5", "1.2", "a", "c"]

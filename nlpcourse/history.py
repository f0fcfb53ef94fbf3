"""Training history: per-epoch metrics that print as a table and plot as curves."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class History:
    """Metrics recorded once per epoch, e.g. ``{"train_loss": [...], "val_acc": [...]}``."""

    metrics: dict[str, list[float]] = field(default_factory=dict)  # name -> one value per epoch
    best_epoch: int | None = None  # epoch (0-based) with the best monitored value
    stopped_early: bool = False  # True if early stopping ended training

    def log(self, **values: float) -> None:
        for k, v in values.items():
            self.metrics.setdefault(k, []).append(float(v))

    def __getitem__(self, key: str) -> list[float]:
        return self.metrics[key]

    @property
    def epochs(self) -> int:
        return max((len(v) for v in self.metrics.values()), default=0)

    def last(self, key: str) -> float:
        return self.metrics[key][-1]

    def to_dict(self) -> dict[str, Any]:
        return {"metrics": self.metrics, "best_epoch": self.best_epoch, "stopped_early": self.stopped_early}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> History:
        return cls(dict(d.get("metrics", {})), d.get("best_epoch"), bool(d.get("stopped_early", False)))

    def plot(self, keys: list[str] | None = None, ax=None, title: str | None = None):
        """Plot the curves (all metrics, or ``keys``); returns the matplotlib Axes."""
        from .plot import plot_curves

        chosen = {k: v for k, v in self.metrics.items() if keys is None or k in keys}
        return plot_curves(chosen, ax=ax, title=title, best_epoch=self.best_epoch)

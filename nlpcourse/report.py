"""Writing the benchmarks' reports: JSON files that a cut run leaves whole."""
from __future__ import annotations

import json
from pathlib import Path


def write_json(path: Path | str | None, report: dict) -> None:
    """Write ``report`` to ``path`` (if any) atomically: to a .tmp file, then renamed over ``path``."""
    if path is None:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1) + "\n")
    tmp.replace(path)

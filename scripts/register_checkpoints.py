"""Writes the ``"checkpoints"`` entry of ``data/registry.json``: the SHA-256 and size of every file of
``data/checkpoints/`` that chapters and assignments load (``nlpcourse.data.checkpoint_path``), so that a
student's install, which downloads them, can check what arrived. Run it after training a model again:

    python scripts/register_checkpoints.py          # rewrite the entry
    python scripts/register_checkpoints.py --check  # exit 1 if the entry and the files disagree
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
#: The files that are models or their reports; README.md describes them and is not fetched.
SUFFIXES = (".pt", ".bin", ".json")


def listing(folder: Path = DATA / "checkpoints") -> dict[str, dict]:
    """``{file: {"sha256": ..., "bytes": ...}}`` for every model file of ``folder``, sorted by name."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in SUFFIXES)
    return {p.name: {"sha256": hashlib.sha256(p.read_bytes()).hexdigest(), "bytes": p.stat().st_size}
            for p in files}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only say whether data/registry.json is current")
    args = p.parse_args(argv)
    path = DATA / "registry.json"
    registry = json.loads(path.read_text(encoding="utf-8"))
    current = listing()
    if args.check:
        stale = _differences(registry.get("checkpoints", {}), current)
        print("data/registry.json lists every checkpoint as it is" if not stale
              else f"data/registry.json is stale for: {', '.join(stale)} (run {Path(__file__).name})")
        return 1 if stale else 0
    registry["checkpoints"] = current
    path.write_text(json.dumps(registry, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"registered {len(current)} checkpoints ({sum(v['bytes'] for v in current.values()) / 1e6:.1f} MB)")
    return 0


def _differences(listed: dict, current: dict) -> list[str]:
    return [name for name in sorted(set(listed) | set(current)) if listed.get(name) != current.get(name)]


if __name__ == "__main__":
    sys.exit(main())

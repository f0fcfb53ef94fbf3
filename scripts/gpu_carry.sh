#!/usr/bin/env bash
# Fills .whl/ (ignored by git) with what `make gpu-check` needs on the lent GPU machine beyond its image
# (PyTorch with CUDA, numpy, scipy, scikit-learn, sacrebleu, tokenizers, transformers, pytest, hypothesis are
# there; it has no network): pure-Python wheels for the grader's notebook readers, and the three evaluation
# sets that gensim ships (gensim itself, 27 MB, would not fit the 64 MiB the checkout may carry), behind a
# `gensim.test.utils.datapath` of eight lines. See README.md, "GPU".
set -euo pipefail
cd "$(dirname "$0")/.."
PIP=${PIP:-.venv/bin/pip}
rm -rf .whl && mkdir -p .whl/gensim_shim/gensim/test/test_data
grep -qx "/.whl/" "$(git rev-parse --git-dir)/info/exclude" 2>/dev/null \
  || echo "/.whl/" >> "$(git rev-parse --git-dir)/info/exclude"
pins() { .venv/bin/python -c "import importlib.metadata as m, sys; print(' '.join(f'{n}=={m.version(n)}' for n in sys.argv[1:]))" "$@"; }
"$PIP" download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
  $(pins asttokens executing fastjsonschema ipython ipython-pygments-lexers jsonschema \
        jsonschema-specifications jupyter_core matplotlib-inline nbformat pexpect platformdirs prompt_toolkit \
        ptyprocess pure_eval referencing rpds-py stack-data traitlets wcwidth)
"$PIP" wheel -q --no-deps -w .whl "$(pins pysword)"  # an sdist only: built here, pure Python
data=$(.venv/bin/python -c "from gensim.test.utils import datapath; print(datapath(''))")
cp "$data"/{questions-words.txt,wordsim353.tsv,simlex999.txt} .whl/gensim_shim/gensim/test/test_data/
touch .whl/gensim_shim/gensim/__init__.py .whl/gensim_shim/gensim/test/__init__.py
cat > .whl/gensim_shim/gensim/test/utils.py <<'PY'
"""gensim's datapath alone, over the evaluation sets copied beside it (scripts/gpu_carry.sh)."""
import os


def datapath(fname):
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_data", fname)
PY
du -sh .whl

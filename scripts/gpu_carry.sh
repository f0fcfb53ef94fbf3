#!/usr/bin/env bash
# Fills .whl/ (ignored by git) with what `make gpu-check` needs on the lent GPU machine beyond its image
# (PyTorch with CUDA, numpy, scipy, scikit-learn, sacrebleu, tokenizers, transformers, pytest, hypothesis are
# there; it has no network, and a call carries at most 64 MiB with the checkout):
# - site.tar.xz: the pure-Python files of the grader's Jupyter stack (nbgrader, nbconvert, nbclient, ipykernel,
#   jupyter_client, IPython...) and pysword, copied from this .venv without bytecode, nbgrader's documentation,
#   tests, the web assets of the notebook extensions (the grader needs none of them) and the compiled extensions
#   that have a pure-Python fallback (tornado, SQLAlchemy, rapidfuzz, wcwidth), with a bin/alembic (nbgrader's
#   gradebook runs that command): about 4 MB instead of 70 MB of wheels;
# - the two compiled wheels without a fallback, for the image's CPython 3.12: pyzmq and rpds-py;
# - the three evaluation sets that gensim ships (gensim itself, 27 MB, would not fit), behind a
#   `gensim.test.utils.datapath` of eight lines.
# There: `pip install --target /tmp/site .whl/*.whl`, `tar xJf .whl/site.tar.xz -C /tmp/site`, /tmp/site/bin on
# PATH (README.md, "GPU").
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
rm -rf .whl && mkdir -p .whl/gensim_shim/gensim/test/test_data
grep -qx "/.whl/" "$(git rev-parse --git-dir)/info/exclude" 2>/dev/null \
  || echo "/.whl/" >> "$(git rev-parse --git-dir)/info/exclude"
pins() {  # NAME==VERSION of each distribution named, as installed in .venv
  "$PY" -c "import importlib.metadata as m, sys; print(' '.join(f'{n}=={m.version(n)}' for n in sys.argv[1:]))" "$@"
}
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_26_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl $(pins pyzmq rpds-py)
"$PY" - <<'PY'
"""Pack the pure-Python files of the grader's stack, from this .venv, into .whl/site.tar.xz."""
import importlib.metadata as m
import io
import tarfile

# what the grader, its kernels and the judges import that the GPU image lacks (pyzmq and rpds-py come as wheels)
PACK = """nbgrader alembic mako ipython ipython-pygments-lexers matplotlib-inline traitlets pexpect ptyprocess
prompt-toolkit wcwidth stack-data executing asttokens pure-eval jsonschema jsonschema-specifications referencing
jupyter-client jupyter-core platformdirs jupyter-server jupyter-events python-json-logger rfc3339-validator
rfc3986-validator nbconvert beautifulsoup4 soupsieve bleach webencodings defusedxml jupyterlab-pygments mistune
nbclient nbformat fastjsonschema pandocfilters overrides rapidfuzz ipykernel comm nest-asyncio2 tornado
sqlalchemy pysword tinycss2 arrow fqdn isoduration jsonpointer lark rfc3987-syntax uri-template webcolors""".split()
DROP_SUFFIXES = (".so", ".pyc", ".js", ".map", ".css", ".woff", ".woff2", ".ttf", ".png", ".svg", ".gif", ".ico")


DROP_FOLDERS = ("__pycache__", "docs", "static", "labextension", "tests", "test", "sboms")
ALEMBIC = b"#!/usr/bin/env python3\nimport sys\nfrom alembic.config import main\nsys.exit(main())\n"


def wanted(path: str) -> bool:
    return not (path.startswith("..") or path.endswith(DROP_SUFFIXES) or any(f"/{d}/" in path for d in DROP_FOLDERS))


with tarfile.open(".whl/site.tar.xz", "w:xz") as tar:
    for name in PACK:
        for f in m.distribution(name).files or []:
            if wanted(str(f)) and f.locate().is_file():
                tar.add(f.locate(), arcname=str(f))
    script = tarfile.TarInfo("bin/alembic")  # nbgrader's gradebook runs the `alembic` command
    script.size, script.mode = len(ALEMBIC), 0o755
    tar.addfile(script, io.BytesIO(ALEMBIC))
PY
data=$("$PY" -c "from gensim.test.utils import datapath; print(datapath(''))")
cp "$data"/{questions-words.txt,wordsim353.tsv,simlex999.txt} .whl/gensim_shim/gensim/test/test_data/
touch .whl/gensim_shim/gensim/__init__.py .whl/gensim_shim/gensim/test/__init__.py
cat > .whl/gensim_shim/gensim/test/utils.py <<'PY'
"""gensim's datapath alone, over the evaluation sets copied beside it (scripts/gpu_carry.sh)."""
import os


def datapath(fname):
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_data", fname)
PY
du -sh .whl

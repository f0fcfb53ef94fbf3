"""The course's grading command line (``grader``), built on nbgrader's Python API.

See ``grader/README.md`` for the design and the threat model.
"""
import sys

# First: the course's thread policy (OpenMP's wait policy) goes into the environment before any module of the
# grader imports torch; the worker processes and the kernels inherit it (nlpcourse/threads.py).
from nlpcourse import threads as _threads  # noqa: F401

# nbformat validates with jsonschema, whose format checker imports rfc3987_syntax where it is installed
# (jupyter-events asks for it). That module compiles 39 lark grammars on import: 1 s of CPU in every grader
# process, for the "iri" formats, which no notebook schema uses. jsonschema does without it when the import
# fails, and it fails once the name is bound to None here.
sys.modules.setdefault("rfc3987_syntax", None)

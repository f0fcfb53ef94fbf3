"""The course's grading command line (``grader``), built on nbgrader's Python API.

See ``grader/README.md`` for the design and the threat model.
"""

# First: the course's thread policy (OpenMP's wait policy) goes into the environment before any module of the
# grader imports torch; the worker processes and the kernels inherit it (nlpcourse/threads.py).
from nlpcourse import threads as _threads  # noqa: F401

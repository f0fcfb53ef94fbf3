"""The course's grading command line (``grader``), built on nbgrader's Python API.

See ``grader/README.md`` for the design and the threat model.
"""

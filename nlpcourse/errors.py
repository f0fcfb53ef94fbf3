"""Errors the course library raises on purpose; each message names the input that was wrong.

Every one is a :class:`CourseError`, so ``except CourseError`` catches all of them. Each also derives
from the built-in exception a Python programmer would expect for that mistake (``ValueError`` for a
bad value, ``KeyError`` for an unknown word...), so code written against the built-ins keeps working.
"""


class CourseError(Exception):
    """Base class of every error the course library raises on purpose."""


class DataError(CourseError, FileNotFoundError):
    """A bundled or downloaded data file is unknown, missing or corrupt."""


class ShapeError(CourseError, ValueError):
    """A tensor does not have the shape the code expects."""


class ConfigError(CourseError, ValueError):
    """A setting or argument has a value the code cannot use (a negative size, an unknown option...)."""


class FormatError(CourseError, ValueError):
    """A file or a string is not in the format the reader expects."""


class UnknownNameError(CourseError, KeyError):
    """A name looked up is not there: a word outside the vocabulary, an unknown evaluation set..."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0]) if self.args else ""


class ArgumentTypeError(CourseError, TypeError):
    """An argument has the wrong type (a list where a string is expected...)."""


class ReturnTypeError(CourseError, TypeError):
    """A function handed to the library (a loss, an answer under test) returned a value of the wrong type."""


class NumericalError(CourseError, FloatingPointError):
    """A computation produced a value that is not finite (a loss or vectors that became nan or inf)."""

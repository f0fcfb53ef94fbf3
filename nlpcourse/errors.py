"""Errors the course library raises; each message names the input that was wrong."""


class CourseError(Exception):
    """Base class of every error the course library raises on purpose."""


class DataError(CourseError, FileNotFoundError):
    """A bundled or downloaded data file is unknown, missing or corrupt."""


class ShapeError(CourseError, ValueError):
    """A tensor does not have the shape the code expects."""

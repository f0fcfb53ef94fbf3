"""nlpcourse: the shared library of the course "Neural NLP: from word vectors to BERT".

Data, vocabularies, batching, the training loop, plotting and widgets. It holds no answer to a
graded exercise: the assignments ask students to write those.
"""
from . import threads  # first: it sets the thread policy before anything below imports torch (see its docstring)
from .device import available_devices, get_device, to_device
from .errors import (
    ArgumentTypeError,
    ConfigError,
    CourseError,
    DataError,
    FormatError,
    NumericalError,
    ReturnTypeError,
    ShapeError,
    UnknownNameError,
)
from .history import History
from .seed import seed_everything
from .shapes import check_shape
from .threads import use_threads
from .train import Checkpoint, fit, load_checkpoint, save_checkpoint

__version__ = "0.1.0"

__all__ = [
    "ArgumentTypeError",
    "Checkpoint",
    "ConfigError",
    "CourseError",
    "DataError",
    "FormatError",
    "History",
    "NumericalError",
    "ReturnTypeError",
    "ShapeError",
    "UnknownNameError",
    "available_devices",
    "check_shape",
    "fit",
    "get_device",
    "load_checkpoint",
    "save_checkpoint",
    "seed_everything",
    "threads",
    "to_device",
    "use_threads",
]

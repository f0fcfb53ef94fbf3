"""nlpcourse: the shared library of the course "Neural NLP: from word vectors to BERT".

Data, vocabularies, batching, the training loop, plotting and widgets. It holds no answer to a
graded exercise: the assignments ask students to write those.
"""
from .device import available_devices, get_device
from .errors import CourseError, DataError, ShapeError
from .history import History
from .seed import seed_everything
from .shapes import check_shape
from .train import Checkpoint, fit, load_checkpoint, save_checkpoint, to_device

__version__ = "0.1.0"

__all__ = [
    "available_devices", "get_device", "CourseError", "DataError", "ShapeError", "History",
    "seed_everything", "check_shape", "Checkpoint", "fit", "load_checkpoint", "save_checkpoint", "to_device",
]

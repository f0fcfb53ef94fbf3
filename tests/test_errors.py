"""The library's errors: every error it raises on purpose is a specific :class:`CourseError` subclass
(which also derives from the built-in exception a caller would catch), and its message names the bad input.

``test_no_raise_of_a_builtin_exception`` reads the source of every module of ``nlpcourse`` (no import
needed, so it also covers code paths no other test reaches); the other tests call public functions
with bad input.
"""
from __future__ import annotations

import ast
import builtins
import inspect
from pathlib import Path

import pytest
import torch
from torch import nn

import nlpcourse
from nlpcourse import errors
from nlpcourse.checking import CheckFailure, check_close, value_and_grads
from nlpcourse.data import (
    Vocab,
    bucket_batches,
    pad_batch,
    split_indices,
    word_tokenize,
)
from nlpcourse.data.word_corpus import WordCorpus, build_word_corpus
from nlpcourse.errors import (
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
from nlpcourse.models.bow_mlp import BowMLPConfig, bag_of_words
from nlpcourse.models.ppmi_svd import cooccurrence
from nlpcourse.vectors import WordVectors, evaluation_path
from nlpcourse.widgets import activation_and_derivative, saturation

PACKAGE = Path(nlpcourse.__file__).resolve().parent

#: Exception classes no ``raise`` in the library may name: every built-in one, and the bare base class
#: (raise the subclass that says what went wrong). None is allowed: NotImplementedError has no legit use
#: in the library (it holds no stub for students to fill in).
FORBIDDEN = {name for name, obj in vars(builtins).items() if isinstance(obj, type) and issubclass(obj, BaseException)}
FORBIDDEN.add("CourseError")


def forbidden_raises(source: str, filename: str = "<string>") -> list[str]:
    """``file:line: raise Name`` for every ``raise`` in ``source`` that names a class of FORBIDDEN, called
    or not (``raise ValueError(...)``, ``raise KeyError``, ``raise builtins.TypeError(...)``). A bare
    ``raise`` and ``raise exc`` (re-raising a caught exception) name no class and are fine."""
    found = []
    raises = [node for node in ast.walk(ast.parse(source, filename)) if isinstance(node, ast.Raise)]
    for node in sorted(raises, key=lambda node: node.lineno):
        if node.exc is None:
            continue
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "builtins":
            name = target.attr
        elif isinstance(target, ast.Name):
            name = target.id
        else:
            continue
        if name in FORBIDDEN:
            found.append(f"{filename}:{node.lineno}: raise {name}")
    return found


def test_the_scanner_finds_builtin_raises_and_only_those():
    source = '''
import builtins
def f(x, failed):
    if x:
        raise ValueError(f"bad {x}")
    if not x:
        raise KeyError
    raise builtins.TypeError("no")
def g():
    try:
        pass
    except OSError as exc:
        raise ConfigError("wrapped") from exc
    except KeyError:
        raise
    except Exception as exc:
        raise exc
    raise failed(1) from None
def h():
    raise CourseError("which kind?")
'''
    assert forbidden_raises(source) == ["<string>:5: raise ValueError", "<string>:7: raise KeyError",
                                        "<string>:8: raise TypeError", "<string>:20: raise CourseError"]


def test_no_raise_of_a_builtin_exception():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 10 and PACKAGE / "train.py" in files
    found = [hit for f in files
             for hit in forbidden_raises(f.read_text(encoding="utf-8"), str(f.relative_to(PACKAGE)))]
    assert not found, ("raise a subclass of nlpcourse.errors.CourseError (ConfigError, UnknownNameError...) instead:\n"
                       + "\n".join(found))


def test_every_error_class_is_a_course_error_with_a_builtin_base_and_exported():
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if c.__module__ == errors.__name__]
    assert {c.__name__ for c in classes} >= {"CourseError", "DataError", "ShapeError", "ConfigError", "FormatError",
                                             "UnknownNameError", "ArgumentTypeError", "ReturnTypeError",
                                             "NumericalError"}
    for cls in classes:
        assert issubclass(cls, CourseError) and getattr(nlpcourse, cls.__name__) is cls, cls
        if cls is not CourseError:
            assert any(base.__module__ == "builtins" and base is not Exception for base in cls.__mro__[1:]), cls
    assert str(UnknownNameError("'zebra' is not in the vocabulary")) == "'zebra' is not in the vocabulary"


# ---------------------------------------------------------------- public functions given bad input


def _vocab() -> Vocab:
    return Vocab.build([["a", "b"]])


def _corpus() -> WordCorpus:
    return build_word_corpus([["a", "b", "a", "c"], ["b", "a"]], min_count=1)


def _fit(epochs: int = 1, x: torch.Tensor | None = None) -> None:
    model = nn.Linear(2, 2)
    batches = [(torch.ones(1, 2) if x is None else x, torch.zeros(1, dtype=torch.long))]
    nlpcourse.fit(model, batches, lambda m, b: nn.functional.cross_entropy(m(b[0]), b[1]),
                  torch.optim.SGD(model.parameters(), lr=0.1), epochs, device="cpu", progress=False)


def _write_bad_files(tmp: Path) -> None:
    (tmp / "not_json.json").write_text("{oops", encoding="utf-8")
    (tmp / "no_header.txt").write_text("king 1 2\n", encoding="utf-8")
    torch.save({"weights": 1}, tmp / "other.pt")


#: (what, call(tmp_path), the error class, the built-in a caller may catch instead, regex its message matches)
BAD_CALLS = [
    ("word_tokenize", lambda tmp: word_tokenize(42), ArgumentTypeError, TypeError, r"got int: 42"),
    ("Vocab.encode", lambda tmp: _vocab().encode("a b"), ArgumentTypeError, TypeError, r"'a b'"),
    ("Vocab.decode", lambda tmp: _vocab().decode([99]), ConfigError, ValueError, r"id 99"),
    ("Vocab.load", lambda tmp: Vocab.load(tmp / "not_json.json"), FormatError, ValueError, r"not_json\.json"),
    ("Vocab.load missing", lambda tmp: Vocab.load(tmp / "none.json"), DataError, FileNotFoundError, r"none\.json"),
    ("WordVectors shape", lambda tmp: WordVectors(["a", "b"], torch.zeros(3, 2)), ShapeError, ValueError,
     r"2 words but vectors of shape \(3, 2\)"),
    ("WordVectors twice", lambda tmp: WordVectors(["a", "b", "a"], torch.zeros(3, 2)), ConfigError, ValueError,
     r"'a' occurs twice"),
    ("WordVectors[]", lambda tmp: WordVectors(["king"], torch.ones(1, 2))["zebra"], UnknownNameError, KeyError,
     r"'zebra'"),
    ("WordVectors.save", lambda tmp: WordVectors(["a b"], torch.zeros(1, 2)).save(tmp / "v.bin"), FormatError,
     ValueError, r"'a b'"),
    ("WordVectors.load", lambda tmp: WordVectors.load(tmp / "no_header.txt"), DataError, FileNotFoundError,
     r"no_header\.txt.*first line.*king 1 2"),
    ("evaluation_path", lambda tmp: evaluation_path("toefl"), UnknownNameError, KeyError, r"'toefl'"),
    ("build_word_corpus", lambda tmp: build_word_corpus([["a"]], min_count=0), ConfigError, ValueError,
     r"min_count must be >= 1, got 0"),
    ("WordCorpus.encode", lambda tmp: _corpus().encode(["a", "zebra"]), UnknownNameError, KeyError, r"'zebra'"),
    ("cooccurrence", lambda tmp: cooccurrence(_corpus(), window=0), ConfigError, ValueError, r"window.*got 0"),
    ("activation", lambda tmp: activation_and_derivative("swish", torch.zeros(2)), ConfigError, ValueError,
     r"'swish'"),
    ("saturation", lambda tmp: saturation("tanh", -1.0), ConfigError, ValueError, r"got -1\.0"),
    ("pad_batch", lambda tmp: pad_batch([[1], []]), ConfigError, ValueError, r"sequence 1 is empty"),
    ("bucket_batches", lambda tmp: bucket_batches([3, 4], batch_size=0), ConfigError, ValueError, r"got 0"),
    ("split_indices", lambda tmp: split_indices(3, groups=["x"]), ShapeError, ValueError, r"1 group keys for 3"),
    ("BowMLPConfig", lambda tmp: BowMLPConfig(vocab_size=10, dropout=1.5), ConfigError, ValueError, r"got 1\.5"),
    ("bag_of_words", lambda tmp: bag_of_words([[1], [7]], vocab_size=5), ConfigError, ValueError,
     r"document 1 has the id 7"),
    ("get_device", lambda tmp: nlpcourse.get_device("toaster"), ConfigError, ValueError, r"'toaster'"),
    ("fit epochs", lambda tmp: _fit(epochs=0), ConfigError, ValueError, r"epochs must be >= 1, got 0"),
    ("fit nan", lambda tmp: _fit(x=torch.full((1, 2), float("nan"))), NumericalError, FloatingPointError,
     r"loss became nan"),
    ("save_checkpoint", lambda tmp: nlpcourse.save_checkpoint(tmp / "c.pt", nn.Linear(1, 1), config=[1]),
     ArgumentTypeError, TypeError, r"got list"),
    ("load_checkpoint", lambda tmp: nlpcourse.load_checkpoint(tmp / "other.pt"), FormatError, ValueError,
     r"other\.pt was not written by save_checkpoint"),
    ("value_and_grads", lambda tmp: value_and_grads(lambda x: (x, x))(torch.ones(2)), ReturnTypeError, TypeError,
     r"<lambda> must return a scalar float tensor, got tuple"),
]


@pytest.mark.parametrize(("call", "cls", "builtin", "message"), [pytest.param(*c[1:], id=c[0]) for c in BAD_CALLS])
def test_bad_input_raises_a_course_error_naming_it(call, cls, builtin, message, tmp_path):
    _write_bad_files(tmp_path)
    with pytest.raises(cls, match=message) as info:
        call(tmp_path)
    assert isinstance(info.value, CourseError) and isinstance(info.value, builtin)


def test_check_failure_is_a_course_error_and_still_an_assertion():
    with pytest.raises(CheckFailure, match="part A output") as info:
        check_close("part A", lambda x: x + 1, [torch.zeros(2)], torch.zeros(2))
    assert isinstance(info.value, CourseError) and isinstance(info.value, AssertionError)

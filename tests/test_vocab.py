import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpcourse import CourseError
from nlpcourse.data import BOS, EOS, PAD, UNK, Vocab

words = st.text(alphabet="abcdefg", min_size=1, max_size=4)
corpora = st.lists(st.lists(words, min_size=1, max_size=12), min_size=1, max_size=12)


def test_specials_come_first_and_order_is_by_count_then_token():
    v = Vocab.build([["b", "a", "b"], ["c", "a", "b"]])
    assert v.itos[:4] == [PAD, UNK, BOS, EOS]
    assert v.itos[4:] == ["b", "a", "c"]  # b:3, then a:2, then c:1
    assert (v.pad_id, v.unk_id, v.bos_id, v.eos_id) == (0, 1, 2, 3)


def test_min_freq_and_max_size():
    corpus = [["a"] * 5 + ["b"] * 3 + ["c"] * 2 + ["d"]]
    assert Vocab.build(corpus, min_freq=2).itos[4:] == ["a", "b", "c"]
    assert Vocab.build(corpus, max_size=2).itos[4:] == ["a", "b"]
    assert len(Vocab.build(corpus, min_freq=3, max_size=10)) == 4 + 2


def test_unknown_tokens_map_to_unk_and_decode_back_to_unk():
    v = Vocab.build([["the", "cat"]])
    ids = v.encode(["the", "dog"], add_bos=True, add_eos=True)
    assert ids == [v.bos_id, v["the"], v.unk_id, v.eos_id]
    assert v.decode(ids) == [BOS, "the", UNK, EOS]
    assert v.decode(ids, skip_specials=True) == ["the"]


@settings(max_examples=60, deadline=None)
@given(corpora)
def test_round_trip_of_known_tokens(corpus):
    v = Vocab.build(corpus)
    for sent in corpus:
        assert v.decode(v.encode(sent)) == sent


@settings(max_examples=30, deadline=None)
@given(corpora, st.integers(1, 3), st.one_of(st.none(), st.integers(0, 5)))
def test_every_id_is_in_range_and_counts_respect_min_freq(corpus, min_freq, max_size):
    v = Vocab.build(corpus, min_freq=min_freq, max_size=max_size)
    assert all(v.counts[t] >= min_freq for t in v.itos[4:])
    if max_size is not None:
        assert len(v) <= 4 + max_size
    for sent in corpus:
        assert all(0 <= i < len(v) for i in v.encode(sent))


def test_save_load_round_trip(tmp_path):
    v = Vocab.build([["héllo", "wörld", "héllo"]])
    v.save(tmp_path / "v.json")
    w = Vocab.load(tmp_path / "v.json")
    assert w == v and w.counts == v.counts
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: Vocab.build([]), "corpus is empty"),
        (lambda: Vocab.build([[], []]), "corpus is empty"),
        (lambda: Vocab.build(["a string"]), "tokenise first"),
        (lambda: Vocab.build([["a"]], min_freq=0), "min_freq"),
        (lambda: Vocab.build([["a"]]).encode("a b"), "tokenise first"),
        (lambda: Vocab.build([["a"]]).decode([99]), "id 99 is out of range"),
        (lambda: Vocab(["a", "b"]), "first four tokens"),
    ],
)
def test_bad_input_names_what_was_wrong(call, message):
    with pytest.raises(CourseError, match=message):
        call()


def test_load_rejects_missing_or_garbage_file(tmp_path):
    with pytest.raises(CourseError, match="no file"):
        Vocab.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(CourseError, match="not a saved vocabulary"):
        Vocab.load(tmp_path / "bad.json")

import gzip
import json
import shutil

import pytest
import torch

from nlpcourse import CourseError, DataError
from nlpcourse.data import (
    DATASETS,
    char_tokenize,
    dataset_path,
    load_brown,
    load_brown_documents,
    load_brown_words,
    load_lines,
    load_parallel,
    load_reviews,
    load_text,
    review_split,
    sentences,
    split_indices,
    train_val_test_split,
    word_order_split,
    word_tokenize,
)
from nlpcourse.data import registry as registry_mod
from nlpcourse.data.word_order import MAX_WORDS, MIN_WORDS, _shifted_sentences, swap_neighbours


def test_every_registered_corpus_exists_with_its_checksum_and_credit():
    assert set(DATASETS) == {"austen", "shakespeare", "kjv", "kjv_en_es", "rotten_tomatoes", "brown_tagged"}
    for name, info in DATASETS.items():
        assert dataset_path(name).is_file()
        assert len(info.sha256) == 64 and info.licence and info.citation and info.source


def test_bundled_corpora_have_the_documented_sizes():
    assert len(word_tokenize(load_text("austen"))) > 700_000
    assert len(load_lines("kjv")) == 31_102
    assert len(load_parallel()) == 31_084
    reviews = load_reviews()
    assert sum(r.label for r in reviews) == 7_403 and len(reviews) - sum(r.label for r in reviews) == 5_405
    brown = load_brown()
    assert len(brown) == 57_340 and brown[0][0] == ("The", "at")


def test_tokenizers():
    assert word_tokenize("Don't panic, Mr. Darcy!") == ["don't", "panic", ",", "mr", ".", "darcy", "!"]
    assert word_tokenize("Well-known 3,500 ships", lower=False) == ["Well-known", "3,500", "ships"]
    assert char_tokenize("a  b\nc") == list("a b c")
    assert sentences("It is a truth. Universally acknowledged! Yes?") == [
        "It is a truth.", "Universally acknowledged!", "Yes?"]
    with pytest.raises(TypeError, match="expects a str"):
        word_tokenize(["not", "a", "string"])


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A private copy of the data folder, so that tests can damage it."""
    src = registry_mod.data_dir()
    dst = tmp_path / "data"
    dst.mkdir()
    for f in ("registry.json", "kjv_en.txt.gz", "rotten_tomatoes.csv.gz"):
        shutil.copy(src / f, dst / f)
    monkeypatch.setenv(registry_mod.DATA_ENV, str(dst))
    return dst


def test_unknown_dataset_name_lists_the_known_ones():
    with pytest.raises(DataError, match=r"unknown dataset 'ptb'.*austen"):
        load_text("ptb")


def test_missing_data_file_is_named(data_copy):
    with pytest.raises(DataError, match=r"dataset 'austen'.*austen.txt.gz is missing"):
        load_text("austen")


def test_corrupt_data_file_is_named(data_copy):
    path = data_copy / "kjv_en.txt.gz"
    raw = bytearray(path.read_bytes())
    raw[-100] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(DataError, match=r"dataset 'kjv'.*kjv_en.txt.gz is corrupt"):
        load_lines("kjv")


def test_empty_corpus_is_refused(data_copy):
    path = data_copy / "kjv_en.txt.gz"
    path.write_bytes(gzip.compress(b"\n\n"))
    reg = json.loads((data_copy / "registry.json").read_text())
    reg["kjv"]["sha256"] = registry_mod._sha256(path)
    (data_copy / "registry.json").write_text(json.dumps(reg))
    registry_mod._load_registry.cache_clear()
    try:
        with pytest.raises(DataError, match=r"dataset 'kjv'.*is empty"):
            load_lines("kjv")
    finally:
        registry_mod._load_registry.cache_clear()


def test_wrong_reader_for_a_format():
    with pytest.raises(DataError, match="format 'csv'"):
        load_text("rotten_tomatoes")


def test_missing_registry(tmp_path, monkeypatch):
    monkeypatch.setenv(registry_mod.DATA_ENV, str(tmp_path))
    with pytest.raises(DataError, match="no dataset registry"):
        load_text("austen")


def test_splits_are_deterministic_disjoint_and_complete():
    a = split_indices(1000, (0.8, 0.1, 0.1), seed=3)
    assert a == split_indices(1000, (0.8, 0.1, 0.1), seed=3)
    assert a != split_indices(1000, (0.8, 0.1, 0.1), seed=4)
    assert sorted(sum(a, [])) == list(range(1000))
    assert [len(p) for p in a] == [800, 100, 100]


def test_group_split_keeps_each_movie_in_one_part():
    reviews = load_reviews()
    parts = split_indices(len(reviews), (0.8, 0.1, 0.1), seed=0, groups=[r.movie for r in reviews])
    movies = [{reviews[i].movie for i in p} for p in parts]
    assert not (movies[0] & movies[1]) and not (movies[0] & movies[2]) and not (movies[1] & movies[2])
    assert abs(len(parts[0]) / len(reviews) - 0.8) < 0.02
    train, val, test = train_val_test_split(reviews, seed=0, groups=[r.movie for r in reviews])
    assert len(train) + len(val) + len(test) == len(reviews)


@pytest.mark.parametrize("n, fractions, groups, message", [
    (0, (1.0,), None, "nothing to split"),
    (10, (0.5, 0.6), None, "sum to 1"),
    (10, (0.5, 0.5), [1, 2], "2 group keys for 10 items"),
])
def test_bad_split_arguments(n, fractions, groups, message):
    with pytest.raises(CourseError, match=message):
        split_indices(n, fractions, groups=groups)


def test_review_split_pads_encodes_and_keeps_movies_apart():
    """The assignment's data: the seeded movie split as padded ids, the vocabulary of the training part only."""
    data = review_split()
    reviews = load_reviews()
    assert len(data.train) + len(data.valid) + len(data.test) == len(reviews)
    for part in (data.train, data.valid, data.test):
        N, T = part.ids.shape
        assert part.lengths.min() >= 1 and int(part.lengths.max()) == T and len(part.labels) == N
        real = torch.arange(T)[None, :] < part.lengths[:, None]
        assert (part.ids[~real] == 0).all() and (part.ids[real] > 0).all()  # 0 only after the end
        assert set(part.labels.tolist()) == {0, 1}
    train_words = {w for w in data.vocab.itos[4:]}
    assert all(data.vocab.counts[w] >= 2 for w in train_words)
    assert (data.test.ids == data.vocab.unk_id).any()  # words the training part lacks
    assert review_split() is data  # cached: the notebook and the grader share one


def test_brown_words_are_the_tagged_sentences_without_their_tags_and_filter_by_length():
    tagged = load_brown_documents()
    assert load_brown_words() == [(d, [w for w, _ in s]) for d, s in tagged]
    assert load_brown_words(lengths=range(5, 7)) == [(d, [w for w, _ in s]) for d, s in tagged if 5 <= len(s) < 7]


def test_word_order_split_swaps_two_neighbours_in_half_the_sentences_and_keeps_documents_apart():
    """The CNN assignment's graded task: every kept Brown sentence once, half of them with two neighbouring
    different words swapped; the same words in both classes; documents never shared between parts."""
    data = word_order_split()
    sentences, labels, documents = _shifted_sentences(0)
    originals = [[w.lower() for w, _ in s] for d, s in load_brown_documents() if MIN_WORDS <= len(s) <= MAX_WORDS]
    assert len(sentences) == len(originals) == len(data.train) + len(data.valid) + len(data.test)
    for words, label, original in zip(sentences[:2000], labels[:2000].tolist(), originals):
        differ = [i for i, (a, b) in enumerate(zip(words, original)) if a != b]
        assert sorted(words) == sorted(original)  # a bag of words cannot tell the classes apart
        assert differ == ([] if label == 0 else [differ[0], differ[0] + 1]), (words, original)
    assert 0.48 < labels.float().mean() < 0.52
    for part in (data.train, data.valid, data.test):
        real = torch.arange(part.ids.shape[1])[None, :] < part.lengths[:, None]
        assert (part.ids[~real] == 0).all() and (part.ids[real] > 0).all()
    parts = split_indices(len(sentences), (0.8, 0.1, 0.1), seed=0, groups=documents)
    assert not {documents[i] for i in parts[0]} & {documents[i] for i in parts[2]}
    assert word_order_split() is data
    with pytest.raises(CourseError, match="min_count"):
        word_order_split(min_count=0)


def test_swap_neighbours_never_returns_the_sentence_unchanged():
    g = torch.Generator().manual_seed(0)
    for _ in range(50):
        assert swap_neighbours(["a", "b", "a"], g) in (["b", "a", "a"], ["a", "a", "b"])
    assert swap_neighbours(["so", "so"], g) is None and swap_neighbours(["one"], g) is None



@pytest.fixture(scope="module")
def chapter_pieces() -> str:
    """The pretraining chapter's WordPiece vocabulary, as its BERT checkpoint saves it."""
    from pathlib import Path

    import nlpcourse
    from nlpcourse.models.bert import bert_from_config
    path = Path(nlpcourse.__file__).resolve().parents[1] / "data" / "checkpoints" / "bert.pt"
    return nlpcourse.load_checkpoint(path, build=bert_from_config).extra["tokenizer"]


def _words(wp, ids: list[int]) -> list[str]:
    """The words of [CLS] pieces [SEP]: each ## piece joined to the piece before."""
    words: list[str] = []
    for piece in (wp.tokenizer.id_to_token(i) for i in ids[1:-1]):
        if piece.startswith("##") and words:
            words[-1] += piece[2:]
        else:
            words.append(piece)
    return words


def test_review_order_pieces_swap_two_neighbouring_words_and_pair_each_held_out_snippet(chapter_pieces):
    """The pretraining assignment's task: training snippets once, half swapped; held-out snippets twice, as
    written then swapped; words kept whole, within max_len ids; the swapped copy holds the same words, two
    neighbours exchanged."""
    from nlpcourse.data import review_order_pieces
    from nlpcourse.data.wordpiece import CLS_ID, SEP_ID, WordPieces

    wp = WordPieces.from_json(chapter_pieces)
    ids, labels = review_order_pieces(chapter_pieces, "test", 64)
    assert labels.tolist() == [0, 1] * (len(ids) // 2) and len(ids) > 2000
    for written, swapped in zip(ids[0:400:2], ids[1:400:2]):
        assert written[0] == swapped[0] == CLS_ID and written[-1] == swapped[-1] == SEP_ID
        a, b = _words(wp, written), _words(wp, swapped)
        differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        assert len(a) == len(b) and sorted(a) == sorted(b) and len(differ) == 2 and differ[1] == differ[0] + 1
    train, train_labels = review_order_pieces(chapter_pieces, "train", 12)
    assert max(map(len, train)) <= 12 and 0.48 < train_labels.float().mean() < 0.52
    assert review_order_pieces(chapter_pieces, "train", 12)[0] is train  # cached: the notebook and the grader
    assert not {tuple(x) for x in ids} & {tuple(x) for x in review_order_pieces(chapter_pieces, "valid", 64)[0]}
    with pytest.raises(CourseError, match="part must be one of"):
        review_order_pieces(chapter_pieces, "dev", 12)


def test_graded_data_builds_what_the_notebooks_then_find_in_their_caches(chapter_pieces):
    """The kernel nursery calls graded_data() once before it forks the kernels: the calls the notebooks make,
    written the same way, must then hit the caches (a call written otherwise only builds the data again)."""
    import json
    from pathlib import Path

    from nlpcourse.data import review_pieces
    from nlpcourse.data.warm import graded_data

    graded_data()
    hits = word_order_split.cache_info().hits, review_pieces.cache_info().hits
    word_order_split()
    review_pieces(chapter_pieces, 64)
    assert (word_order_split.cache_info().hits, review_pieces.cache_info().hits) == (hits[0] + 1, hits[1] + 1)
    notebook = Path(__file__).resolve().parents[1] / "solutions" / "pretraining" / "pretraining.ipynb"
    if notebook.exists():  # the public copy has no solutions/
        source = "".join("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"])
        for call in ('_pretrained = nlpcourse.load_checkpoint(checkpoint_path("gpt_reviews.pt")',
                     'review_pieces(_pretrained.extra["tokenizer"], 64)'):
            assert call in source, call

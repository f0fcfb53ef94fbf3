import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpcourse import CourseError
from nlpcourse.data import bucket_batches, lm_batches, lm_stream, pad_batch

seqs_st = st.lists(st.lists(st.integers(4, 50), min_size=1, max_size=15), min_size=1, max_size=20)


@settings(max_examples=60, deadline=None)
@given(seqs_st)
def test_pad_batch_shapes_lengths_and_mask(seqs):
    b = pad_batch(seqs, pad_id=0)
    B, T = b.tokens.shape
    assert B == len(seqs) and T == max(map(len, seqs))
    assert b.lengths.tolist() == [len(s) for s in seqs]
    assert b.mask.dtype == torch.bool and b.mask.shape == (B, T)
    assert b.mask.sum(1).tolist() == b.lengths.tolist()
    for i, s in enumerate(seqs):
        assert b.tokens[i, : len(s)].tolist() == s
        assert (b.tokens[i, len(s):] == 0).all()
        assert not b.mask[i, len(s):].any()


def test_pad_batch_truncates_to_max_len():
    b = pad_batch([[5, 6, 7, 8], [9]], max_len=2)
    assert b.tokens.tolist() == [[5, 6], [9, 0]]
    assert b.lengths.tolist() == [2, 1]


@settings(max_examples=40, deadline=None)
@given(seqs_st, st.integers(1, 16), st.integers(0, 3))
def test_pad_batch_takes_tensors_lists_and_tuples_alike_and_truncates_each(seqs, max_len, pad_id):
    """Sequences given as tensors, lists or tuples, mixed in one batch, pad the same way."""
    mixed = [torch.tensor(s) if i % 3 == 0 else tuple(s) if i % 3 == 1 else s for i, s in enumerate(seqs)]
    b = pad_batch(mixed, pad_id=pad_id, max_len=max_len)
    T = min(max_len, max(map(len, seqs)))
    want = [s[:T] + [pad_id] * (T - len(s[:T])) for s in seqs]
    assert b.tokens.dtype == torch.long and b.tokens.tolist() == want


def test_pad_batch_rejects_empty_input():
    with pytest.raises(CourseError, match="empty batch"):
        pad_batch([])
    with pytest.raises(CourseError, match="sequence 1 is empty"):
        pad_batch([[1], []])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 60), min_size=1, max_size=300), st.integers(1, 17), st.integers(0, 5))
def test_bucket_batches_is_a_partition_and_deterministic(lengths, batch_size, seed):
    batches = bucket_batches(lengths, batch_size, seed=seed, bucket_factor=3)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(len(lengths)))
    assert all(1 <= len(b) <= batch_size for b in batches)
    assert batches == bucket_batches(lengths, batch_size, seed=seed, bucket_factor=3)


def test_bucketing_reduces_padding():
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 100, (2000,), generator=g).tolist()

    def padding(batches):
        return sum(max(lengths[i] for i in b) * len(b) - sum(lengths[i] for i in b) for b in batches)

    random_batches = [list(range(i, min(i + 32, 2000))) for i in range(0, 2000, 32)]
    assert padding(bucket_batches(lengths, 32, seed=0)) < 0.2 * padding(random_batches)


def test_lm_stream_rows_are_contiguous_slices():
    data = lm_stream(list(range(23)), batch_size=4)  # 5 per stream, 3 dropped
    assert data.tolist() == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14], [15, 16, 17, 18, 19]]


@settings(max_examples=60, deadline=None)
@given(st.integers(10, 400), st.integers(1, 8), st.integers(1, 40))
def test_lm_batches_targets_are_inputs_shifted_by_one_across_windows(n, B, T):
    if n // B < 2:
        with pytest.raises(CourseError, match="too few"):
            list(lm_batches(list(range(n)), B, T))
        return
    ids = torch.arange(1000, 1000 + n)
    windows = list(lm_batches(ids, B, T))
    xs = torch.cat([x for x, _ in windows], dim=1)  # (B, N-1)
    ys = torch.cat([y for _, y in windows], dim=1)  # (B, N-1)
    stream = lm_stream(ids, B)
    assert torch.equal(xs, stream[:, :-1]) and torch.equal(ys, stream[:, 1:])
    for (x, y), (x2, _) in zip(windows, windows[1:]):
        assert x.shape == y.shape and x.shape[1] == T
        assert torch.equal(y[:, -1], x2[:, 0])  # last target of a window = first input of the next
    assert 1 <= windows[-1][0].shape[1] <= T


def test_lm_batches_bad_arguments():
    with pytest.raises(CourseError, match="bptt"):
        list(lm_batches(list(range(100)), 2, 0))
    with pytest.raises(CourseError, match="batch_size"):
        lm_stream(list(range(100)), 0)

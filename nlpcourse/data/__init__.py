"""Data: the registry of bundled corpora, tokenizers, vocabularies, batching and splits."""
from .registry import DATASETS, DatasetInfo, data_dir, dataset_path, dataset_info, verify
from .corpora import load_text, load_lines, load_reviews, load_parallel, load_brown, Review
from .tokenize import word_tokenize, char_tokenize, sentences
from .vocab import Vocab, PAD, UNK, BOS, EOS
from .batching import Batch, pad_batch, bucket_batches, lm_stream, lm_batches
from .splits import split_indices, train_val_test_split
from .download import STANDARD_SETS, download, cache_dir

__all__ = [
    "DATASETS", "DatasetInfo", "data_dir", "dataset_path", "dataset_info", "verify",
    "load_text", "load_lines", "load_reviews", "load_parallel", "load_brown", "Review",
    "word_tokenize", "char_tokenize", "sentences",
    "Vocab", "PAD", "UNK", "BOS", "EOS",
    "Batch", "pad_batch", "bucket_batches", "lm_stream", "lm_batches",
    "split_indices", "train_val_test_split",
    "STANDARD_SETS", "download", "cache_dir",
]

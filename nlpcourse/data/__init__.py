"""Data: the registry of bundled corpora, tokenizers, vocabularies, batching and splits."""
from .batching import Batch, bucket_batches, lm_batches, lm_stream, pad_batch
from .checkpoints import (
    CHECKPOINT_URL_ENV,
    benchmark_results,
    checkpoint_path,
    checkpoint_registry,
)
from .corpora import (
    Review,
    load_brown,
    load_brown_documents,
    load_brown_words,
    load_lines,
    load_parallel,
    load_reviews,
    load_text,
)
from .download import STANDARD_SETS, cache_dir, download
from .lm_corpus import LMCorpus, lm_corpus, lm_tokens, split_stream
from .registry import (
    DATASETS,
    DatasetInfo,
    data_dir,
    dataset_info,
    dataset_path,
    verify,
)
from .review_split import LabelledSplit, PaddedSentences, ReviewSplit, review_pieces, review_split
from .splits import split_indices, train_val_test_split
from .tokenize import char_tokenize, sentences, word_tokenize
from .vocab import BOS, EOS, PAD, UNK, Vocab
from .word_order import review_order_pieces, word_order_split

__all__ = [
    "BOS",
    "CHECKPOINT_URL_ENV",
    "DATASETS",
    "EOS",
    "PAD",
    "STANDARD_SETS",
    "UNK",
    "Batch",
    "DatasetInfo",
    "LabelledSplit",
    "PaddedSentences",
    "LMCorpus",
    "Review",
    "ReviewSplit",
    "Vocab",
    "benchmark_results",
    "bucket_batches",
    "cache_dir",
    "char_tokenize",
    "checkpoint_path",
    "checkpoint_registry",
    "data_dir",
    "dataset_info",
    "dataset_path",
    "download",
    "lm_batches",
    "lm_corpus",
    "lm_stream",
    "lm_tokens",
    "load_brown",
    "load_brown_documents",
    "load_brown_words",
    "load_lines",
    "load_parallel",
    "load_reviews",
    "load_text",
    "pad_batch",
    "review_pieces",
    "review_split",
    "sentences",
    "split_indices",
    "split_stream",
    "train_val_test_split",
    "verify",
    "review_order_pieces",
    "word_order_split",
    "word_tokenize",
]

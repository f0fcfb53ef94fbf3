"""The data the graded trainers read, built once in a process that forks the grading kernels afterwards (the
grader's kernel nursery, ``grader/nursery.py``), so that every kernel finds it in its caches instead of
building it again: word_order_split (cnn, about 2 s a kernel), the review snippets' pieces (pretraining,
about 1 s), the verse pairs (seq2seq, transformer) and the character corpus (rnnlm).

Each call is the notebook's, with the same arguments written the same way, so that it lands on the same
``lru_cache`` entry; a notebook that changes its arguments only misses the cache (and builds the data as
before). A forked kernel gets its own copy of what is built here: nothing one student does reaches another.
"""
from __future__ import annotations


def graded_data() -> None:
    """Build and cache what the assignments' trained parts load (see the module's docstring)."""
    import nlpcourse
    from nlpcourse.models.gpt import gpt_from_config

    from .checkpoints import checkpoint_path
    from .lm_corpus import lm_corpus
    from .review_split import review_pieces
    from .translation import verse_pairs
    from .word_order import word_order_split

    word_order_split()  # cnn: TASKS["order"]() and the notebook's task_data("order")
    checkpoint = checkpoint_path("gpt_reviews.pt")
    tokenizer = nlpcourse.load_checkpoint(checkpoint, build=gpt_from_config).extra["tokenizer"]
    review_pieces(tokenizer, 64)  # pretraining: review_data() and review_quality()
    verse_pairs()  # seq2seq and transformer: translation_split() reads them
    lm_corpus("shakespeare", "char", None, max_chars=300_000)  # rnnlm

"""A count-based baseline for word vectors: co-occurrence counts, positive PMI, truncated SVD.

Shapes: V words kept, N tokens, D vector size.

1. ``cooccurrence``: ``M[w, c]`` = how often context word ``c`` occurs within ``window`` tokens of ``w``
   (in the same sentence), over the ``V`` most frequent words.
2. ``ppmi``: positive pointwise mutual information, ``max(0, log P(w,c) / (P(w) P_α(c)))``, with the
   context distribution smoothed by ``α = 0.75`` (Levy, Goldberg & Dagan, 2015), the count-based twin
   of word2vec's noise distribution. Levy & Goldberg (2014b) show that skip-gram with negative sampling
   implicitly factorises this matrix, shifted by ``log K``.
3. ``svd_vectors``: the top-``D`` singular vectors of the (sparse) PPMI matrix, ``U_D Σ_D^p``; ``p = 0.5``
   spreads the singular values over words and contexts alike (eigenvalue weighting).
"""
from __future__ import annotations

import torch

from ..data.word_corpus import WordCorpus
from ..errors import ConfigError
from ..vectors import WordVectors


def cooccurrence(corpus: WordCorpus, window: int = 5, vocab_size: int | None = None) -> torch.Tensor:
    """(V,V) sparse COO tensor of symmetric co-occurrence counts within ``window`` tokens, for the
    first ``vocab_size`` words of the corpus vocabulary (all of them by default)."""
    if window < 1:
        raise ConfigError(f"cooccurrence: window must be >= 1, got {window}")
    V = corpus.vocab_size if vocab_size is None else min(vocab_size, corpus.vocab_size)
    ids, sent = corpus.ids, corpus.sentence
    rows, cols = [], []
    for offset in range(1, window + 1):
        a, b = ids[:-offset], ids[offset:]  # (N-offset,): each token and the token `offset` to its right
        keep = (sent[:-offset] == sent[offset:]) & (a < V) & (b < V)
        rows += [a[keep], b[keep]]  # both directions: the matrix is symmetric
        cols += [b[keep], a[keep]]
    r, c = torch.cat(rows), torch.cat(cols)
    key, n = torch.unique(r * V + c, return_counts=True)  # sorted (row, column) keys and their counts
    index = torch.stack([key // V, key % V])
    return torch.sparse_coo_tensor(index, n.double(), (V, V), is_coalesced=True, check_invariants=False)


def ppmi(counts: torch.Tensor, alpha: float = 0.75) -> torch.Tensor:
    """Positive PMI of a sparse (V,V) count matrix, with context-distribution smoothing ``alpha``."""
    counts = counts.coalesce()
    (w, c), n = counts.indices(), counts.values()
    total = n.sum()
    row = torch.zeros(counts.shape[0], dtype=torch.float64).index_add_(0, w, n)  # #(w)
    col = torch.zeros(counts.shape[1], dtype=torch.float64).index_add_(0, c, n)  # #(c)
    col_alpha = col.pow(alpha)
    p_c = col_alpha / col_alpha.sum()  # P_α(c)
    pmi = torch.log(n / total) - torch.log(row[w] / total) - torch.log(p_c[c])
    keep = pmi > 0
    return torch.sparse_coo_tensor(torch.stack([w[keep], c[keep]]), pmi[keep], counts.shape, is_coalesced=True,
                                   check_invariants=False)


def svd_vectors(matrix: torch.Tensor, words: list[str], dim: int = 100, power: float = 0.5,
                seed: int = 0) -> WordVectors:
    """Word vectors ``U_D Σ_D^power`` from a randomized truncated SVD (Halko et al., 2011) of a sparse
    (V,V) matrix; signs fixed so that every build gives the same vectors."""
    V = matrix.shape[0]
    if not 1 <= dim < V:
        raise ConfigError(f"svd_vectors: dim must be in 1..{V - 1}, got {dim}")
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        U, S, _ = torch.svd_lowrank(matrix.float(), q=dim, niter=6)  # U: (V,D), S: (D,)
    finally:
        torch.random.set_rng_state(state)
    U = U * torch.sign(U[U.abs().argmax(0), torch.arange(dim)])  # largest entry of each column positive
    return WordVectors(words[:V], (U * S.pow(power)).float())


def ppmi_svd_vectors(corpus: WordCorpus, dim: int = 100, window: int = 5, vocab_size: int = 10_000,
                     alpha: float = 0.75, seed: int = 0) -> WordVectors:
    """The whole pipeline: counts -> PPMI -> truncated SVD, for the ``vocab_size`` most frequent words."""
    return svd_vectors(ppmi(cooccurrence(corpus, window, vocab_size), alpha), corpus.words, dim, seed=seed)

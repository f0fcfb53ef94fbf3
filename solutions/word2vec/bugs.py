"""Planted bugs of the assignment "word2vec from its parts" (``word2vec.ipynb`` beside this file), as data.

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source
notebook's solution. The solution with that one bug must lose points in exactly the test cells listed
in ``loses`` (a hidden case fails there) and keep full marks in every other test cell: ``loses``
includes the cells that fail through later parts calling the buggy function (``cbow_loss`` calls the
student's ``sgns_loss``, which calls their ``log_sigmoid``, so a bug in either also loses the CBOW
cell). The grading test suite (tests/test_grading_assignments.py) plants each one; private.
"""
from __future__ import annotations

from grader.spec import Bug

KEEP, PAIRS, NEGATIVES, SGNS, CBOW, ANALOGY = (
    "keep-test", "pairs-test", "negatives-test", "sgns-test", "cbow-test", "analogy-test")

BUGS: list[Bug] = [
    Bug("keep_probabilities: returns the probability of DISCARDING a word (1 - keep)",
        "keep-solution", "return torch.clamp((t / share) ** 0.5, max=1.0)",
        "return 1 - torch.clamp((t / share) ** 0.5, max=1.0)", {KEEP}),
    Bug("keep_probabilities: the C tool's formula sqrt(t/f) + t/f instead of the paper's",
        "keep-solution", "torch.clamp((t / share) ** 0.5, max=1.0)",
        "torch.clamp((t / share) ** 0.5 + t / share, max=1.0)", {KEEP}),
    Bug("keep_probabilities: raw counts instead of the word's share f",
        "keep-solution", "share = counts / counts.sum()", "share = counts", {KEEP}),
    Bug("skipgram_pairs: the window includes the centre (pairs a position with itself)",
        "pairs-solution", "if 0 <= j < T and j != i:", "if 0 <= j < T:", {PAIRS}),
    Bug("skipgram_pairs: radius exclusive (offsets 1..r-1, as range(1, r))",
        "pairs-solution", "range(i - r, i + r + 1)", "range(i - r + 1, i + r)", {PAIRS}),
    Bug("noise_distribution: not normalised (counts ** power, not divided by its sum)",
        "negatives-solution", "return smoothed / smoothed.sum()", "return smoothed", {NEGATIVES}),
    Bug("noise_distribution: exponent 1 (the unigram distribution, power ignored)",
        "negatives-solution", "smoothed = counts ** power", "smoothed = counts ** 1", {NEGATIVES}),
    Bug("draw_negatives: uniform draws, ignoring the noise probabilities",
        "negatives-solution", "flat = torch.multinomial(noise, B * K, replacement=True, generator=rng)",
        "flat = torch.randint(len(noise), (B * K,), generator=rng, device=noise.device)", {NEGATIVES}),
    Bug("log_sigmoid: log(sigmoid(x)), -inf and nan gradients for large scores",
        "sgns-solution", "return negative_part - torch.log1p(torch.exp(-torch.abs(x)))",
        "return torch.log(torch.sigmoid(x))", {SGNS, CBOW}),
    Bug("log_sigmoid: -log1p(exp(-x)) without the |x| trick, overflows for very negative scores",
        "sgns-solution", "return negative_part - torch.log1p(torch.exp(-torch.abs(x)))",
        "return -torch.log1p(torch.exp(-x))", {SGNS, CBOW}),
    Bug("sgns_loss: sum over the batch instead of the mean",
        "sgns-solution", "return per_example.mean()", "return per_example.sum()", {SGNS, CBOW}),
    Bug("sgns_loss: noise scores without the minus sign (log s(u_k.v_c))",
        "sgns-solution", "log_sigmoid(-noisy)", "log_sigmoid(noisy)", {SGNS, CBOW}),
    Bug("cbow_hidden: sums the context vectors instead of averaging them",
        "cbow-solution", "return summed / real.sum(dim=1)", "return summed", {CBOW}),
    Bug("cbow_hidden: ignores the mask (averages the padding slots too)",
        "cbow-solution", "real = mask.to(W_in.dtype).unsqueeze(-1)",
        "real = torch.ones_like(mask, dtype=W_in.dtype).unsqueeze(-1)", {CBOW}),
    Bug("cbow_loss: input vectors W_in for the centre and noise words instead of W_out",
        "cbow-solution", "W_out[center], W_out[negatives]", "W_in[center], W_in[negatives]", {CBOW}),
    Bug("analogy: excludes only a, so it can return the query words b or c",
        "analogy-solution", "for query in (a, b, c):", "for query in (a,):", {ANALOGY}),
    Bug("analogy: rows not normalised (dot products with b - a + c of the raw vectors)",
        "analogy-solution", "unit = E / lengths", "unit = E", {ANALOGY}),
]

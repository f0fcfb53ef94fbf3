"""Planted bugs of the assignment "word2vec from its parts" (``word2vec.ipynb`` beside this file), as data.

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source
notebook's solution. The solution with that one bug must lose points in exactly the test cells listed
in ``loses`` (a hidden case fails there) and keep full marks in every other test cell: ``loses``
includes the cells that fail through later parts calling the buggy function (``cbow_loss`` calls the
student's ``sgns_loss``, which calls their ``log_sigmoid``, so a bug in either also loses the CBOW
cell; ``train_sgns`` calls ``keep_probabilities``, ``skipgram_pairs``, ``noise_distribution``,
``draw_negatives`` and ``sgns_gradients``, so a bug there that spoils the trained vectors also loses the
training cell). The grading test suite (tests/test_grading_assignments.py) plants each one; private.

Whether a bug upstream of the trainer spoils its vectors is measured, not guessed, the way the grader
judges a submission: one run on a slice and a seed of the grader's choosing, with
``python scripts/trained_part_seeds.py word2vec --bug N --seeds 20 --jobs 2`` (student seeds 0-19). The
thresholds are a held-out loss of at most 2.57 and a pair accuracy of at least 0.61; over the same seeds the
solution gets 2.491 to 2.525 and 0.628 to 0.644 (all 20 pass):

====================================================  ===============  ===============  ==========
bug                                                   held-out loss    pair accuracy    training
====================================================  ===============  ===============  ==========
keep_probabilities: the C tool's rule                 2.480-2.513      0.626-0.642      passes 20
noise_distribution: not normalised                    the same draws (multinomial normalises)   passes 20
skipgram_pairs: the centre paired with itself         2.629-2.675      0.612-0.630      fails 20
skipgram_pairs: radius exclusive                      2.599-2.621      0.610-0.625      fails 20
noise_distribution: exponent 1                        2.650-2.695      0.629-0.646      fails 20
keep_probabilities: 1 - keep                          nan (W_in diverges)                fails 20
keep_probabilities: raw counts                        4.16             0.504-0.512      fails 20
draw_negatives: uniform                               3.88-4.05        0.552-0.570      fails 20
====================================================  ===============  ===============  ==========

The two bugs of ``skipgram_pairs`` and the unigram noise keep the pairs' ranking (their pair accuracy
passes on most seeds): the held-out loss catches them, by 0.03 at the closest. Every bug of
``sgns_gradients`` and of the trainer itself fails on all 20 seeds: nan (the signs, the 1/B), or a loss
of 2.96 to 4.18 (dv_c without the noise words, W_out never updated, W[rows] -= ..., the step not scaled by
B). The bugs of ``log_sigmoid`` and ``sgns_loss`` do not reach the trainer, which calls neither. A trainer
that takes its pairs in the order of the text, unshuffled, was tried as a bug and passes all 20 (2.491 to
2.522, 0.628 to 0.644): this grader cannot tell it from a shuffled one, so it is not planted.
"""
from __future__ import annotations

from grader.spec import Bug

KEEP, PAIRS, NEGATIVES, SGNS, GRADIENTS, GRADCHECK, CBOW, ANALOGY, TRAIN = (
    "keep-test", "pairs-test", "negatives-test", "sgns-test", "gradients-test", "gradcheck-test", "cbow-test",
    "analogy-test", "train-test")

BUGS: list[Bug] = [
    Bug("keep_probabilities: returns the probability of DISCARDING a word (1 - keep)",
        "keep-solution", "return torch.clamp((t / share) ** 0.5, max=1.0)",
        "return 1 - torch.clamp((t / share) ** 0.5, max=1.0)", {KEEP, TRAIN}),
    Bug("keep_probabilities: the C tool's formula sqrt(t/f) + t/f instead of the paper's",
        "keep-solution", "torch.clamp((t / share) ** 0.5, max=1.0)",
        "torch.clamp((t / share) ** 0.5 + t / share, max=1.0)", {KEEP}),
    Bug("keep_probabilities: raw counts instead of the word's share f",
        "keep-solution", "share = counts / counts.sum()", "share = counts", {KEEP, TRAIN}),
    Bug("skipgram_pairs: the window includes the centre (pairs a position with itself)",
        "pairs-solution", "if 0 <= j < T and j != i:", "if 0 <= j < T:", {PAIRS, TRAIN}),
    Bug("skipgram_pairs: radius exclusive (offsets 1..r-1, as range(1, r))",
        "pairs-solution", "range(i - r, i + r + 1)", "range(i - r + 1, i + r)", {PAIRS, TRAIN}),
    Bug("noise_distribution: not normalised (counts ** power, not divided by its sum)",
        "negatives-solution", "return smoothed / smoothed.sum()", "return smoothed", {NEGATIVES}),
    Bug("noise_distribution: exponent 1 (the unigram distribution, power ignored)",
        "negatives-solution", "smoothed = counts ** power", "smoothed = counts ** 1", {NEGATIVES, TRAIN}),
    Bug("draw_negatives: uniform draws, ignoring the noise probabilities",
        "negatives-solution", "flat = torch.multinomial(noise, B * K, replacement=True, generator=rng)",
        "flat = torch.randint(len(noise), (B * K,), generator=rng, device=noise.device)", {NEGATIVES, TRAIN}),
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
    Bug("sgns_gradients: sign error on the noise words (d/ds log s(-s) taken as +s(s))",
        "gradients-solution", "g_neg = torch.sigmoid(s_neg)", "g_neg = -torch.sigmoid(s_neg)", {GRADIENTS, TRAIN}),
    Bug("sgns_gradients: sign error on the true pair (1 - s(s_o) instead of s(s_o) - 1)",
        "gradients-solution", "g_o = torch.sigmoid(s_o) - 1", "g_o = 1 - torch.sigmoid(s_o)", {GRADIENTS, TRAIN}),
    Bug("sgns_gradients: forgets the 1/B of the batch mean (gradients of the sum)",
        "gradients-solution", "return dv_c / B, du_o / B, du_neg / B", "return dv_c, du_o, du_neg",
        {GRADIENTS, TRAIN}),
    Bug("sgns_gradients: dv_c forgets the noise words (only the true context's term)",
        "gradients-solution", "dv_c = g_o.unsqueeze(1) * u_o + (g_neg.unsqueeze(2) * u_neg).sum(dim=1)",
        "dv_c = g_o.unsqueeze(1) * u_o", {GRADIENTS, TRAIN}),
    Bug("numerical_gradient: forward differences (f(x + eps) - f(x)) / eps",
        "gradcheck-solution", "(f(x + bump) - f(x - bump)) / (2 * eps)", "(f(x + bump) - f(x)) / eps", {GRADCHECK}),
    Bug("numerical_gradient: eps added to every coordinate at once (x + eps)",
        "gradcheck-solution", "(f(x + bump) - f(x - bump))", "(f(x + eps) - f(x - eps))", {GRADCHECK}),
    Bug("numerical_gradient: central difference divided by eps instead of 2 eps",
        "gradcheck-solution", "/ (2 * eps)", "/ eps", {GRADCHECK}),
    Bug("relative_error: 0 / 0 = nan when both tensors are zero (no special case)",
        "gradcheck-solution", "    if size == 0:\n        return 0.0\n", "", {GRADCHECK}),
    Bug("relative_error: relative to b only, ||a - b|| / ||b||",
        "gradcheck-solution", "size = a.norm() + b.norm()", "size = b.norm()", {GRADCHECK}),
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
    Bug("train_sgns: updates only the centre vectors (W_out never moves from zero)",
        "train-solution", "            W_out.index_add_(0, o, -step * du_o)\n"
        "            W_out.index_add_(0, n.reshape(-1), -step * du_neg.reshape(-1, dim))\n", "", {TRAIN}),
    Bug("train_sgns: W[rows] -= ... instead of index_add_ (a row used twice in a batch gets one update)",
        "train-solution", "            W_in.index_add_(0, c, -step * dv_c)\n"
        "            W_out.index_add_(0, o, -step * du_o)\n"
        "            W_out.index_add_(0, n.reshape(-1), -step * du_neg.reshape(-1, dim))\n",
        "            W_in[c] -= step * dv_c\n"
        "            W_out[o] -= step * du_o\n"
        "            W_out[n.reshape(-1)] -= step * du_neg.reshape(-1, dim)\n", {TRAIN}),
    Bug("train_sgns: the mean's gradient used as is (the step not scaled by the batch size)",
        "train-solution", "step = rate * len(rows)", "step = rate", {TRAIN}),
]

"""Planted bugs of the assignment "The Transformer" (``transformer.ipynb`` beside this file).

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source notebook's
solution. The solution with that one bug must lose points in exactly the test cells listed in ``loses`` and
keep full marks in every other. ``multi_head_attention`` calls the student's ``attention``,
``encoder_block`` their ``multi_head_attention`` and ``layer_norm``, ``encode`` their blocks and positions,
and ``train_language_model`` trains with all of them: whether a bug upstream of the trainer spoils the trained
model is measured, not guessed (TRAINING_WITH_BUGS: the grader's test loss for seeds 0, 1 and 2, threshold
6.3; the solution gets 5.38 to 5.58 over seeds 1-20, a unigram model 6.49). The threshold sits in the gap
between most models that learnt the verses with some flaw (up to 6.07 on those seeds) and those that learnt
to read the future (6.69 and more).

The grader scores the trained weights with PyTorch's encoder layer, the right causal mask and the right
positions, in PyTorch's layout. A model trained with the output projection read transposed, or with the
layer norm over the batch, is scored as a different function from the one it learnt, and how much that
costs depends on the seed (15 seeds each: 5.60 to 6.33, and 5.84 to 6.17): the train cell may lose points
under those two bugs or not (``may_lose``); every other cell's outcome holds on every seed. The grading
test suite (tests/test_grading_assignments.py) plants each one; private.

One run per submission: the grader trains once, on a seed of its own. Measured that way, with ``python
scripts/trained_part_seeds.py transformer --bug N --seeds 20`` (student seeds 0-19; the solution 5.39 to 5.55, all
20 pass): the diagonal masked (nan), the next position visible (8.98 to 9.25) and no causal mask (8.33 to 8.79)
fail on all 20; the trainer's own mistakes (no zero_grad, zero_grad after backward, the targets not shifted) fail
on all 10 seeds measured, by more than 2 nats; the projection read transposed (5.65 to 6.25) and the layer norm
over the batch (5.93 to 6.29) pass on all 20 (may lose). The mask applied after the softmax fails on all 20 (6.33
to 7.03), too close to 6.3 to hold on every seed (mean 6.6, standard deviation 0.18: about one seed in 20 would
pass): it may lose the training cell or not (``may_lose``), and loses its four other cells on every seed.
"""
from __future__ import annotations

from grader.spec import Bug

ATTENTION, MHA, POSITIONS, CAUSAL, BLOCK, ENCODE, LOSS, TRAIN = (
    "attention-test", "mha-test", "positions-test", "causal-test", "block-test", "encode-test", "loss-test",
    "train-test")

#: The grader's test loss (nats per piece) of the trainer with each bug upstream of it (seeds 0, 1, 2; measured).
TRAINING_WITH_BUGS = {
    "attention: scores divided by Dh": (5.425, 5.605, 5.418),  # passes: the model learns larger scores
    "attention: the mask applied after the softmax": (6.692, 6.747, 6.694),  # fails: the later keys' scores
    # reach every position through the softmax's sum, and the model learns to read them
    "multi_head_attention: heads split on the wrong axis": (5.673, 5.633, 5.649),  # passes
    "multi_head_attention: the output projection not transposed": (5.650, 5.873, 5.956),  # passes mostly: 5.60
    # to 6.33 over seeds 1-15 (one above the threshold), so the train cell may lose points
    "sinusoidal_encoding: the cosine's frequency from its own column index": (5.398, 5.543, 5.429),  # passes
    "causal_mask: a position cannot see itself": (float("nan"),) * 3,  # fails: position 0 attends nothing
    "causal_mask: off by one, the next position visible": (8.957, 8.940, 9.031),  # fails: it copies the answer
    "layer_norm: over the batch": (6.065, 5.990, 6.056),  # passes mostly: 5.84 to 6.17 over seeds 1-15
    "encoder_block: post-LN": (5.513, 5.669, 5.666),  # passes
    "smoothed_cross_entropy: the smoothing mass given to padding": (5.386, 5.536, 5.434),  # passes
    "lm_forward: no causal mask": (8.779, 8.431, 8.912),  # fails
    # the trainer's own mistakes: the lowest and highest over student seeds 0-9 (trained_part_seeds.py --bug N)
    "train_language_model: no zero_grad": (10.76, 20.38),  # fails: each step the sum of every gradient so far
    "train_language_model: zero_grad after backward": (8.74, 8.908),  # fails: Adam never moves the weights
    "train_language_model: the targets not shifted": (10.88, 11.07),  # fails: it learns to copy its input
}

BUGS: list[Bug] = [
    Bug("attention: scores divided by Dh instead of sqrt(Dh)",
        "attention-solution", "/ math.sqrt(q.shape[-1])", "/ q.shape[-1]", {ATTENTION, MHA, BLOCK, ENCODE}),
    Bug("attention: the mask applied after the softmax (forbidden weights zeroed, the rest not renormalised)",
        "attention-solution",
        '    if mask is not None:\n        scores = scores.masked_fill(~mask, float("-inf"))  # a forbidden key: '
        'weight exp(-inf) = 0\n    weights = torch.softmax(scores, dim=-1)  # over the keys\n',
        "    weights = torch.softmax(scores, dim=-1)\n    if mask is not None:\n"
        "        weights = weights.masked_fill(~mask, 0.0)\n", {ATTENTION, MHA, BLOCK, ENCODE},
        may_lose=frozenset({TRAIN})),
    Bug("multi_head_attention: heads split on the wrong axis ((B, N, D) viewed as (B, H, N, Dh))",
        "mha-solution", "return x.reshape(x.shape[0], x.shape[1], heads, D // heads).transpose(1, 2)",
        "return x.reshape(x.shape[0], heads, x.shape[1], D // heads)", {MHA, BLOCK, ENCODE}),
    Bug("multi_head_attention: the output projection not transposed (out @ W_out)",
        "mha-solution", 'out @ params["W_out"].T + params["b_out"]', 'out @ params["W_out"] + params["b_out"]',
        {MHA, BLOCK, ENCODE}, may_lose=frozenset({TRAIN})),
    Bug("sinusoidal_encoding: the cosine's frequency from its own column index (10000^((2i+1)/D), not 10000^(2i/D))",
        "positions-solution", "pe[:, 1::2] = torch.cos(p * rates)",
        "pe[:, 1::2] = torch.cos(p * 10000.0 ** (-torch.arange(1, D, 2, dtype=torch.float64) / D))",
        {POSITIONS, ENCODE}),
    Bug("causal_mask: a position cannot see itself (the diagonal masked)",
        "causal-solution", ".tril()  # s <= t", ".tril(-1)", {CAUSAL, TRAIN}),
    Bug("causal_mask: off by one, the next position visible",
        "causal-solution", ".tril()  # s <= t", ".tril(1)", {CAUSAL, TRAIN}),
    Bug("layer_norm: over the batch (dim 0) instead of each position's vector",
        "block-solution",
        "mu = x.mean(dim=-1, keepdim=True)  # (..., 1)\n    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)",
        "mu = x.mean(dim=0, keepdim=True)\n    var = ((x - mu) ** 2).mean(dim=0, keepdim=True)",
        {BLOCK, ENCODE}, may_lose=frozenset({TRAIN})),
    Bug("encoder_block: post-LN (normalised after each residual sum) instead of pre-LN",
        "block-solution",
        'h = layer_norm(x, params["ln1_g"], params["ln1_b"])\n'
        '    x = x + multi_head_attention(h, h, params, heads, mask)  # the residual path is never normalised\n'
        '    h = layer_norm(x, params["ln2_g"], params["ln2_b"])\n'
        '    hidden = torch.relu(h @ params["W_1"].T + params["b_1"])  # (B, T, D) x (D, F) -> (B, T, F)\n'
        '    return x + hidden @ params["W_2"].T + params["b_2"]  # (B, T, F) x (F, D) -> (B, T, D)',
        'x = layer_norm(x + multi_head_attention(x, x, params, heads, mask), params["ln1_g"], params["ln1_b"])\n'
        '    hidden = torch.relu(x @ params["W_1"].T + params["b_1"])\n'
        '    return layer_norm(x + hidden @ params["W_2"].T + params["b_2"], params["ln2_g"], params["ln2_b"])',
        {BLOCK, ENCODE}),
    Bug("encode: the positions added after the first block",
        "encode-solution",
        "x = E[src] * math.sqrt(D) + sinusoidal_encoding(src.shape[1], D).to(E)  # (B, S, D) + (S, D)\n"
        "    mask = (src != pad_id)[:, None, :]  # (B, 1, S): no query attends a padded key\n"
        "    for params in blocks:\n        x = encoder_block(x, params, heads, mask)\n",
        "x = E[src] * math.sqrt(D)\n    mask = (src != pad_id)[:, None, :]\n"
        "    for i, params in enumerate(blocks):\n        x = encoder_block(x, params, heads, mask)\n"
        "        if i == 0:\n            x = x + sinusoidal_encoding(src.shape[1], D).to(E)\n", {ENCODE}),
    Bug("smoothed_cross_entropy: the smoothing mass given to padding (the uniform term averaged over every position)",
        "loss-solution", "loss = (1 - eps) * nll + eps * uniform\n    return loss[real].mean()",
        "return (1 - eps) * nll[real].mean() + eps * uniform.mean()", {LOSS}),
    Bug("smoothed_cross_entropy_grad: the smoothing left out of the gradient (softmax minus one-hot)",
        "grad-solution",
        "q = torch.full_like(logits, eps / V)  # the smoothed target distribution\n"
        "    q.scatter_add_(-1, targets[..., None], torch.full_like(logits[..., :1], 1 - eps))",
        "q = torch.zeros_like(logits)\n    q.scatter_add_(-1, targets[..., None], torch.ones_like(logits[..., :1]))",
        {LOSS}),
    Bug("lm_forward: no causal mask (padding only): every position sees the whole verse",
        "train-solution", "mask = causal_mask(T)[None] & (ids != 0)[:, None, :]", "mask = (ids != 0)[:, None, :]",
        {TRAIN}),
    Bug("numerical_gradient: forward differences (f(x + eps) - f(x)) / eps",
        "gradcheck-solution", "(f(x + bump) - f(x - bump)) / (2 * eps)", "(f(x + bump) - f(x)) / eps",
        {"gradcheck-test"}),
    Bug("relative_error: 0 / 0 = nan when both tensors are zero (no special case)",
        "gradcheck-solution", "    if size == 0:\n        return 0.0\n", "", {"gradcheck-test"}),
    Bug("train_language_model: no zero_grad (each step follows the sum of every gradient so far)",
        "train-solution", "            optimizer.zero_grad()\n", "", {TRAIN}),
    Bug("train_language_model: zero_grad after backward (each step's gradients erased before Adam sees them)",
        "train-solution", "            optimizer.zero_grad()\n            loss.backward()\n",
        "            loss.backward()\n            optimizer.zero_grad()\n", {TRAIN}),
    Bug("train_language_model: the targets not shifted (each position scored on its own piece)",
        "train-solution", "ids[:, 1:], eps, 0)", "ids[:, :-1], eps, 0)", {TRAIN}),
]

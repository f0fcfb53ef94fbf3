"""Planted bugs of the assignment "The Transformer" (``transformer.ipynb`` beside this file).

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source notebook's
solution. The solution with that one bug must lose points in exactly the test cells listed in ``loses`` and
keep full marks in every other. ``multi_head_attention`` calls the student's ``attention``,
``encoder_block`` their ``multi_head_attention`` and ``layer_norm``, ``encode`` their blocks and positions,
and ``train_language_model`` trains with all of them: whether a bug upstream of the trainer spoils the trained
model is measured, not guessed (TRAINING_WITH_BUGS: the grader's test loss, the lowest and highest over student
seeds 0-19, or 0-9 where the bug fails by far more than the noise, with ``python scripts/trained_part_seeds.py
transformer --bug N --seeds 20 --jobs 2``). The bar is 4.75 nats per piece (reference.OUTCOME): the solution gets
4.641 to 4.718 over seeds 0-19 on the 757 test verses whose source does not occur in training, the course's
Kneser-Ney bigram of the same pieces 4.793. The bugs' figures below were measured on the 807 test verses before
those 50 were dropped, when the bar was 4.7 (the solution 4.588 to 4.657, the bigram 4.749), except the scores
divided by Dh, the one bug near the bar, measured again on the 757: 4.786 to 4.871 over seeds 0-19, failing on
every seed. Dropping the 50 raised the solution's loss on seed 18 from 4.657 to 4.718.

The grader scores the trained weights with PyTorch's encoder layer, the right causal mask and the right
positions, in PyTorch's layout. Every bug that changes what the model computes fails the train cell on every
seed measured, by at least 0.03 nats: scores divided by Dh (4.786 to 4.871: no better than the bigram), post-LN
(4.894 to 5.034), the output projection read transposed (4.941 to 5.478) or the layer norm over the batch (5.981
to 6.747), scored as a different function from the one they learnt, the heads split on the wrong axis (5.349 to
6.079), the mask applied after the softmax (7.311 to 8.417), and the masks that let a position see the future
(9.4 and more) or not itself (nan); so do the trainer's own mistakes, by more than 4 nats on seeds 0-9: no
zero_grad (37.07 to 48.92), zero_grad after backward (8.74 to 8.908) and the targets not shifted (11.32 to
11.6). Two bugs leave the trained model as good as the solution's and pass on all
20 seeds, by at least 0.04 nats: the cosine's frequency from its own column index (4.588 to 4.653: the positions
are still distinct) and the smoothing mass given to padding (4.589 to 4.66: bucketed batches hold little
padding); each loses its own cell. A trainer that counts padding in the loss (pad_id -1) is no planted bug for
the same reason: 4.585 to 4.621 over seeds 0-9, it passes. Under the one-epoch recipe's bar before (6.3, which
a unigram model nearly reached: 6.49), scores divided by Dh, the heads on the wrong axis and post-LN passed the
train cell, and three more passed on some seeds (``may_lose``); none is uncertain now. The grading test
suite (tests/test_grading_assignments.py) plants each one; private.
"""
from __future__ import annotations

from grader.spec import Bug

ATTENTION, MHA, POSITIONS, CAUSAL, BLOCK, ENCODE, LOSS, TRAIN = (
    "attention-test", "mha-test", "positions-test", "causal-test", "block-test", "encode-test", "loss-test",
    "train-test")

#: The grader's test loss (nats per piece) with each bug: the lowest and highest over student seeds 0-19 (0-9 for
#: the bugs marked so), measured with scripts/trained_part_seeds.py on the 807 test verses (the bar then 4.7, the
#: solution 4.588 to 4.657), except the first, measured on today's 757 (the bar 4.75, the solution 4.641 to 4.718).
TRAINING_WITH_BUGS = {
    "attention: scores divided by Dh": (4.786, 4.871),  # fails: no better than the Kneser-Ney bigram (4.793)
    "attention: the mask applied after the softmax": (7.311, 8.417),  # fails (0-9): the later keys' scores
    # reach every position through the softmax's sum, and the model learns to read them
    "multi_head_attention: heads split on the wrong axis": (5.349, 6.079),  # fails (0-9)
    "multi_head_attention: the output projection not transposed": (4.941, 5.478),  # fails (0-9)
    "sinusoidal_encoding: the cosine's frequency from its own column index": (4.588, 4.653),  # passes
    "causal_mask: a position cannot see itself": (float("nan"),) * 2,  # fails (0-9): position 0 attends nothing
    "causal_mask: off by one, the next position visible": (9.427, 9.885),  # fails (0-9): it copies the answer
    "layer_norm: over the batch": (5.981, 6.747),  # fails (0-9)
    "encoder_block: post-LN": (4.894, 5.034),  # fails
    "smoothed_cross_entropy: the smoothing mass given to padding": (4.589, 4.66),  # passes
    "lm_forward: no causal mask": (9.694, 9.934),  # fails (0-9)
    "train_language_model: no zero_grad": (37.07, 48.92),  # fails (0-9): each step the sum of every gradient so far
    "train_language_model: zero_grad after backward": (8.74, 8.908),  # fails (0-9): Adam never moves the weights
    "train_language_model: the targets not shifted": (11.32, 11.6),  # fails (0-9): it learns to copy its input
}

BUGS: list[Bug] = [
    Bug("attention: scores divided by Dh instead of sqrt(Dh)",
        "attention-solution", "/ math.sqrt(q.shape[-1])", "/ q.shape[-1]", {ATTENTION, MHA, BLOCK, ENCODE, TRAIN}),
    Bug("attention: the mask applied after the softmax (forbidden weights zeroed, the rest not renormalised)",
        "attention-solution",
        '    if mask is not None:\n        scores = scores.masked_fill(~mask, float("-inf"))  # a forbidden key: '
        'weight exp(-inf) = 0\n    weights = torch.softmax(scores, dim=-1)  # over the keys\n',
        "    weights = torch.softmax(scores, dim=-1)\n    if mask is not None:\n"
        "        weights = weights.masked_fill(~mask, 0.0)\n", {ATTENTION, MHA, BLOCK, ENCODE, TRAIN}),
    Bug("multi_head_attention: heads split on the wrong axis ((B, N, D) viewed as (B, H, N, Dh))",
        "mha-solution", "return x.reshape(x.shape[0], x.shape[1], heads, D // heads).transpose(1, 2)",
        "return x.reshape(x.shape[0], heads, x.shape[1], D // heads)", {MHA, BLOCK, ENCODE, TRAIN}),
    Bug("multi_head_attention: the output projection not transposed (out @ W_out)",
        "mha-solution", 'out @ params["W_out"].T + params["b_out"]', 'out @ params["W_out"] + params["b_out"]',
        {MHA, BLOCK, ENCODE, TRAIN}),
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
        {BLOCK, ENCODE, TRAIN}),
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
        {BLOCK, ENCODE, TRAIN}),
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

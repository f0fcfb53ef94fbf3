"""Planted bugs of the assignment "RNN language models and backpropagation through time" (``rnnlm.ipynb``
beside this file).

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source notebook's
solution. The solution with that one bug must lose points in exactly the test cells listed in ``loses`` and
keep full marks in every other. The parts are independent (each visible test uses literals, not another
part's output), except ``train_char_lm``, which trains with the student's ``stream_batches``, ``lm_windows``,
``lstm_forward`` and ``clip_global_norm``: whether a bug upstream of the trainer spoils the trained part is
measured, not guessed (TRAINING_WITH_BUGS below).

The trained part has two cases: the full run, whose test perplexity the grader measures with PyTorch's own
``nn.LSTM`` (the bar 7.4; the solution 6.56 to 7.00 over 20 seeds, the character Kneser-Ney trigram 7.73), and
the recipe's first 3 windows in small settings, whose weights must be the reference recipe's up to a relative
error of 1e-3 per tensor (the solution: 6.9e-8 to 2.6e-5 over 300 random seeds). A bug that training adapts
to in the student's own layout (gates in the order i, f, o, g) still fails: the weights are read in nn.LSTM's
order. A trainer mistake that the model learns around (the state started from zero in every window) fails
the recipe on every seed. The grading test suite (tests/test_grading_assignments.py) plants each one; private.

One run per submission: the grader trains once, on a seed of its own. Measured that way, with
``python scripts/trained_part_seeds.py rnnlm --bug N --seeds 10 --jobs 2`` (student seeds 0-9), and the
recipe case alone over 300 random seeds: every bug listed as losing the training cell fails it on every seed
measured, by far.
"""
from __future__ import annotations

from grader.spec import Bug

FORWARD, BPTT, GRADCHECK, LSTM, BATCHING, TBPTT, CLIP, PPL, SAMPLING, TRAIN = (
    "forward-test", "bptt-test", "gradcheck-test", "lstm-test", "batching-test", "tbptt-test", "clip-test",
    "perplexity-test", "sampling-test", "train-test")

#: Each bug upstream of the trainer, or in it: the grader's test perplexity of the full run over student seeds
#: 0-9 (bar 7.4), and the recipe case's largest relative error over 300 random seeds (bar 1e-3).
TRAINING_WITH_BUGS = {
    "lstm_forward: gate order i, f, o, g": ((32.5, 75.8), (1.22, 1.68)),  # fails both: nn.LSTM reads them scrambled
    "lstm_forward: tanh for the input gate": ((15.1, 38.8), (1.17, 1.65)),  # fails both
    "lstm_forward: the forget gate's sign flipped": ((11.8, 21.1), (0.78, 1.07)),  # fails both
    "stream_batches: interleaved": ((26.8, 26.9), (0.87, 1.39)),  # fails both: every B-th character, a unigram
    "lm_windows: targets not shifted": ((2.3e6, 7.9e6), (0.55, 1.19)),  # fails both: it learns to copy its input
    "clip_global_norm: each tensor alone": ((6.56, 6.92), (6.9e-8, 2.6e-5)),  # passes: the norm stays under 1
    "clip_global_norm: always rescaled": ((6.47, 6.84), (0.028, 0.28)),  # the recipe fails: gradients scaled up
    "clip_global_norm: the sum of the norms": ((6.58, 6.89), (6.9e-8, 2.6e-5)),  # passes: never clipped here
    "clip_global_norm: in place": ((), ()),  # passes: the very numbers of the solution (g.mul_(s) is g * s)
    "train_char_lm: no detach": ((), ()),  # fails: backward through the graph a second time, an error
    "train_char_lm: zero_grad never called": ((10.4, 11.8), (0.21, 0.23)),  # fails both
    "train_char_lm: zero_grad after backward": ((), ()),  # fails: the gradients are None when clipped, an error
    "train_char_lm: the state started from zero in every window": ((6.86, 7.12), (0.11, 0.53)),  # the recipe fails
}

BUGS: list[Bug] = [
    Bug("elman_forward: the state never updated (h0 read at every step)",
        "forward-solution", "h @ W_hh.T + b_h)", "h0 @ W_hh.T + b_h)", {FORWARD}),
    Bug("elman_forward: W_hh not transposed (the recurrent weights read as columns)",
        "forward-solution", "h @ W_hh.T + b_h)", "h @ W_hh + b_h)", {FORWARD}),
    Bug("elman_bptt: gradient of tanh written as 1 - h instead of 1 - h^2",
        "bptt-solution", "(1 - H[:, t] ** 2)", "(1 - H[:, t])", {BPTT}),
    Bug("elman_bptt: the gradient from the next step (dh_next) left out: no flow through time",
        "bptt-solution", "(dH[:, t] + dh_next)", "dH[:, t]", {BPTT}),
    Bug("elman_bptt: dW_hh pairs the gradient with the current state h_t instead of the previous one",
        "bptt-solution", "dW_hh += da.T @ h_prev", "dW_hh += da.T @ H[:, t]", {BPTT}),
    Bug("elman_bptt: dh0 returned as zeros (the initial state treated as a constant)",
        "bptt-solution", "return dX, dh_next, dW_xh", "return dX, torch.zeros_like(h0), dW_xh", {BPTT}),
    Bug("numerical_gradient: forward differences (f(x + eps) - f(x)) / eps",
        "gradcheck-solution", "(f(x + bump) - f(x - bump)) / (2 * eps)", "(f(x + bump) - f(x)) / eps", {GRADCHECK}),
    Bug("relative_error: 0 / 0 = nan when both tensors are zero (no special case)",
        "gradcheck-solution", "    if size == 0:\n        return 0.0\n", "", {GRADCHECK}),
    Bug("lstm_forward: gate order i, f, o, g instead of nn.LSTM's i, f, g, o",
        "lstm-solution", "i, f, g, o = z.chunk(4, dim=1)", "i, f, o, g = z.chunk(4, dim=1)", {LSTM, TRAIN}),
    Bug("lstm_forward: tanh where the input gate needs a sigmoid",
        "lstm-solution", "torch.sigmoid(i) * torch.tanh(g)", "torch.tanh(i) * torch.tanh(g)", {LSTM, TRAIN}),
    Bug("lstm_forward: the forget gate's sign flipped (sigmoid(-z_f): the share forgotten, not kept)",
        "lstm-solution", "c = torch.sigmoid(f) * c", "c = torch.sigmoid(-f) * c", {LSTM, TRAIN}),
    Bug("stream_batches: streams interleaved (row b gets every B-th token) instead of contiguous slices",
        "batching-solution", "ids[:N * B].reshape(B, N)", "ids[:N * B].reshape(N, B).T", {BATCHING, TRAIN}),
    Bug("lm_windows: targets not shifted by one (each position predicts itself)",
        "batching-solution", "stream[:, start + 1:start + 1 + T]", "stream[:, start:start + T]", {BATCHING, TRAIN}),
    Bug("tbptt_forward: forgetting to detach between windows (the gradient reaches back to the first step)",
        "tbptt-solution",
        "        h = h.detach()  # the next window starts from these values, but no gradient flows back through them\n",
        "", {TBPTT}),
    Bug("tbptt_forward: hidden state reset to h0 at the start of every window (values not carried)",
        "tbptt-solution", "    for start in range(0, N, bptt):\n",
        "    for start in range(0, N, bptt):\n        h = h0\n", {TBPTT}),
    Bug("tbptt_forward: the state detached at every step (the gradient never crosses a step)",
        "tbptt-solution", "h = step(X[:, t], h)", "h = step(X[:, t], h.detach())", {TBPTT}),
    Bug("clip_global_norm: clipping each parameter separately (a norm per tensor)",
        "clip-solution", "return [g * scale for g in grads], total",
        "return [g * torch.clamp(max_norm / (g.norm() + 1e-6), max=1.0) for g in grads], total", {CLIP}),
    Bug("clip_global_norm: always rescaled to max_norm (small gradients scaled up)",
        "clip-solution", "torch.clamp(max_norm / (total + 1e-6), max=1.0)", "max_norm / (total + 1e-6)",
        {CLIP, TRAIN}),
    Bug("clip_global_norm: the global norm as the sum of the tensors' norms",
        "clip-solution", "torch.stack([g.norm() for g in grads]).norm()",
        "torch.stack([g.norm() for g in grads]).sum()", {CLIP}),
    # the caller's gradients scaled in place: right values, but the part asks for new tensors (a caller that
    # logs or reuses its gradients sees them changed); the trainer gets the same numbers, bit for bit
    Bug("clip_global_norm: scaling the caller's gradients in place (g.mul_) instead of returning new tensors",
        "clip-solution", "return [g * scale for g in grads], total", "return [g.mul_(scale) for g in grads], total",
        {CLIP}),
    Bug("masked_perplexity: averaging perplexity per sentence (the mean of each row's mean log-probability)",
        "perplexity-solution", "torch.exp(token_nll.sum() / mask.sum())",
        "torch.exp((token_nll.sum(dim=1) / mask.sum(dim=1)).mean())", {PPL}),
    Bug("masked_perplexity: dividing by B * T instead of counting the real tokens",
        "perplexity-solution", "token_nll.sum() / mask.sum()", "token_nll.sum() / mask.numel()", {PPL}),
    Bug("masked_perplexity: padding not masked (its predictions counted)",
        "perplexity-solution", "token_nll = -picked * mask", "token_nll = -picked", {PPL}),
    Bug("masked_perplexity: log-softmax over time instead of over the vocabulary",
        "perplexity-solution", "torch.log_softmax(logits, dim=-1)", "torch.log_softmax(logits, dim=1)", {PPL}),
    Bug("sample_next: temperature applied after the softmax (the probabilities divided: no effect)",
        "sampling-solution", "torch.softmax(kept / temperature, dim=-1)", "torch.softmax(kept, dim=-1) / temperature",
        {SAMPLING}),
    Bug("sample_next: top-k keeps k + 1 tokens",
        "sampling-solution", "torch.topk(logits, top_k, dim=-1)",
        "torch.topk(logits, min(top_k + 1, logits.shape[-1]), dim=-1)", {SAMPLING}),
    Bug("sample_next: logits multiplied by the temperature instead of divided",
        "sampling-solution", "kept / temperature", "kept * temperature", {SAMPLING}),
    Bug("train_char_lm: the state not detached between windows (backward through the graph a second time)",
        "train-solution",
        "        h, c = h.detach(), c.detach()  # carried to the next window, cut from this one's "
        "graph\n", "", {TRAIN}),
    Bug("train_char_lm: zero_grad never called (the gradients of every window summed into the next)",
        "train-solution", "        optimizer.zero_grad()\n", "", {TRAIN}),
    Bug("train_char_lm: zero_grad after backward (each step's gradients erased before Adam sees them)",
        "train-solution", "        optimizer.zero_grad()\n        loss.backward()\n",
        "        loss.backward()\n        optimizer.zero_grad()\n", {TRAIN}),
    Bug("train_char_lm: the state started from zero in every window instead of carried",
        "train-solution", "bptt)[:steps]:\n", "bptt)[:steps]:\n        h, c = torch.zeros(batch, hidden), "
        "torch.zeros(batch, hidden)\n", {TRAIN}),
]

"""The checks of the numbers book/building_blocks.md states: see scripts/chapter_guards.py.

Each section runs, when the book is built, after the chapter's cell tagged guard-<name>,
in the chapter's kernel; a failing check fails the build, and the text must be rewritten.
"""

# %% guard: splits
# The text: every movie's reviews go to exactly one split.
assert not (movies[0] & movies[1] or movies[0] & movies[2] or movies[1] & movies[2])

# %% guard: softmax-example
# The worked example's numbers, as the text writes them (3 decimals).
assert [round(v, 3) for v in y_hat_ex.tolist()] == [0.665, 0.245, 0.090], y_hat_ex
assert round(loss_ex.item(), 3) == 0.408, loss_ex
assert [round(v, 3) for v in z_ex.grad.tolist()] == [-0.335, 0.245, 0.090], z_ex.grad
assert torch.allclose(z_ex.grad, (y_hat_ex - y_ex).detach(), atol=1e-6)

# %% guard: matrix-backprop
# The rules of the text, against autograd, on the small example; and the Z_1 the text writes out.
assert Z1_s.tolist() == [[2.0, -2.0], [1.0, 0.5]], Z1_s
dZ2_rule = (torch.softmax(Z2_s, -1) - F.one_hot(y_s, 3)).detach() / 2
assert torch.allclose(Z2_s.grad, dZ2_rule, atol=1e-6)
assert torch.allclose(W2_s.grad, H_s.detach().T @ Z2_s.grad, atol=1e-6)
assert torch.allclose(H_s.grad, Z2_s.grad @ W2_s.detach().T, atol=1e-6)
assert torch.allclose(Z1_s.grad, H_s.grad * (Z1_s > 0), atol=1e-6)
assert torch.allclose(W1_s.grad, X_s.T @ Z1_s.grad, atol=1e-6)
assert Z1_s.grad[0, 1] == 0 and H_s.grad[0, 1] != 0  # the ReLU stopped a gradient that came

# %% guard: linear-vs-mlp
# The text: both get about three test reviews in four right; the MLP is no more accurate on the
# test split; at their best epochs they fit the training set equally; most errors are shared.
lr_res, mlp_res = results["logistic regression"], results["MLP, H=32"]
assert 0.72 < lr_res["test_acc"] < 0.78 and 0.72 < mlp_res["test_acc"] < 0.78, results
assert mlp_res["test_acc"] <= lr_res["test_acc"] + 0.005, results
assert abs(mlp_res["train_acc"] - lr_res["train_acc"]) < 0.01, results
assert shared > 0.5, shared

# %% guard: confusion
# The text: more rotten reviews called fresh than fresh ones rotten; six test reviews in ten are fresh.
rotten_as_fresh = int(((yte == 0) & (pred_test == 1)).sum())
fresh_as_rotten = int(((yte == 1) & (pred_test == 0)).sum())
assert rotten_as_fresh > fresh_as_rotten, (rotten_as_fresh, fresh_as_rotten)
assert 0.57 < float((yte == 1).float().mean()) < 0.65

# %% guard: optimisers
# The text: momentum gets closest to the minimum, SGD beats Adam at 50 steps; Adam's first step is
# exactly the learning rate along each coordinate, against the gradient's sign.
assert f_at["momentum"][50] < f_at["SGD"][50] < f_at["Adam"][50], f_at
assert f_at["momentum"][10] < f_at["SGD"][10], f_at
assert torch.allclose(paths["Adam"][1] - paths["Adam"][0], torch.tensor([0.2, -0.2]), atol=1e-5)
# the caption: SGD zigzags in y (its sign flips), momentum does not blow up
y_sgd = paths["SGD"][:, 1]
assert (y_sgd[1:] * y_sgd[:-1] < 0).all()

# %% guard: adam-by-hand
assert torch.allclose(adam_by_hand(50), paths["Adam"][-1], atol=1e-5)

# %% guard: default-init
# The text: nn.Linear's weights have variance 1/(3 n_in), a third of 1/n_in.
assert abs(var_default * 3 * n_in - 1) < 0.05, var_default

# %% guard: residual
# The text: the plain network's gradients fall towards the input, the residual one's keep their
# size; the residual stream grows with depth, the plain one's shrinks.
plain, res = layer_grads[False], layer_grads[True]
assert plain[0] < 1e-3 * plain[-1], plain
assert 0.5 < res[0] / res[-1] < 2, res
assert stream_stds[True][-1] > 2 * stream_stds[True][0], stream_stds[True]
assert stream_stds[False][-1] < stream_stds[False][0], stream_stds[False]

# %% guard: sigmoid-depth
# The text: with the default weights each layer scales the gradient by well under 1/4; 32 times
# larger weights make the gradient grow, with most units saturated.
assert sig_factors[1][0] < 0.2, sig_factors
assert sig_factors[32][0] > 1 and sig_factors[32][1] > 0.5, sig_factors
assert sig_factors[1][0] < sig_factors[4][0] < sig_factors[16][0] < sig_factors[32][0]

# %% guard: flat-tails
# The text: flat for |z| > 4.36 (sigmoid), |z| > 2.18 (tanh), z < -2.28 (GELU); ReLU is off for
# half of the inputs at every scale; GELU's mean derivative is 1/2 for every sigma.
assert [round(flat_tails(n)[1], 2) for n in ("sigmoid", "tanh")] == [4.36, 2.18]
assert round(flat_tails("gelu")[0], 2) == -2.28
assert all(abs(st["off"] - 0.5) < 0.01 for st in stats["relu"])
assert all(abs(st["mean_grad"] - 0.5) < 0.01 for st in stats["gelu"])
assert stats["tanh"][-1]["saturated"] > stats["tanh"][0]["saturated"]

# %% guard: dropout
# The text: the gap between training and validation loss opens more slowly with dropout, and the
# training loss with dropout stays higher.
no_drop, drop_half = dropout_runs[0.0], dropout_runs[0.5]
assert drop_half.last("train_loss") > no_drop.last("train_loss")
gap = {p: h.last("val_loss") - h.last("train_loss") for p, h in dropout_runs.items()}
assert gap[0.5] < gap[0.0], gap

# %% guard: init-stds
# The text: N(0,1) tanh units sit at +-1; a N(0,1) ReLU net multiplies the scale by about 11 per
# layer; Kaiming keeps ReLU activations at a constant scale; Xavier tanh shrinks slowly.
assert init_stds[("tanh", "N(0,1)")][-1] > 0.95
growth = (init_stds[("relu", "N(0,1)")][4] / init_stds[("relu", "N(0,1)")][0]) ** (1 / 4)
assert 10 < growth < 12.5, growth
assert all(0.5 < v < 1.2 for v in init_stds[("relu", "Kaiming")])
xavier_tanh = init_stds[("tanh", "Xavier")]
assert all(b < a for a, b in zip(xavier_tanh, xavier_tanh[1:]))

# %% guard: clipping
# The text: without clipping nearly every run's loss passes a million; with it none passes 20.
# The runs are chaotic (a different processor's rounding changes which run blows up when): the
# claims hold over the six runs, not for one.
peak = {clip: [max(runs[clip, seed][1]) for seed in range(6)] for clip in (None, 1.0)}
assert sum(p > 1e6 for p in peak[None]) >= 5 and max(peak[1.0]) < 20

# %% guard: accumulation
# The text: the accumulated gradient is the batch's up to rounding; so are the runs.
assert diff < 1e-6 and w_diff < 1e-5
runs = {name: hist["train_loss"] for name, (_, hist) in sgd_runs.items()}
assert all(abs(a - b) < 1e-4 for a, b in zip(runs["batch 32"], runs["batch 8, accumulate=4"]))

# %% guard: smoothing
# The text: with smoothing fewer predictions are near 1.0, and the ECE is lower.
(conf_0, correct_0, _), (conf_1, correct_1, _) = smoothing_runs[0.0], smoothing_runs[0.1]
assert (conf_1 > 0.99).float().mean() < (conf_0 > 0.99).float().mean() / 2
assert expected_calibration_error(conf_1, correct_1) < expected_calibration_error(conf_0, correct_0)

# %% guard: early-stopping
# The figure: the run stopped early, and every epoch after the best one has a higher val loss.
assert hist_es.stopped_early
assert all(v > hist_es["val_loss"][best] for v in hist_es["val_loss"][best + 1:])

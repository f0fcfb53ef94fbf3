"""The checks of the numbers book/cnn.md states: see scripts/chapter_guards.py.

Each section runs, when the book is built, after the chapter's cell tagged guard-<name>,
in the chapter's kernel; a failing check fails the build, and the text must be rewritten.
"""

# %% guard: data
assert len(reviews) == 12808 and int(labels.sum()) == 7403  # fresh = 1

# %% guard: neighbours
assert {"film", "movie", "funny"} <= set(missing)
assert "bad" in [n for n, _ in w2v.nearest("good", 6)]

# %% guard: bag-pair
assert torch.equal(bags[0], bags[1])

# %% guard: worked
# The worked example's maths: c = (-1, -1, 3, -2), max 3 at "not good", equal to F.conv1d.
assert by_hand.tolist() == [-1.0, -1.0, 3.0, -2.0], by_hand
assert torch.allclose(by_hand, by_torch)
assert best_window == 2 and words5[2:4] == ["not", "good"]

# %% guard: short
assert 1 / 80 < n_short / len(test_idx) < 1 / 30  # "about one in fifty"

# %% guard: mask
# With ReLU after the max, 0 and -inf give the same features; before it, they differ for the
# filters whose real scores are all negative (so the numerical claim of the text holds).
assert differ_relu == 0 and differ_raw > 0, (differ_raw, differ_relu)
assert torch.equal(F.relu(pool_inf[0]), F.relu(pool_zero[0]))
assert torch.allclose(F.relu(pool_inf[0]), alone[0][:model.config.maps], atol=1e-6)
assert float(neg_scores.max()) < 0 and len(neg_scores) == len(short) + 2
assert not torch.equal(torch.tanh(pool_inf[0]), torch.tanh(pool_zero[0]))

# %% guard: max-norm
assert row_norms.max() < 0.5 * cfg.max_norm  # the text: far inside the ball

# %% guard: setup
# What the text below says of these numbers (see the check after the pooling).
diff = bench["pretrained_minus_rand"]
assert setup["folds_done"] == setup["folds"] == 10
assert setup["vectors"] == "domain"
assert setup["domain_type_coverage"] > 2 * setup["chapter_type_coverage"]
assert setup["domain_static_val_acc"] > setup["chapter_static_val_acc"] + 0.03
assert diff["cnn_static"]["cv_mean"] < -0.05 and diff["cnn_static"]["split"] < -0.05
for key in ("cnn_nonstatic", "cnn_multichannel"):
    assert abs(diff[key]["cv_mean"]) < 0.005 < 0.01 < diff[key]["cv_std"], diff[key]
    assert abs(diff[key]["split"]) < 0.01, diff[key]
margin = {k: systems[k]["cv_mean"] - systems["majority"]["cv_mean"]
          for k in ("cnn_rand", "logreg")}
assert 0.18 < margin["cnn_rand"] < 0.195 and 0.185 < margin["logreg"] < 0.2
assert abs(systems["majority"]["cv_mean"] - 0.578) < 0.001
assert setup["domain_cnn_vocab_coverage"] > 0.995
assert 0.4 < 1 - setup["chapter_cnn_vocab_coverage"] < 0.5  # "nearly half ... still lack one"
assert setup["domain_type_coverage"] < 0.75
assert 150_000 < setup["train_tokens"] < 250_000  # "the 0.2 million of the training snippets"
assert -0.11 < diff["cnn_static"]["cv_mean"] < -0.07  # "about nine points below CNN-rand"

# %% guard: pooling
# What the text below says of these numbers: if a change of the numbers breaks one, the
# build fails here, and the text must be rewritten.
assert abs(pooling_acc["max"] - pooling_acc["mean"]) < 0.02, pooling_acc

# %% guard: kmax
# What the text says of these numbers (see the first check).
where = scores3[0, best].topk(2).indices.sort().values
assert torch.equal(two_max, scores3[0, best, where])
assert float(two_max.max()) == float(scores3[0, best].max()) and two_max[0] < two_max[1]

# %% guard: ablation
# What the text says of these numbers (see the first check).
assert ab["setup"]["seeds"] == 3 and all(0.75 < a < 0.80 for a in ab["kim"]["accuracy"])
for key in changes:
    lo, hi = ab[key]["diff_ci95"]
    assert lo < 0 < hi and abs(ab[key]["diff_mean"]) < 0.02 and hi - lo > 0.02

# %% guard: ngrams
# What the text below says of the table (see the check after the pooling).
table = {f: [" ".join(tokens[train_idx[b]][s:e]) for _, b, s, e in found[f]]
         for f in chosen}
rotten_side = " | ".join(g for f in chosen[3:] for g in table[f])
fresh_side = " | ".join(g for f in chosen[:3] for g in table[f])
assert "bore" in rotten_side and "unfunny" in rotten_side, rotten_side
assert "gem" in fresh_side and "in years" in fresh_side, fresh_side
# "your faults and" and "your skin and" are windows of one fresh filter, not the "in years" one.
assert skin_filter != years_filter and skin_filter in chosen[:3]
assert {"your faults and", "your skin and"} <= set(table[skin_filter]), table[skin_filter]

# %% guard: recall
# What the text below says of these numbers (see the check after the pooling).
assert abs(acc_now - live["acc"]) < 1e-6  # the same model, the same snippets
assert recall["fresh"] > recall["rotten"] + 0.1, recall
assert 0.5685 <= train_fresh < 0.5695, train_fresh  # "56.9% of the training split"

# %% guard: negation
# What the text below says of these numbers (see the check after the pooling).
assert p_fresh["good ."] > 0.9, p_fresh
assert p_fresh["not good ."] < p_fresh["good ."] - 0.3, p_fresh
assert 0.4 < p_fresh["not good ."] < 0.6, p_fresh  # "to about one half"
assert p_fresh["it is not bad at all ."] < 0.1 and p_fresh["not a good film ."] > 0.5
assert p_fresh["the acting is good , not bad ."] < 0.5
# "the window that pushes it hardest towards fresh is 'a good film' ... even 'not a good film'"
top, top_push = pushes["not a good film ."][0]
assert top == "a good film" and top_push > 0, pushes["not a good film ."]
assert dict(pushes["not a good film ."]).get("not a good film", -1) > 0

# %% guard: benchmark
# What the text below says of these numbers (see the check after the pooling).
split_gap = systems[best_bow]["accuracy"] - systems[best_cnn]["accuracy"]
assert not list(targets.values())[0] and list(targets.values())[1]
assert 0.01 < split_gap < 0.02 and -0.01 < gaps.mean() < 0 < 0.01 < gaps.std(ddof=1)
assert 2 <= (gaps > 0).sum() <= 4
assert slowest < 60  # "every CNN trains in under a minute on one thread"

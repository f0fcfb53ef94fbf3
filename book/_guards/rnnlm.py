"""The checks of the numbers book/rnnlm.md states: see scripts/chapter_guards.py.

Each section runs, when the book is built, after the chapter's cell tagged guard-<name>,
in the chapter's kernel; a failing check fails the build, and the text must be rewritten.
"""

# %% guard: add-one
assert 0.015 < kept_at_most < 0.02, kept_at_most  # 'under 2%'
# What the text below says of these numbers: if a change of the numbers breaks one, the
# build fails here, and the text must be rewritten.
assert add_one[3] > add_one[2] > unigram_ppl, (add_one, unigram_ppl)

# %% guard: kn-by-hand
# The worked example's fractions, against the library's KneserNey.
assert len(toy_itos) == 12 and len(toy_bigrams) == 19
assert {x for x, y in toy_bigrams if y == "fog"} == {"like", "saw", "thick"}
assert {x for x, y in toy_bigrams if y == "francisco"} == {"san"}
assert toy_stream.count("fog") == toy_stream.count("francisco") == 3
for (h, w), p in kn_by_hand.items():
    assert abs(toy_kn.prob([toy_stoi[h]], toy_stoi[w]) - p) < 1e-12, (h, w)
assert abs(kn_by_hand[("like", "fog")] - 0.243) < 5e-4

# %% guard: kneser-ney
# What the text below says of these numbers (see the check after add-one).
assert kn_ppl[2] > kn_ppl[3] > kn_ppl[5] and kn_ppl[3] - kn_ppl[5] < 0.05 * kn_ppl[3]
assert kn_ppl[5] < 0.4 * unigram_ppl

# %% guard: spectral
# The non-normal example: norm about 4, spectral radius 0.5, powers vanish.
assert 4.0 < norm_A < 4.1 and abs(rho_A - 0.5) < 1e-12
assert power_norm[1] > 1 and power_norm[19] < 1e-3 and power_norm[29] < 1e-6
assert 1e11 < norm_A ** 20 < 1e13 and 1e-4 < power_norm[19] < 2e-4
assert 0.59 < power_norm[29] ** (1 / 30) < 0.61

# %% guard: jacobian
# What the text below says of these numbers (see the check after add-one).
assert jac[0.5][49] < 1e-10 and jac[1.0][49] < 1e-2 and jac[3.0][99] > 1e4
assert jac[2.0][99] > 10 * jac[2.0][0] and jac[1.5][99] < jac[1.5][0]
assert jac[1.0][49] < 1e-7
elman_g, lstm0_g = grad_norm["tanh RNN, untrained"], grad_norm["LSTM, untrained"]
lstm_g = grad_norm["LSTM, trained"]
assert 5e-5 < elman_g[19] / elman_g[0] < 2e-4 and elman_g[49] / elman_g[0] < 1e-10
assert size == {"embed_dim": 512, "hidden_dim": 512, "layers": 2}  # as the text says
assert elman_g[99] == 0 < elman_g[80]  # float32 underflow
assert lstm0_g[19] / lstm0_g[0] > 100 * elman_g[19] / elman_g[0]
assert 0.004 < lstm_g[49] / lstm_g[0] < 0.007
assert 0.0015 < lstm_g[99] / lstm_g[0] < 0.0025
assert 0.045 < lstm_g[9] / lstm_g[0] < 0.06              # the fast drop at first

# %% guard: clipping
# What the text below says of these numbers (see the check after add-one).
assert total > 4 and abs(by_norm.norm() - 0.25) < 1e-4
assert F.cosine_similarity(before, by_norm, dim=0) > 0.9999
assert F.cosine_similarity(before, by_value, dim=0) < 0.99

# %% guard: state
# What the text below says of these numbers (see the check after add-one).
p_carried, p_reset = ppl["LSTM, state carried"], ppl["LSTM, state reset every 35 words"]
assert 1.045 < p_reset / p_carried < 1.055 and 1.355 < early / p_carried < 1.365
assert p_carried < ppl["5-gram Kneser-Ney"]

# %% guard: seen-words
# What the text below says of these numbers (see the check after add-one).
gain_seen = perplexity_of(kn5_lp[seen]) / perplexity_of(carried[seen])
gain_new = perplexity_of(kn5_lp[~seen]) / perplexity_of(carried[~seen])
assert 0.85 < gain_seen < 0.95 and 1.85 < gain_new < 1.95, (gain_seen, gain_new)
assert 0.6 < (~seen).float().mean() < 0.65
assert round(n_params / 1e6, 1) == 9.4                   # the LSTM's weights

# %% guard: softmax
# What the text says of these numbers (see the check after add-one).
sm_ppl = {key: r["test_ppl"] for key, r in sm_lm.items()}
sm_speedup = {key: r["train_tokens_per_cpu_s"] / full_tps for key, r in sm_lm.items()}
layer_speedup = {key: r["train_speedup"] for key, r in sm_layer.items()}
assert 4.5 < 256 * V / (4 * 256 * 512) < 5.5 and 2.5e6 < 256 * V < 2.7e6
assert abs(every_word - full_ce) < 1e-4
sm_spread = {key: runs.std().item() for key, runs in sampled_ce.items()}
assert full_ce - sampled_ce["uniform", 8].mean() > 1.0
assert 0.25 < sm_spread["uniform", 512] < 0.45
for k in (8, 64, 512):
    assert abs(sampled_ce["unigram^0.75", k].mean() - full_ce) < 0.1
    assert 4 < sm_spread["uniform", k] / sm_spread["unigram^0.75", k] < 17
assert 195 < class_rows[1.0] < 205 and 115 < class_rows[0.5] < 135
assert 70 < V / class_rows[0.5] < 90
sizes_1 = torch.bincount(frequency_classes(train_counts, 100, power=1.0))
assert sizes_1[:4].tolist() == [1, 1, 1, 1] and sizes_pw[0] > 1    # pw = 0.5, the last
assert sizes_pw.max() < sizes_1.max() / 5
assert 0.75 < softmax_share < 0.95
assert 17 < layer_speedup["class"] < 30
assert 10 < layer_speedup["sampled_512"] < 22 and 30 < layer_speedup["sampled_64"] < 45
assert all(4 < sm_speedup[key] < 6.5 for key in ("class", "sampled_64", "sampled_512"))
assert 0.85 < sm_ppl["class"] / sm_ppl["full"] < 0.93
sm_std = {key: r["test_ppl_std"] for key, r in sm_lm.items()}
assert sm_ppl["full"] - sm_ppl["class"] > 5 * (sm_std["full"] + sm_std["class"])
assert max(r["test_ppl"] for r in sm_lm["class"]["runs"]) < min(
    r["test_ppl"] for r in sm_lm["full"]["runs"])                # on each seed
assert 1.2 < sm_ppl["sampled_512"] / sm_ppl["full"] < 1.4
assert 2.0 < sm_ppl["sampled_64"] / sm_ppl["full"] < 3.0
eval_us = {key: r["log_prob_us_per_token"] for key, r in sm_layer.items()}
assert eval_us["class"] > eval_us["full"]
assert sm_setup["windows"] == 300 and sm_setup["vocab_size"] == V
assert sm_setup["threads"] == 1 and sm_setup["seeds"] == 3

# %% guard: temperature
assert 165 <= repeat_ratio <= 175, repeat_ratio  # 'about 170 times'
# What the text below says of these numbers (see the check after add-one).
assert repeated_trigrams(long[0.3]) > 3 * repeated_trigrams(long[1.0])

# %% guard: characters
assert char_ckpt.extra["itos"] == chars.itos
assert 5 < per_word < 6.5
# What the text below says of these numbers (see the check after add-one).
assert real_words[0.5] > 0.6 and 0.35 < real_words[1.0] < real_words[0.5], real_words
assert any(re.search(r"\b[A-Z]{3,}[A-Z ]*\. [A-Z]", t) for t in char_samples.values())

# %% guard: benchmark
# What the text below says of these numbers (see the check after add-one).
ppl_of = {k: systems[k]["test_ppl"] for k in names}
mix_of = {k: systems[k]["mix_kn5_test_ppl"] for k in neural}
runs_of = {k: [r["test_ppl"] for r in systems[k]["runs"]] for k in neural}
pair, t = bench["pairs"], bench["targets"]
assert setup["seeds"] == 3 and setup["threads_per_run"] == 1
assert setup["cpu_minutes_per_run"] == 10 and setup["long_cpu_minutes"] == 20
assert {systems[k]["cpu_budget_s"] for k in neural} == {600}
assert all(systems[k]["seeds"] == 3 for k in (*neural, "lstm_long"))
assert abs(ppl_of["kn5"] - kn_ppl[5]) < 0.1 and ppl_of["kn3"] > ppl_of["kn5"]
assert ppl_of["unigram"] == max(ppl_of.values())
assert pair["lstm - kn5"]["tie"] and pair["gru - lstm"]["tie"]     # the LSTM's ties
assert 1.025 < ppl_of["lstm"] / ppl_of["kn5"] < 1.035
assert sum(x < ppl_of["kn5"] for x in runs_of["lstm"]) == 2
assert [round(min(runs_of["elman"])), round(max(runs_of["elman"]))] == [196, 267]
assert pair["elman - gru"]["tie"] and pair["ffnn - elman"]["tie"]
assert max(runs_of["gru"]) < min(runs_of["elman"])
assert not pair["ffnn - gru"]["tie"] and not pair["ffnn - lstm"]["tie"]
for r in systems["ffnn"]["runs"]:                                  # overfits in epoch 2
    assert r["best_epoch"] == 0 and r["mix_kn5"]["weight"] == 0.25
    assert r["valid_ppl_per_epoch"][1] > r["valid_ppl_per_epoch"][0]
assert 1.6 < ppl_of["ffnn"] / ppl_of["kn5"] < 1.65
assert 0.945 < mix_of["ffnn"] / ppl_of["kn5"] < 0.955
assert max(mix_of.values()) < ppl_of["kn5"]                        # every mixture helps
assert all(mix_of[k] < ppl_of[k] for k in neural)
assert all(r["valid_ppl_per_epoch"][1] - r["valid_ppl_per_epoch"][2] > 10
           for k in ("lstm", "gru") for r in systems[k]["runs"])
assert 0.835 < mix_of["lstm"] / ppl_of["kn5"] < 0.845
assert not t["lstm_over_kn5"]["met"] and t["lstm_checkpoint_over_kn5"]["met"]
assert 0.69 < t["lstm_checkpoint_over_kn5"]["ratio"] < 0.698
ckpt_run = systems["lstm_checkpoint"]
first, second = ckpt_run["stages"]                     # Adam, then averaged SGD
assert ckpt_run["config"]["hidden_dim"] == 512 and ckpt_run["config"]["dropout"] == 0.5
assert ckpt_run["config"]["word_classes"] == 100 and first["epochs"] == 19
assert round(first["test_ppl"], 1) == 130.8 and 89 < first["cpu_s"] / 60 < 92
assert 0.725 < first["test_ppl"] / ppl_of["kn5"] < 0.735
def halvings(curve: list[float]) -> int:   # fit_lm halves the rate after each epoch
    return sum(p >= min(curve[:i]) for i, p in enumerate(curve) if i)  # of no record
first_curve = word_ckpt.extra["init"]["history"]["valid_ppl"]
last_six = first_curve[-6:]
assert max(last_six) - min(last_six) < 1 and last_six[-1] == min(last_six)   # flat
assert halvings(first_curve) == 5
assert second["epochs"] == 8 and second["lr"] == 10 and second["weight_drop"] == 0.5
assert second["optimizer"] == "sgd" and second["average"]
assert 41 < second["cpu_s"] / 60 < 45
assert [round(x["valid_ppl"], 1) for x in (first, second)] == [138.4, 131.7]
assert round(ckpt_run["test_ppl"], 1) == 124.3
sgd_curve = word_ckpt.extra["history"]["valid_ppl"]           # the averaged weights'
assert all(b < a for a, b in zip(sgd_curve, sgd_curve[1:]))        # still falling ...
assert 0.2 < sgd_curve[-2] - sgd_curve[-1] < 0.3                    # ... slowly
assert 0.96 < t["lstm_long_over_kn5"]["ratio"] < 0.97
assert not t["lstm_long_over_kn5"]["met"]
assert pair["lstm_long - kn5"]["tie"] and systems["lstm_long"]["cpu_budget_s"] == 1200
assert 4.25 < systems["lstm_long"]["epochs"] < 4.35
lstm_cls = systems["lstm_class"]                                   # the class softmax
lstm_cls_runs = [r["test_ppl"] for r in lstm_cls["runs"]]
assert lstm_cls["cpu_budget_s"] == 1200 and lstm_cls["seeds"] == 3
assert setup["jobs"] == 3                                   # three runs on two cores
assert 13.95 < lstm_cls["epochs"] < 14.05
assert 3.0 < lstm_cls["epochs"] / systems["lstm_long"]["epochs"] < 3.4
assert 0.785 < t["lstm_class_over_kn5"]["ratio"] < 0.795
assert t["lstm_class_over_kn5"]["met"]
gap = pair["lstm_class - kn5"]
assert 37 < -gap["diff"] < 38
assert [round(-x, 1) for x in gap["diff_ci95"]][::-1] == [35.4, 39.6]
assert [round(min(lstm_cls_runs), 1), round(max(lstm_cls_runs), 1)] == [141.2, 142.6]
long_runs = [r["test_ppl"] for r in systems["lstm_long"]["runs"]]
assert 18.5 < max(long_runs) - min(long_runs) < 19.5
assert max(lstm_cls_runs) < min(long_runs)
gap = pair["lstm_long - lstm_class"]
assert not gap["tie"] and 31 < gap["diff"] < 31.5
assert [round(x, 1) for x in gap["diff_ci95"]] == [5.9, 56.7]
for r in lstm_cls["runs"]:               # slowing down, the last epoch still the best
    assert max(r["valid_ppl_per_epoch"][-4:]) - min(r["valid_ppl_per_epoch"][-4:]) < 1.5
    assert r["best_epoch"] == len(r["valid_ppl_per_epoch"]) - 1
    assert halvings(r["valid_ppl_per_epoch"]) == 1
assert 0.705 < lstm_cls["mix_kn5_test_ppl"] / ppl_of["kn5"] < 0.715
assert 2.95 < systems["lstm"]["epochs"] < 3.05
assert 1.4 < speed["gru_speedup"] < 1.55 and 1.7 < speed["lstm_speedup"] < 1.85
assert speed["loop_lstm"] == "CoupledPeepholeLSTM"
assert systems["lstm_checkpoint"]["trained_by"] == "scripts/train_rnnlm.py"

# %% guard: perplexity
# Moved from the chapter's cell.
assert perplexity_of(certain) == 1 and perplexity_of(one_zero) == math.inf
assert abs(perplexity_of(uniform) - V) < 1e-6

# %% guard: unk
# Moved from the chapter's cell.
assert seen_left_out == [1] and rank == 2

# %% guard: continuation
# Moved from the chapter's cell.
assert left_neighbours[corpus.stoi["bourgh"]] == 1
assert (counts["bourgh"], counts["amiable"]) == (39, 108)
assert left_neighbours[corpus.stoi["amiable"]] == 46

# %% guard: nltk
# Moved from the chapter's cell.
assert np.allclose(p_ours, p_nltk, rtol=1e-9, atol=0)

# %% guard: jacobian-formula
# Moved from the chapter's cell.
assert torch.allclose(J, J_autograd, atol=1e-12)

# %% guard: checkpoint
# Moved from the chapter's cell.
assert word_ckpt.extra["itos"] == corpus.itos              # the protocol's vocabulary

# %% guard: gru-conventions
# Moved from the chapter's cell.
assert conventions["reset after = nn.GRUCell"]
assert conventions["z on the candidate, negated = nn.GRUCell"]
assert conventions["reset before: largest difference"] > 0.01

# %% guard: gru-loop
# Moved from the chapter's cell.
assert diff_gru < 1e-6

# %% guard: forget-gates
# Moved from the chapter's cell.
assert 0.17 < f1.median() < 0.22 < 0.25 < f2.median() < 0.3
assert 0.365 < low[0] < 0.375 and 0.305 < low[1] < 0.315
assert 0.055 < high[0] < 0.065 and 0.115 < high[1] < 0.125

# %% guard: tying
# Moved from the chapter's cell.
assert torch.equal(word_lm.embed.weight, output_rows)    # one table, input and output
assert not any(k.startswith("embed") for k in word_lm.state_dict())   # stored once
assert min(sgd_losses) > adam_end + 0.1                    # what the text below says

# %% guard: class-head
# Moved from the chapter's cell.
assert torch.allclose(by_hand, head12.log_prob(h12))           # the library's, the same

# %% guard: bengio
# Bengio et al. (2003), table 1: 19% (mixture) and 14% (network alone) below the best n-gram.
assert round(100 * (1 - bengio["network + trigram"] / bengio["best n-gram"])) == 19
assert round(100 * (1 - bengio["network alone"] / bengio["best n-gram"])) == 14

"""The checks of the numbers book/seq2seq.md states: see scripts/chapter_guards.py.

Each section runs, when the book is built, after the chapter's cell tagged guard-<name>,
in the chapter's kernel; a failing check fails the build, and the text must be rewritten.
"""

# %% guard: tagger
# What the text below says of these numbers: if a change of the numbers breaks one, the
# build fails here, and the text must be rewritten.
assert abs(base_acc - tagger["baseline_accuracy"]) < 1e-4  # the benchmark's baseline
assert tagger["margin"] > 0.04 and 0.88 < base_acc < 0.92
pt = tagger["per_tag"]
gains = {t: r["accuracy"] - r["baseline"] for t, r in pt.items()}
assert min(gains["vbn"], gains["vbd"], gains["vb"]) > 0.15 and gains["np"] > 0.2
assert set(sorted(gains, key=gains.get)[-4:]) == {"vb", "vbd", "vbn", "np"}
assert 0.065 < tagger["margin"] < 0.075
np_words = [w.lower() for sent in tagging.test for w, t in sent if t == "np"]
np_unseen = sum(w not in baseline.best for w in np_words) / len(np_words)
np_common = sum(tagging.tags[baseline.best.get(w, 0)] != "np" for w in np_words
                if w in baseline.best) / len(np_words)
assert 0.61 < pt["np"]["baseline"] < 0.63 and 0.89 < pt["np"]["accuracy"] < 0.91
assert 0.27 < np_unseen < 0.29 and 0.095 < np_common < 0.105
assert tagging.tags[baseline.unknown] == "nn"
assert common == {"bill": "nn", "may": "md", "sterling": "jj"}

# %% guard: load
assert all(itos == split.tgt_vocab.itos for itos in trained_itos.values())  # this split

# %% guard: exposure
# What the text says: reading its own output makes the reference much less probable.
assert len(kept) > 40 and free > forced + 1.0
assert abs(forced - 2.18) < 0.005 and abs(free - 5.47) < 0.005
assert 26.5 < math.exp(free - forced) < 27.5

# %% guard: attention-example
assert scores_dot.tolist() == [2.0, 1.0, 3.0] and scores_general.tolist() == [2.0, -1.0, 1.0]
assert torch.allclose(alpha_dot, torch.tensor([0.245, 0.090, 0.665]), atol=5e-4)
assert torch.allclose(context_dot, torch.tensor([0.910, 0.755]), atol=5e-4)
assert alpha_general.argmax() == 0

# %% guard: bottleneck
# What the text below says of these numbers (see the check after the tagger).
def interval(r):
    return np.percentile(r, 2.5), np.percentile(r, 97.5)

assert [len(g) for g in groups] == [24, 120, 270, 393]
fall = {}
for name in greedy:
    b, r = by_length[name], boot[name]
    assert interval(r[-1])[1] < interval(r[1])[0]  # 17-20 below 9-12, beyond the noise
    assert interval(r[0])[1] - interval(r[0])[0] > 10  # the shortest: too few verses
    fall[name] = 1 - b[-1] / b[1]
assert 0.58 < fall["no attention"] < 0.64 and 0.49 < fall["attention"] < 0.55
for name, (mid, longest) in (("no attention", (13.9, 5.4)),
                              ("attention", (25.9, 12.5))):
    assert abs(by_length[name][1] - mid) < 0.05
    assert abs(by_length[name][-1] - longest) < 0.05
assert 5.5 < interval(gap)[0] and interval(gap)[1] < 9 and interval(gap)[0] > 0
for name, hyps in greedy.items():  # the counts give sacreBLEU's corpus score
    assert abs(bleu_of(counts[name]) - mt_scores(hyps, refs).bleu) < 1e-9

# %% guard: remedies
# What the text below says of these numbers (see the check after the tagger).
mean_gain = abl["pairs"]["rnn_mean - rnn"]
deep_gain = abl["pairs"]["attention_2layers - attention"]
assert abl["setup"]["seeds"] == 3 and abl["setup"]["cpu_minutes_per_run"] == 4
assert mean_gain["diff_ci95"][0] < 0 < mean_gain["diff_ci95"][1]  # a tie
assert 0.1 < mean_gain["diff_mean"] < 0.4 and all(d > 0 for d in mean_gain["diff"])
loss_gain = [a - b for a, b in zip(abl["rnn"]["best_valid_loss"],
                                   abl["rnn_mean"]["best_valid_loss"])]
assert all(0.05 < g < 0.09 for g in loss_gain)  # lower validation loss on every seed
assert all(a > b for a, b in zip(abl["rnn_mean"]["chrf"], abl["rnn"]["chrf"]))
assert deep_gain["diff_ci95"][1] < -5 and -7.5 < deep_gain["diff_mean"] < -6.5
assert all(e < 8.1 for e in abl["attention_2layers"]["epochs"])
assert all(e > 10.4 for e in abl["attention"]["epochs"])
assert min(abl["attention_2layers"]["best_valid_loss"]) > 3.6 > 3.05 > max(
    abl["attention"]["best_valid_loss"])
assert max(abl["attention_2layers"]["bleu"]) < 4 and min(abl["attention"]["bleu"]) > 9
assert abs(att_hist["valid_loss"][7] - 3.00) < 0.01  # the 1-layer model after 8 epochs
assert min(abl["attention_2layers"]["best_valid_loss"]) > att_hist["valid_loss"][7] + 0.5
assert 2.95 < min(abl["attention"]["best_valid_loss"])
assert max(abl["attention"]["best_valid_loss"]) < 3.05
assert 3.59 < min(abl["attention_2layers"]["best_valid_loss"])
assert max(abl["attention_2layers"]["best_valid_loss"]) < 3.89

# %% guard: checkpoints
assert att.config.attention == "general" and rnn.config.attention == "none"

# %% guard: attention-profile
# What the text below says of these numbers (see the check after the tagger).
mid = {k: v[:, 2] / v.mean(1) for k, v in profile.items()}
gap = (mid["attention"] - mid["no attention"])[boot].mean(1)
assert len(verses) > 300 and np.percentile(gap, 2.5) > 0
assert abs(mid["attention"].mean() - 0.95) < 0.005
assert abs(mid["no attention"].mean() - 0.80) < 0.005
assert profile["no attention"].mean(0).argmin() == 2
assert profile["no attention"].mean(0)[0] == profile["no attention"].mean(0).max()

# %% guard: bleu-example
assert matched.tolist() == [10, 6, 3, 2] and total.tolist() == [12, 10, 8, 6]
assert abs(bp - math.exp(-1 / 12)) < 1e-12 and abs(corpus_by_hand - 46.0) < 0.05
assert abs(corpus_by_hand - corpus_tool) < 1e-6

# %% guard: signatures
assert all("case:lc" in bench["setup"][f"{m}_signature"] for m in ("bleu", "chrf"))

# %% guard: length-penalty
# What the text below says of these numbers (see the check after the tagger).
assert words[0.0] < words["greedy"] and words[0.0] < words[alpha]
assert abs(words["greedy"] / ref_words - 1.205) < 0.0005
assert abs(words[alpha] / ref_words - 1.121) < 0.0005 and alpha == 0.5
assert [round(100 * repeating[k]) for k in ("greedy", "beam", "reference")] == [68, 62, 14]

# %% guard: beam-example
assert table_greedy()[0] == ("el", "rey", ".") and abs(table_greedy()[1] - math.log(0.1)) < 1e-9
assert best_beam[0][0] == ("la", "tierra", ".") and abs(best_beam[0][1] - math.log(0.216)) < 1e-9
assert [keep for _, keep in history][:2] == [{("el",), ("la",)}, {("la", "tierra"), ("el", "rey")}]

# %% guard: beam-width
one_raw = [split.decode(ids) for ids in beam_decode(att, sample, limit, 1, 0.0).ids]
raw_differ = [o for o, g in zip(one_raw, by_greedy) if o != g]
assert len(raw_differ) == 19 and sum(not o for o in raw_differ) == 15
assert all(len(o.split()) <= 3 for o in raw_differ)  # words
assert differ == []  # alpha 0.5: the same as greedy on these verses

# %% guard: benchmark
# What the text below says of these numbers (see the check after the tagger).
t = bench["targets"]
assert all(v["met"] for v in t.values())
for key, hyps in (("attention_greedy", greedy["attention"]),
                  ("rnn_greedy", greedy["no attention"]),
                  ("attention_beam", beam[alpha])):
    assert abs(sysb[key]["bleu"] - mt_scores(hyps, refs).bleu) < 0.01  # the same models
for m, (lo, hi) in (("greedy", (6.5, 8)), ("beam", (8, 9.5))):
    att_r, rnn_r = sysb[f"attention_{m}"], sysb[f"rnn_{m}"]
    assert lo < att_r["bleu"] - rnn_r["bleu"] < hi
    assert att_r["bleu"] > 1.8 * rnn_r["bleu"]
    assert att_r["chrf"] - rnn_r["chrf"] > 9
va = {m: sysb[f"{m}_beam"]["valid_bleu_by_alpha"] for m in ("rnn", "attention")}
assert va["rnn"]["0.0"] < 2 < 7 < va["rnn"]["0.5"]
assert va["attention"]["0.0"] < va["attention"]["0.5"]
assert all(sysb[f"{m}_beam"]["alpha"] == 0.5 for m in ("rnn", "attention"))
assert all(20 < sysb[f"{m}_greedy"]["epochs"] < 26 for m in ("rnn", "attention"))
valid_att, valid_rnn = att_hist["valid_loss"], rnn_hist["valid_loss"]
assert min(valid_att[:12]) - min(valid_att) < 0.05  # no gain after a dozen epochs
# fit_seq2seq halves the rate after every epoch that did not lower the validation loss
halvings = {m: sum(v >= min(h[:i]) for i, v in enumerate(h) if i)
            for m, h in (("rnn", valid_rnn), ("attention", valid_att))}
assert halvings == {"rnn": 16, "attention": 6}
assert valid_rnn.index(min(valid_rnn)) == 8  # epoch 9
assert all(abs(x - 1.76) < 0.01 for x in rnn_hist["train_loss"][13:])
assert abs(valid_greedy["rnn"] - 6.3) < 0.05
assert abs(valid_greedy["attention"] - 12.7) < 0.05
assert abs(va["rnn"]["0.0"] - 1.7) < 0.05 and abs(va["attention"]["0.0"] - 13.8) < 0.05
assert abs(va["attention"]["0.5"] - 15.0) < 0.05
assert 0.07 < unk_share < 0.1 and len(split.train) == 6465

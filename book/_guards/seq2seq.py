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

# %% guard: split
# What the text says: no test source is in training, and some recurred across books.
from nlpcourse.data.translation import source_key, verse_pairs  # noqa: E402 - in the kernel

spake = source_key("And the LORD spake unto Moses, saying,")
train_keys = [source_key(p.src) for p in split.train]
assert train_keys.count(spake) == 45
assert sum(source_key(p.src) == spake for p in verse_pairs()) == 71
assert not {source_key(p.src) for p in split.valid + split.test} & set(train_keys)
assert split.dropped["test"] > 0 and split.dropped["valid"] > 0

# %% guard: load
assert all(itos == split.tgt_vocab.itos for itos in trained_itos.values())  # this split

# %% guard: exposure
# What the text says: reading its own output makes the reference much less probable.
assert len(kept) > 40 and free > forced + 1.0
assert abs(forced - 2.59) < 0.005 and abs(free - 6.36) < 0.005
assert 42.5 < math.exp(free - forced) < 44.5

# %% guard: attention-example
assert scores_dot.tolist() == [2.0, 1.0, 3.0] and scores_general.tolist() == [2.0, -1.0, 1.0]
assert torch.allclose(alpha_dot, torch.tensor([0.245, 0.090, 0.665]), atol=5e-4)
assert torch.allclose(context_dot, torch.tensor([0.910, 0.755]), atol=5e-4)
assert alpha_general.argmax() == 0

# %% guard: bottleneck
# What the text below says of these numbers (see the check after the tagger).
def interval(r):
    return np.percentile(r, 2.5), np.percentile(r, 97.5)

assert [len(g) for g in groups] == [22, 96, 257, 382]
assert interval(boot["no attention"][0])[1] - interval(boot["no attention"][0])[0] > 10
# without attention: flat from 9-12 to 17-20, about 5 BLEU
flat, att_b = boot["no attention"], boot["attention"]
assert interval(flat[1])[0] < by_length["no attention"][-1] < interval(flat[1])[1]
assert all(4.5 < b < 7 for b in by_length["no attention"][1:])
assert abs(by_length["no attention"][1] - 5.2) < 0.05
assert abs(by_length["no attention"][-1] - 5.0) < 0.05
# with attention: falls, intervals apart; ahead everywhere but at 1-8 clearly
assert interval(att_b[-1])[1] < interval(att_b[1])[0]
assert abs(by_length["attention"][1] - 17.4) < 0.05
assert abs(by_length["attention"][-1] - 11.9) < 0.05
lead = [a - b for a, b in zip(by_length["attention"], by_length["no attention"])]
assert max(lead) == lead[1] and 11.5 < lead[1] < 12.5  # "12 points at 9-12"
assert interval(gap)[0] > 5 and abs(lead[-1] - 6.9) < 0.05  # "about 7", above zero
assert [round(x, 1) for x in interval(gap)] == [5.9, 8.1]  # the dropdown's interval
for name, hyps in greedy.items():  # the counts give sacreBLEU's corpus score
    assert abs(bleu_of(counts[name]) - mt_scores(hyps, refs).bleu) < 1e-9

# %% guard: remedies
# What the text below says of these numbers (see the check after the tagger).
mean_gain = abl["pairs"]["rnn_mean - rnn"]
deep_gain = abl["pairs"]["attention_2layers - attention"]
assert abl["setup"]["seeds"] == 3 and abl["setup"]["cpu_minutes_per_run"] == 4
assert mean_gain["diff_ci95"][0] < 0 < mean_gain["diff_ci95"][1]  # a tie
assert abs(mean_gain["diff_mean"] - 0.16) < 0.005 and all(d > 0 for d in mean_gain["diff"])
loss_gain = [a - b for a, b in zip(abl["rnn"]["best_valid_loss"],
                                   abl["rnn_mean"]["best_valid_loss"])]
assert all(0.035 < g < 0.085 for g in loss_gain)  # lower validation loss on every seed
assert deep_gain["diff_ci95"][1] < -2 and -6 < deep_gain["diff_mean"] < -5.5  # "about 6"
assert [round(x, 2) for x in deep_gain["diff_ci95"]] == [-9.29, -2.15]
deep, one = abl["attention_2layers"], abl["attention"]
assert 5.25 < min(deep["epochs"]) and max(deep["epochs"]) < 5.8
assert 7.65 < min(one["epochs"]) and max(one["epochs"]) < 7.9
assert abs(min(deep["best_valid_loss"]) - 3.89) < 0.005
assert abs(max(deep["best_valid_loss"]) - 4.45) < 0.005
assert abs(min(one["best_valid_loss"]) - 3.18) < 0.005
assert abs(max(one["best_valid_loss"]) - 3.21) < 0.005
assert abs(att_hist["valid_loss"][4] - 3.25) < 0.005  # the 1-layer model after 5 epochs
assert min(deep["best_valid_loss"]) > att_hist["valid_loss"][4] + 0.5
assert max(one["best_valid_loss"]) < min(deep["best_valid_loss"])

# %% guard: checkpoints
assert att.config.attention == "general" and rnn.config.attention == "none"

# %% guard: attention-profile
# What the text below says of these numbers (see the check after the tagger).
mid = {k: v[:, 2] / v.mean(1) for k, v in profile.items()}
gap = (mid["attention"] - mid["no attention"])[boot].mean(1)
assert len(verses) > 300 and np.percentile(gap, 2.5) > 0
assert abs(mid["attention"].mean() - 0.94) < 0.005
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
assert abs(words["greedy"] / ref_words - 1.213) < 0.0005
assert abs(words[alpha] / ref_words - 1.128) < 0.0005 and alpha == 0.5
assert [round(100 * repeating[k]) for k in ("greedy", "beam", "reference")] == [72, 65, 15]

# %% guard: beam-example
assert table_greedy()[0] == ("el", "rey", ".") and abs(table_greedy()[1] - math.log(0.1)) < 1e-9
assert best_beam[0][0] == ("la", "tierra", ".") and abs(best_beam[0][1] - math.log(0.216)) < 1e-9
assert [keep for _, keep in history][:2] == [{("el",), ("la",)}, {("la", "tierra"), ("el", "rey")}]

# %% guard: beam-width
one_raw = [split.decode(ids) for ids in beam_decode(att, sample, limit, 1, 0.0).ids]
raw_differ = [o for o, g in zip(one_raw, by_greedy) if o != g]
assert len(raw_differ) == 20 and sum(not o for o in raw_differ) == 16
assert all(1 <= len(o.split()) <= 3 for o in raw_differ if o)  # words
assert len(differ) == 1  # alpha 0.5: the same as greedy on 63 of these verses

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
assert va["rnn"]["0.0"] < 1 < 5 < va["rnn"]["0.5"]
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
assert 3.5 < valid_greedy["rnn"] < 4.5  # "4"
assert abs(valid_greedy["attention"] - 10.9) < 0.05
assert abs(va["rnn"]["0.0"] - 0.7) < 0.05 and abs(va["attention"]["0.0"] - 11.7) < 0.05
assert abs(va["attention"]["0.5"] - 13.1) < 0.05
gains = {m: sysb[f"{m}_beam"]["bleu"] - sysb[f"{m}_greedy"]["bleu"] for m in ("rnn", "attention")}
assert abs(gains["rnn"] - 0.8) < 0.05 and abs(gains["attention"] - 2.2) < 0.05
assert all(sysb[f"attention_{m}"]["bleu"] > 2 * sysb[f"rnn_{m}"]["bleu"] for m in ("greedy", "beam"))
chrf_gain = [sysb[f"attention_{m}"]["chrf"] - sysb[f"rnn_{m}"]["chrf"] for m in ("greedy", "beam")]
assert all(9.5 < g < 12.5 for g in chrf_gain)  # "10 to 12 points"
assert bench["setup"]["dropped_seen_in_training"] == split.dropped  # scored on this split
assert bench["setup"]["pairs"]["test"] == len(split.test)
assert 0.09 < unk_share < 0.1 and len(split.train) == 6465
assert split.dropped == {"valid": 30, "test": 50} and "rescored" in bench["setup"]

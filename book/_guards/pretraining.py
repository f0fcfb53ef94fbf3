"""The checks of the numbers book/pretraining.md states: see scripts/chapter_guards.py.

Each section runs, when the book is built, after the chapter's cell tagged guard-<name>,
in the chapter's kernel; a failing check fails the build, and the text must be rewritten.
"""

# %% guard: recipes
# What the text says of the three recipes on all the labels (and its dropdown).
ulmfit_tune = bench["setup"]["recipes"]["ulmfit"]["tune"]
assert ulmfit_tune["epochs"] == 3 and ulmfit_tune["unfreeze_every"] == 100
assert ulmfit_tune["decay"] == 2.6 and ulmfit_tune["lr"] == 1e-3
assert round(ulmfit_tune["lr"] / ulmfit_tune["decay"] ** 5, 6) == 8e-6
assert bench["setup"]["recipes"]["ulmfit"]["pooling"] == "mean"
assert 963 // ulmfit_tune["epochs"] == 321
assert len(bert.encoder.layers) + 2 == 6  # the groups: embeddings, layers, head
assert 963 / 2 < (6 - 1) * ulmfit_tune["unfreeze_every"] == 500 < 963
assert bert.pool.bias.abs().max() == 0 and abs(bert.pool.weight.std() - 0.02) < 0.001
assert len(parts[0]) == 10_255 and math.ceil(len(parts[0]) / 32) * 3 == 963
assert 150_000 < sum(len(reviews[i].text.split()) for i in parts[0]) < 250_000
nets = ("pretrained", "scratch")
assert all(recipes[f"pretrained/{k}"]["test"] > recipes[f"scratch/{k}"]["test"]
           for k in ("plain", "mean", "ulmfit"))
cost = [round(100 * (recipes[f"{n}/plain"]["test"] - recipes[f"{n}/ulmfit"]["test"]), 1)
        for n in nets]
assert cost == [10.8, 11.8]  # ULMFiT's devices cost, pretrained and from scratch
assert all(abs(recipes[f"{n}/mean"]["test"] - recipes[f"{n}/plain"]["test"]) < 0.01
           for n in nets)  # the mean changed nothing on average
assert recipes["pretrained/mean"]["test_std"] > 2 * recipes["pretrained/plain"]["test_std"]
assert sorted(round(x, 3) for x in recipes["pretrained/mean"]["tests"])[::2] == [0.754, 0.776]

# %% guard: systems
# What the text says of the systems on all the labels.
acc = {k: r["accuracy"] for k, r in systems.items()}
assert [round(acc[k], 3) for k in ("bert_pretrained", "bert_scratch")] == [0.767, 0.755]
assert round(acc["best_bow"], 3) == 0.785
assert 0 < bench["pretrained_minus_scratch"] < 0.02
assert acc["best_bow"] > max(acc[k] for k in
                             ("best_cnn", "bert_pretrained", "bert_scratch"))
assert {systems[k]["recipe"] for k in ("bert_pretrained", "bert_scratch")} == {"plain"}
cnns = ("cnn_rand", "cnn_nonstatic", "cnn_multichannel")
here = {k: bench["setup"]["baselines"][k] for k in cnns}
there = {k: cnn_chapter["systems"][k]["accuracy"] for k in cnns}
assert systems["best_cnn"]["system"] == "cnn_nonstatic"
assert round(acc["best_cnn"], 3) == 0.777
assert max(there, key=there.get) == "cnn_multichannel"
assert round(max(there.values()), 3) == 0.769
assert round(min(there.values()), 3) == 0.763
assert 0.013 < max(abs(here[k] - there[k]) for k in cnns) < 0.015
runs = [*here.values(), *there.values()]
assert min(runs) < acc["bert_pretrained"] < max(runs)
assert bench["setup"]["baselines"]["logreg"] == \
    cnn_chapter["systems"]["logreg"]["accuracy"]
assert 0.017 < acc["best_bow"] - acc["bert_pretrained"] < 0.019
assert round(systems["best_bow"]["wall_s"]) == 1  # trains in about a second
tests = recipes["pretrained/plain"]["tests"]
assert max(tests) - min(tests) < 0.003
assert round(systems["bert_pretrained"]["pretrain_s"] / 60) == 44

# %% guard: curve
# What the text and the figure's caption say of the curve.
assert list(by) == [100, 300, 1000, 3000, 10_255]
assert [c["all"] for c in curve] == [False] * 4 + [True]
assert len(parts[1]) == 1_298
assert bench["curve_setup"]["seeds"] == 5
assert all(len(c[k]) == 5 for c in curve for k in
           ("pretrained", "scratch", "bow", "gpt", "gpt_scratch", "cnn_rand",
            "cnn_vectors", "english", "english_tapt", "english_rand"))
assert round(majority, 3) == 0.614
networks = ("pretrained", "scratch", "gpt", "gpt_scratch", "cnn_rand", "cnn_vectors",
            "english", "english_tapt", "english_rand")
assert all(abs(mean(by[100][k]) - majority) < 0.01 for k in networks)
assert mean(by[100]["bow"]) < majority
assert [round(mean(by[300][k]), 3) for k in ("pretrained", "scratch")] == [0.624, 0.620]
assert all(mean(by[n]["bow"]) > max(mean(by[n][k]) for k in ("pretrained", "scratch"))
           for n in (1000, 3000, 10_255))  # the highest line from 1,000 labels on

# %% guard: gains
# What the text says of the one table, row by row.
import importlib.util  # noqa: E402 - in the chapter's kernel
import sys  # noqa: E402

t = {row: {k: [round(x, 1) for x in v] for k, v in cells.items()}
     for row, cells in table.items()}
bold = {row: [k for k, (d, lo, hi) in cells.items() if lo > 0 or hi < 0]
        for row, cells in table.items()}
bert_row, two_row, gpt_row, cnn_row, old_row, vocab_row = table
assert bold[bert_row] == [] and bold[two_row] == []
assert all(0 < t[bert_row][k][0] <= 0.5 for k in by)  # never more than half a point
assert bold[gpt_row] == [1000, 3000, 10_255]
assert t[gpt_row][1000] == [5.0, 2.8, 7.2]
assert [t[gpt_row][k][0] for k in (3000, 10_255)] == [2.6, 1.9]
assert all(g > r for k in (1000, 3000, 10_255)
           for g, r in zip(by[k]["gpt"], by[k]["gpt_scratch"]))  # on every subset
gpt_net = {k: paired(by[k]["gpt_scratch"], by[k]["scratch"]) for k in by}
assert all(d < 0 for d, _, _ in gpt_net.values())  # below the BERT from scratch
assert round(gpt_net[1000][0], 1) == -2.8
assert bold[cnn_row] == [3000] and t[cnn_row][3000][0] == 0.5
assert bold[old_row] == [300, 1000]
assert [t[old_row][k][0] for k in (300, 1000)] == [1.9, 1.8]
assert bold[vocab_row] == [1000] and t[vocab_row][1000][0] == 1.8
assert t[two_row][1000][0] == 0.1
assert t[vocab_row][300] == [1.0, -1.0, 3.0] and t[two_row][300] == [0.9, -2.4, 4.2]
order = bench["word_order"]  # benchmarks/pretraining.py --word-order: 5 seeds each
assert order["setup"]["train"] == 8000 and order["setup"]["stride"] == 1
assert round(mean(order["pretrained_auc"]), 2) == 0.75 and min(order["pretrained_auc"]) > 0.74
assert all(abs(a - 0.5) < 0.005 for a in order["scratch_auc"]) and order["diff_ci95"][0] > 0.2
auc_all = by[10_255]["auc"]
assert round(100 * auc_all["diff_mean"], 1) == 1.0 and auc_all["diff_ci95"][0] > 0
bert_run = bert_ck.extra["settings"]
assert gpt_ck.extra["train_config"]["epochs"] == 8
assert round(bert_run["steps"] * bert_run["batch"] / len(parts[0])) == 25
elmo_curve = benchmark_results("elmo_tagger")["curve"]
assert elmo_curve[0]["labels"] == 100 and round(100 * elmo_curve[0]["diff_mean"], 1) == 2.9
from nlpcourse.data.registry import repository_root  # noqa: E402  (guards run in a checkout)

spec = importlib.util.spec_from_file_location("pretrain_bert",
                                              repository_root() / "scripts" / "pretrain_bert.py")
pretrain_bert = importlib.util.module_from_spec(spec)
sys.modules["pretrain_bert"] = pretrain_bert
spec.loader.exec_module(pretrain_bert)
english_words = sum(len(s.split()) for c in pretrain_bert.english_texts() for s in c)
assert round(english_words / 1e6, 1) == 3.6

# %% guard: recipe-pairs
# What the text says of the paired runs on all the labels (and the dropdown above).
assert all(lo < 0 < hi for _, lo, hi in recipe_gain.values())
assert [round(100 * recipe_gain[k][0], 1) for k in ("plain", "mean", "ulmfit")] == \
    [1.1, 1.3, 2.2]
assert [round(100 * x, 1) for x in recipe_gain["plain"][1:]] == [-0.2, 2.5]
assert all(x > 0 for k in recipe_gain for x in
           (torch.tensor(recipes[f"pretrained/{k}"]["tests"])
            - torch.tensor(recipes[f"scratch/{k}"]["tests"])).tolist())

# %% guard: curve-detail
# What the Benchmark section says of the BERTs, the bag of words and the CNNs.
assert all(c["diff_ci95"][0] < 0 < c["diff_ci95"][1] for c in curve)
assert all(0 < c["diff_mean"] < 0.006 for c in curve)
assert all(abs(mean(by[n][k]) - majority) < 0.012 for n in (100, 300)
           for k in ("pretrained", "scratch"))
assert mean(by[100]["bow"]) < majority < mean(by[300]["bow"]) < majority + 0.01
assert all(mean(by[n]["bow"]) > mean(by[n]["pretrained"]) + 0.009
           for n in (1000, 3000, 10_255))
auc = {n: by[n]["auc"] for n in by}
assert all(0.035 < auc[n]["diff_mean"] < 0.045 and auc[n]["diff_ci95"][0] < 0
           for n in (100, 300))
assert [round(100 * x) for x in (auc[100]["diff_ci95"][0], auc[100]["diff_ci95"][1],
                                 auc[300]["diff_ci95"][0], auc[300]["diff_ci95"][1])] == \
    [-1, 9, -1, 10]
assert all(auc[n]["diff_ci95"][0] < 0 < auc[n]["diff_ci95"][1] for n in (1000, 3000))
assert all(round(100 * auc[n]["diff_mean"], 1) <= 0.5 for n in (1000, 3000))
assert [round(100 * x, 1) for x in (auc[10_255]["diff_mean"], *auc[10_255]["diff_ci95"])] \
    == [1.0, 0.2, 1.9]
cnn_gain = {n: by[n]["cnn"] for n in by}
assert all(abs(cnn_gain[n]["diff_mean"]) < 0.005 for n in (100, 300, 3000, 10_255))
assert all(cnn_gain[n]["diff_ci95"][0] < 0 < cnn_gain[n]["diff_ci95"][1]
           for n in (100, 300, 1000, 10_255))
g1000 = cnn_gain[1000]
assert [round(100 * x, 1) for x in (g1000["diff_mean"], *g1000["diff_ci95"])] == \
    [3.1, -1.8, 8.0]
g_all = cnn_gain[10_255]
assert [round(100 * x, 1) for x in (g_all["diff_mean"], *g_all["diff_ci95"])] == \
    [0.2, -0.8, 1.3]
lo, hi = cnn_gain[3000]["diff_ci95"]
assert 0 < lo < 0.0005 and 0.009 < hi < 0.01
left = [sum(x > majority + 0.01 for x in by[1000][k])
        for k in ("cnn_rand", "cnn_vectors")]
assert left == [2, 5]
assert all(max(by[n]["cnn_rand"] + by[n]["cnn_vectors"]) < majority + 0.025
           for n in (100, 300))
cnn_means = {n: [mean(by[n][k]) for k in ("cnn_rand", "cnn_vectors")] for n in by}
assert all(min(cnn_means[n]) > max(mean(by[n][k]) for k in ("pretrained", "scratch"))
           for n in (3000, 10_255))
assert round(100 * (mean(by[10_255]["bow"]) - max(cnn_means[10_255])), 1) == 1.3

# %% guard: gpt-bert
# What the Benchmark section says of the GPT against the BERTs.
vs = {n: [by[n][k] for k in ("gpt_vs_scratch", "gpt_vs_bert")] for n in by}
assert all(abs(mean(by[n]["gpt"]) - majority) < 0.02 for n in (100, 300))
assert all(d["diff_ci95"][0] < 0 < d["diff_ci95"][1] for n in (100, 300) for d in vs[n])
assert all(vs[n][0]["diff_ci95"][0] > 0 for n in (1000, 3000))      # above scratch
assert [round(100 * vs[n][0]["diff_mean"], 1) for n in (1000, 3000)] == [2.2, 1.7]
assert [round(100 * vs[n][1]["diff_mean"], 1) for n in (1000, 3000)] == [1.8, 1.5]
assert all(vs[n][1]["diff_ci95"][0] < 0 for n in (1000, 3000))  # a tie with BERT
everything = [(round(100 * d["diff_mean"], 1),
               *(round(100 * x, 1) for x in d["diff_ci95"])) for d in vs[10_255]]
assert everything == [(1.3, 0.0, 2.7), (0.8, 0.2, 1.4)]
assert vs[10_255][0]["diff_ci95"][0] > 0
assert all(mean(by[n]["gpt_auc"]) > mean(by[n][k]) + 0.01
           for n in (300, 1000, 3000, 10_255) for k in ("pretrained_auc", "scratch_auc"))


# %% guard: gpt-twin
# What the Benchmark section says of the GPT against its twin from random weights.
def trio(a, b):
    lo, hi = scipy.stats.ttest_rel(a, b).confidence_interval(0.95)
    return [round(100 * x, 1) for x in (mean(a) - mean(b), lo, hi)]


own = {n: trio(by[n]["gpt"], by[n]["gpt_scratch"]) for n in by}
own_auc = {n: trio(by[n]["gpt_auc"], by[n]["gpt_scratch_auc"]) for n in by}
twin_nets = {n: trio(by[n]["gpt_scratch"], by[n]["scratch"]) for n in by}
assert abs(mean(by[100]["gpt_scratch"]) - majority) < 0.02
assert own[1000] == [5.0, 2.8, 7.2]
assert [own[n][0] for n in (3000, 10_255)] == [2.6, 1.9]
assert all(own[n][1] > 0 for n in (1000, 3000, 10_255))
assert all(own[n][1] < 0 < own[n][2] for n in (100, 300)) and own[300][0] == 1.7
assert own_auc[300][1] > 0 and own_auc[300][0] == 6.7
assert all(twin_nets[n][0] < 0 for n in by)
assert all(twin_nets[n][2] < 0 for n in (300, 1000))
assert all(twin_nets[n][1] < 0 < twin_nets[n][2] for n in (100, 3000, 10_255))
assert twin_nets[1000] == [-2.8, -4.0, -1.5]
assert gpt_ck.extra["train_config"]["epochs"] == 8
assert round(bert_run["steps"] * bert_run["batch"] / len(parts[0])) == 25

# %% guard: stage-mask
# What the Benchmark section says of the two stages' masked LM and vocabulary.
(english_nll, n_stage), (tapt_nll, _) = (stage_mask[k] for k in ("english",
                                                                 "english_tapt"))
assert round(english_nll, 2) == 4.66 and round(tapt_nll, 2) == 3.74
n_snippet = int((valid_batch != 0).sum())
assert round(100 * (n_stage / n_snippet - 1), 1) == 7.5 and len(whole) == 8
assert not {"boring", "stupid", "awful"} & set(whole)
assert stage_wp.vocab_size == 4_000


# %% guard: stages
# What the Benchmark section says of the two stages against the network from scratch.
def rounded(d):
    lo, hi = d["diff_ci95"]
    return [round(100 * x, 1) for x in (d["diff_mean"], lo, hi)]


g = {n: {k: rounded(d) for k, d in row.items()} for n, row in stage_gain.items()}
assert g[300]["both - scratch"] == [1.9, 0.1, 3.7]
assert g[1000]["both - scratch"] == [1.8, 0.3, 3.4]
assert all(g[n]["both - scratch"][1] < 0 < g[n]["both - scratch"][2]
           for n in (100, 3000, 10_255))
assert g[10_255]["both - scratch"][0] == -0.3
assert [g[n]["English - scratch"][0] for n in (300, 1000)] == [1.5, 1.2]
assert all(row[k][1] < 0 < row[k][2] for row in g.values()
           for k in ("English - scratch", "both - English"))
assert [g[n]["both - English"][0] for n in (300, 1000)] == [0.4, 0.7]
assert g[10_255]["both - snippets"] == [-0.8, -1.5, -0.2]
assert g[300]["both - snippets"] == [1.5, 0.9, 2.1]
assert g[10_255]["English - scratch"][0] == -0.6
auc_both = {n: by[n]["english_tapt_auc_vs_scratch"] for n in by}
assert [round(100 * auc_both[n]["diff_mean"], 1) for n in (300, 1000)] == [6.4, 2.5]
assert all(auc_both[n]["diff_ci95"][0] > 0 for n in (300, 1000))
assert all(auc_both[n]["diff_ci95"][0] < 0 for n in (100, 3000, 10_255))
per_subset = [a - b for a, b in zip(by[300]["english_tapt"], by[300]["scratch"])]
assert all(d > 0 for d in per_subset)
assert sum(a > b for a, b in zip(by[1000]["english_tapt"], by[1000]["scratch"])) == 4

# %% guard: stage-pieces
# What the Benchmark section says of the two stages against their twin in their pieces.
same = {n: {k: rounded(by[n][f"{k}_vs_english_rand"])
            for k in ("english_tapt", "english", "english_tapt_auc")}
        for n in by}
pieces_only = {n: rounded(by[n]["english_rand_vs_scratch"]) for n in by}
assert all(same[n]["english_tapt"][1] < 0 < same[n]["english_tapt"][2] for n in by)
assert [same[n]["english_tapt"][0] for n in (300, 1000)] == [0.9, 0.1]
assert max(same[n]["english_tapt"][0] for n in by) == 0.9
assert pieces_only[1000] == [1.8, 0.6, 2.9]
assert pieces_only[300] == [1.0, -1.0, 3.0] and same[300]["english_tapt"] == [0.9, -2.4, 4.2]
assert same[3000]["english"] == [1.5, 0.2, 2.9]
assert all(same[n]["english"][1] < 0 < same[n]["english"][2]
           for n in (100, 300, 1000, 10_255))
assert all(same[n]["english_tapt_auc"][1] > 0 for n in (100, 1000, 3000, 10_255))
assert same[300]["english_tapt_auc"][1] < 0 and same[100]["english_tapt_auc"][0] == 8.8
assert all(abs(mean(by[100][k]) - majority) < 0.01 for k in ("english_tapt", "english_rand"))

# %% guard: gpt-probe
# What the Benchmark section and the story say of the probe put to the GPT.
assert all(mean(gpt_odds[k]) > 0 for k in gpt_odds)  # praise preferred either way
assert gpt_lo < 0 < gpt_hi and round(gpt_gap, 2) == 0.05

# %% guard: heads
# What the text says of the heads' patterns.
assert 0.85 < nxt[0].max() < 0.95 and prev[0].max() > 0.8 and nxt[1].max() > 0.8
assert nxt[3].max() < 0.2 and prev[3].max() < 0.2
assert 0.2 < special.max() < 0.3 and special.max() == special[0].max()

# %% guard: ddp
# What the text says of the one- and two-process runs.
assert ddp["agree"] and ddp["max_loss_diff"] < 1e-5 and ddp["tolerance"] == 1e-4
assert round(math.log10(ddp["max_loss_diff"])) == -6  # about 1e-6 nats
assert round(ddp["speedup_2proc"], 1) == 1.8
rate = {k: ddp[f"pieces_per_s_{k}"] for k in ("1proc", "2proc", "1proc_2threads")}
assert rate["2proc"] > rate["1proc_2threads"] > rate["1proc"]

# %% guard: tokenizer-family
# What the text says of the three small tokenizers and their cuts.
assert all(tok.get_vocab_size() == 2000 for tok in family.values())
ex_first = examples[0]
assert cuts["byte-level BPE", ex_first][:7] == ["an", "Ġun", "for", "get", "t", "able", ","]
assert cuts["WordPiece", ex_first][:7] == ["an", "unf", "##orge", "##t", "##t", "##able", ","]
assert cuts["Unigram", ex_first][:3] == ["▁an", "▁un", "forgettable"]
assert "▁unbelievabl" in cuts["Unigram", examples[1]]
assert cuts["Unigram", examples[1]][cuts["Unigram", examples[1]].index("▁unbelievabl") + 1] == "y"

# %% guard: span-corruption
# What the text says of T5's example (Raffel et al. 2020, fig. 2).
assert " ".join(t5_input) == "thank you <X> me to your party <Y> week"
assert " ".join(t5_target) == "<X> for inviting <Y> last <Z>"

# %% guard: probes
# What the text says of the probes and of the lookup that beats them all.
assert probe_acc["layer 1"] > max(probe_acc["layer 0"], probe_acc["layer 2"]) + 0.04
assert probe_acc["scalar mix"] >= probe_acc["layer 1"]
assert s.argmax() == 1 and s[1] > 0.8
assert round(probe_acc["layer 0"], 2) == 0.69  # "69% of the test words"
assert 0.065 < probe_acc["layer 1"] - probe_acc["layer 0"] < 0.075  # "about seven points"
assert probe_acc["layer 2"] < probe_acc["layer 1"]
assert mix.gamma.item() > 2  # "well above 1"
probe_only = [v for k, v in probe_acc.items() if k != "most frequent tag"]
assert probe_acc["most frequent tag"] > max(probe_only)
assert round(probe_acc["most frequent tag"], 3) == 0.799 and max(probe_only) < 0.775
assert tagging.tags[lookup.unknown] == "nn"

# %% guard: probe-gain
# What the text says of where the first layer's seven points come from.
group_share = {name: m.float().mean().item() for name, m in word_groups.items()}
gain_part = {name: ((correct[1][m] * 1.0 - correct[0][m] * 1.0).sum() / layer1_gain).item()
             for name, m in word_groups.items()}
group_acc = {name: {k: correct[k][m].float().mean().item() for k in (0, 1, "lookup")}
             for name, m in word_groups.items()}
unk_acc, several_acc, other_acc = group_acc.values()
assert round(group_share["<unk> to the biLM"], 3) == 0.146
assert round(gain_part["<unk> to the biLM"], 2) == 0.42
assert round(gain_part["known, several tags"], 2) == 0.37
assert max(gain_part, key=gain_part.get) == "<unk> to the biLM"
assert [round(unk_acc[k], 2) for k in (0, 1)] == [0.15, 0.36]
assert [round(several_acc[k], 2) for k in (1, "lookup")] == [0.83, 0.74]
assert round(other_acc["lookup"], 2) == 0.91 and round(max(other_acc[0], other_acc[1]), 2) == 0.83
assert train_x[0].shape[1] == 256 and len(tagging.tags) == 188
other_rows = word_groups["other known words"]
one_tag = [len(tags_seen.get(w, ())) == 1 for w, o in zip(test_words, other_rows) if o]
assert sum(one_tag) / len(one_tag) > 0.5  # "most of which have one tag"

# %% guard: elmo-tagger
# What the text and its dropdown say of the ELMo tagger's curve.
gain_at = {c["labels"]: c for c in tag_curve}
assert [round(100 * gain_at[n]["diff_mean"], 1) for n in (100, 300, 1000)] == [2.9, 0.9, 0.8]
assert all(c["diff_ci95"][0] > 0 for c in tag_curve)  # every interval above zero
# ELMo ahead on every subset
assert all(a > b for c in tag_curve for a, b in zip(c["elmo"], c["plain"]))
assert round(statistics.fmean(gain_at[1000]["plain"]), 3) == 0.886
assert gain_at[100]["diff_mean"] > 3 * max(gain_at[300]["diff_mean"], gain_at[1000]["diff_mean"])
assert [round(c["tokens"], -3) for c in tag_curve] == [2000, 6000, 20000]
assert len(tagging.train) == 45919
seq2seq_tagger = benchmark_results("seq2seq")["tagger"]
assert round(seq2seq_tagger["accuracy"], 3) == 0.968
tagger_setup = tagger_bench["setup"]
assert tagger_setup["seeds"] == 5 and tagger_setup["batch"] == 16
assert tagger_setup["steps"] == 600 and tagger_setup["max_epochs"] == 60
assert gain_at[100]["epochs"] * math.ceil(100 / 16) == 420
assert all(abs(c["epochs"] * math.ceil(c["labels"] / 16) - 600) <= 30 for c in tag_curve[1:])
assert round(tagger_setup["wall_s"] / 60) == 7 and tagger_setup["jobs"] == 2

# %% guard: schedule
# What the text says of the schedule: the formula printed is the code's, at a T where T*c
# is not whole, and the paper's form ends below the floor.
T_run, cut_run = 963, math.floor(963 * c)
p_run = [t / cut_run if t < cut_run else 1 - (t - cut_run) / (T_run - cut_run)
         for t in range(T_run + 1)]
assert all(abs((1 + p * (r - 1)) / r - slanted_triangular(T_run, c, r)(t)) < 1e-12
           for t, p in enumerate(p_run))
assert T_run * c != cut_run and 1 - (T_run - cut_run) / (cut_run * (1 / c - 1)) < 0
assert [round(x, 6) for x in (rates[0], rates[-1])] == [8e-6, 1e-3]

# %% guard: gpt-load
# What the text says of the GPT and of its fine-tuning schedule in the course.
gpt_tune = bench["curve_setup"]["gpt"]["recipe"]
assert gpt_tune["cut_frac"] == 0.1 and gpt_tune["ratio"] == 32.0  # slanted_triangular's
assert gpt_tune["decay"] == 1.0 and gpt_tune["unfreeze_every"] == 0  # one rate, none frozen
assert gpt.config.layers == 4 and gpt.config.d_model == 128
assert round(math.exp(gpt_ck.extra["val_loss"]) / 5) * 5 == 135  # "a perplexity of about 135"

# %% guard: bert-load
# What the text says: the GPT and the BERT share one vocabulary of 4,000 pieces.
assert bert_ck.extra["tokenizer"] == gpt_ck.extra["tokenizer"]
assert wp.vocab_size == 4_000 and len(SPECIALS) == 5  # "the five specials first"

# %% guard: longest-match
# What the text says of WordPiece's greedy cut.
assert agree == len(valid_words) > 5000
assert 0.03 < len(shorter) / len(valid_words) < 0.04 and "brought" in shorter
assert longest_match("brought") == ["bro", "##ug", "##h", "##t"]
assert fewest_pieces("brought") == ["br", "##ought"]

# %% guard: mlm-shares
# What the text says of the masking rule's draws.
assert n_chosen == 44_224 and wp.vocab_size - len(SPECIALS) == 3_995
assert 50 < math.sqrt(0.09 / n_chosen) / (0.1 / 3_995) < 60
assert all(abs(shares[k] - p) < 1.5 * math.sqrt(p * (1 - p) / n_chosen)
           for k, (_, p) in kinds.items())
assert [round(math.sqrt(p * (1 - p) / n_chosen), 4) for p in (0.1, 0.8)] == [0.0014, 0.0019]
assert int((chosen & ~ordinary).sum()) == 0 and abs(share - 0.15) < 0.005
per_seq = chosen.sum(1) / ordinary.sum(1)  # "more or fewer in any one, a short one may have none"
assert per_seq.min() == 0 and per_seq.max() > 0.3

# %% guard: bert-loss
# What the text and its dropdown say of the BERT's pretraining.
assert bert.config.layers == 4 and bert.config.d_model == 128 and bert.config.heads == 4
assert (settings["steps"], settings["batch"], settings["warmup"]) == (4000, 64, 200)
assert settings["lr"] == 1e-3 and settings["dropout"] == 0.1 and settings["seed"] == 0
assert round(settings["steps"] * settings["batch"] / len(parts[0])) == 25
assert round(bert_ck.extra["seconds"] / 60) == 44
assert round(losses[:5].mean().item(), 1) == 8.3 and round(math.log(4000), 1) == 8.3
assert round(losses[-200:].mean().item(), 1) == 4.5 and losses[-200:].mean() < unigram - 1.5

# %% guard: mlm-kinds
# What the text says of the masked-LM loss by kind of position, on the validation snippets.
(mask_nll, mask_freq, mask_hit), (rand_nll, _, _), (same_nll, _, same_hit) = (
    mlm_by_kind[k] for k in ("[MASK]", "random", "unchanged"))
assert 4.8 < mask_nll < 5.0 and 6.6 < mask_freq < 6.75
assert 1.7 < mask_freq - mask_nll < 1.85
assert 0.18 < mask_hit < 0.22 and 0.88 < same_hit < 0.95 and 0.7 < same_nll < 0.9
assert mask_nll < rand_nll < mask_nll + 0.6 and 4.4 < nll[v_chosen].mean() < 4.6
assert round(rand_nll, 1) == 5.3 and round(same_nll, 1) == 0.8

# %% guard: fill-masks
# What the text says of the BERT's guesses.
top3 = {t: fill_masks(bert, torch.tensor(wp.pair(t).ids), 3)[0][1] for t in
        ("the [MASK] is beautifully shot .", "one of the [MASK] films of the year .")}
words_of = {t: [wp.tokenizer.id_to_token(i) for i in v] for t, v in top3.items()}
assert words_of["the [MASK] is beautifully shot ."][:2] == ["film", "movie"]
assert words_of["one of the [MASK] films of the year ."][0] == "best"
funny_and = [wp.tokenizer.id_to_token(i) for i in
             fill_masks(bert, torch.tensor(wp.pair("a funny and [MASK] film .").ids), 5)[0][1]]
assert {"entertaining", "good", "funny"} <= set(funny_and)

# %% guard: praise-odds
# What the text says of the probe of praise and blame.
assert all(1.25 < m < 1.35 for m in mean_odds.values())
assert -0.03 < lo < 0 < hi < 0.02 and abs(gap) < 0.01
assert 0.12 < mass < 0.2
assert round(abs(gap), 3) == 0.007 and [round(lo, 3), round(hi, 3)] == [-0.022, 0.009]
assert round(math.exp(1.3), 1) == 3.7

# %% guard: english-bert
# What the text says of the BERT of the course's English and of the uses it is shown.
assert english_ck.extra["settings"]["corpus"] == "english"
assert english_ck.model.config == bert.config  # the twin: the same network
assert all(w in words for w in senses) and all(len(wp_en.ids(w)) == 1 for w in senses)
uses_of = {(ws[k].lower(), t): 0 for ws, k, t in uses}
for ws, k, t in uses:
    uses_of[ws[k].lower(), t] += 1
assert uses_of == {("light", "nn"): 260, ("light", "jj"): 63,
                   ("play", "vb"): 110, ("play", "nn"): 90}
assert round(uses_of["light", "jj"] / (uses_of["light", "jj"] + uses_of["light", "nn"]), 1) \
    == 0.2  # "one use in five of light is an adjective"

# %% guard: contextual
# What the text says of the nearest uses of each sentence's word, and of word2vec's.
def near_count(word, name, sentence):
    tag = dict(sense_examples[word])[sentence]
    return near_tags[word, name, sentence].count(tag)


ex = {w: [s for s, _ in sense_examples[w]] for w in sense_examples}
assert all(near_count("play", m, ex["play"][1]) == 10 for m in models_at)  # play ball
assert all(near_count("play", m, ex["play"][2]) in (9, 10) for m in models_at)
assert all(near_count("light", m, s) in (9, 10) for m in models_at for s in ex["light"][:2])
adj = [near_count("light", m, s) for m in models_at for s in ex["light"][2:]]
assert min(adj) == 4 and max(adj) == 7  # "four to seven of ten"
# every sentence's neighbours richer in its tag than the word's uses as a whole
for word, (a, b) in senses.items():
    for name in models_at:
        for s, tag in sense_examples[word]:
            base = uses_of[word, tag] / (uses_of[word, a] + uses_of[word, b])
            assert near_count(word, name, s) / 10 > base, (word, name, s)


def nearest_use(word, name, sentence):
    mine = [i for i, (ws, k, _) in enumerate(uses) if ws[k].lower() == word]
    q = unit_vectors(models_at[name], [(sentence.split(), sentence.split().index(word))])
    ws, k, t = uses[mine[(q @ pool[name][mine].T).argmax().item()]]
    return " ".join(ws[max(0, k - 3):k + 4]), t


assert nearest_use("light", "biLM", ex["light"][2]) == (
    "windows , giving light enough to examine", "nn")
assert nearest_use("play", "biLM", ex["play"][3])[0].startswith("made a spectacular play on")
assert nearest_use("play", "BERT", ex["play"][3])[0] == ", the new play at the brand-new"
assert [w for w, _ in w2v.nearest("light", 3)] == ["shine", "darkness", "moon"]
assert {"jest", "wooing"} <= {w for w, _ in w2v.nearest("play", 6)}

# %% guard: sense-cosines
# What the text says of the mean cosines within and across the two tags.
r2 = {key: [round(x, 2) for x in v] for key, v in mean_cos.items()}
for name in models_at:  # play: the same tag closer than across, in both models
    assert min(mean_cos["play", name][:2]) > mean_cos["play", name][2] + 0.04
assert min(min(r2["play", m][:2]) for m in models_at) == 0.66
assert max(max(r2["play", m][:2]) for m in models_at) == 0.73
assert [r2["play", m][2] for m in models_at] == [0.58, 0.67]
# light: hardly any difference
assert [r2["light", m][2] for m in models_at] == [0.70, 0.71]
assert min(min(r2["light", m][:2]) for m in models_at) == 0.70
assert max(max(r2["light", m][:2]) for m in models_at) == 0.74
assert all(min(v[:2]) - v[2] < 0.03 for k, v in mean_cos.items() if k[0] == "light")
assert all(0.55 < x < 0.8 for v in mean_cos.values() for x in v)  # "around 0.7"

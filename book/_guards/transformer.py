"""The checks of the numbers book/transformer.md states: see scripts/chapter_guards.py.

Each section runs, when the book is built, after the chapter's cell tagged guard-<name>,
in the chapter's kernel; a failing check fails the build, and the text must be rewritten.
"""

# %% guard: costs
# What the text says: a sixth at 20 words, equal at n = d = 128, eight times at 1,024.
assert round((20 * 20 * d) / (20 * d * d) * 6) == 1
assert 128 * 128 * d == 128 * d * d
assert 1024 * 1024 * d == 8 * (1024 * d * d)

# %% guard: scaling
# Unscaled the spread grows as sqrt(d_k) and one weight takes > 90%; scaled it stays at 1.
assert all(abs(spread[d, False][0] / math.sqrt(d) - 1) < 0.05 for d in (4, 64, 1024))
assert all(abs(spread[d, True][0] - 1) < 0.05 for d in (4, 64, 1024))
assert spread[1024, False][1] > 0.9 and spread[1024, True][1] < 0.3

# %% guard: rotary
# The rotated dot product depends on the offset only.
assert max(offset3) - min(offset3) < 1e-9 and max(offset4) - min(offset4) < 1e-9
assert abs(offset3[0] - offset4[0]) > 1e-3

# %% guard: dropout
# The residual path is never dropped; about half of what attention adds is.
assert untouched and 0.4 < dropped < 0.6

# %% guard: gradnorms
# Post-LN's gradient grows towards the top; pre-LN's is spread more evenly.
post, pre = grads["post-LN"], grads["pre-LN"]
assert post[-1] > 2 * post[0]
assert max(pre) / min(pre) < max(post) / min(post)

# %% guard: lncurves
# Within a tenth of a nat at every epoch; post-LN a little higher in BLEU, beam and greedy.
post_r, pre_r = sysb["transformer_postln"], sysb["transformer_preln"]
assert abs(post_r["valid_loss"][0] - pre_r["valid_loss"][0]) < 0.1
assert all(abs(a - b) < 0.1 for a, b in zip(post_r["valid_loss"], pre_r["valid_loss"]))
assert 0 < post_r["bleu"] - pre_r["bleu"] < 1.0
assert 0 < post_r["greedy_bleu"] - pre_r["greedy_bleu"] < 1.0

# %% guard: warmup
# Post-LN without warm-up stalls on every seed; pre-LN falls more and ends lower; the warm-up helps.
last = {k: [run[-1] for run in study["curves"][k]] for k in names}
second = {k: [run[1] for run in study["curves"][k]] for k in names}
post, pre, warm = (list(zip(second[k], last[k])) for k in names)
assert study["setup"]["seeds"] == 3 and study["setup"]["layers"] == 6
assert study["setup"]["steps_run"] == 203 and block == 25
assert all(a - b < 0.25 for a, b in post) and all(a - b > 0.4 for a, b in pre)
assert all(p[1] > q[1] + 0.3 for p, q in zip(post, pre))
assert all(w[1] < p[1] for w, p in zip(warm, post))

# %% guard: crossattn
# Queries from the decoder (T of them), keys and values the encoder's output (S of them).
assert from_encoder and len(inputs) == model.config.dec_layers
assert q.shape[1] == t4.shape[1] - 1 and k.shape[1] == v.shape[1] == s4.shape[1]
assert q.shape[1] != k.shape[1]  # so that the shapes printed tell T from S

# %% guard: embedscale
# Rows a little over 1 long; times sqrt(D) about 1.5 times a position; logits spread about 2.
assert 0.9 < rows.mean() < 1.4 and abs(pos_len - math.sqrt(D / 2)) < 1e-4
assert 10 < rows.mean() * math.sqrt(D) < 16 and 1.5 < logits.std() < 2.5
assert 1.3 < rows.mean() * math.sqrt(D) / pos_len < 1.9

# %% guard: subword
# The BPE the chapter loads is the one learnt here from the training part.
assert sub.to_json() == subword_split(split).to_json()

# %% guard: bpe
# The toy's tie and merges, and the first 100 merges of Hugging Face's trainer.
assert learn_bpe(toy, 10)[4] == ("e", "w") and learn_bpe(toy, 10)[6] == ("new", "est")
assert ours == theirs[:100]
assert ours[:2] == [("▁", "t"), ("▁", "a")] and ours[6] == ("▁t", "he")
assert {("▁", "s"), ("▁", "d")} <= set(ours[:6])

# %% guard: averaging
# The minimum before the end, about 0.03 an epoch; the gains of the average.
for name in ("transformer_postln", "transformer_preln"):
    r = sysb[name]
    best = min(r["valid_loss"])
    epoch = r["valid_loss"].index(best) + 1
    assert epoch == 15 and len(r["valid_loss"]) == 16
    assert 0.02 < (r["valid_loss"][10] - best) / 4 < 0.035  # "about 0.03 an epoch"
    gain_last = r["valid_loss"][-1] - r["averaged_valid_loss"]
    gain_best = best - r["averaged_valid_loss"]
    if name == "transformer_postln":
        assert 0.025 < gain_last < 0.04 and 0.01 < gain_best < 0.025
    else:
        assert 0.01 < gain_last < 0.02 and -0.01 < gain_best < 0

# %% guard: comparison
# 4.1 and 3.5 BLEU, about 10 chrF; two thirds of the parameters, about half the epochs.
rnn_r = sysb["attention_rnn"]
assert all(bench["targets"][f"{n}_vs_attention_rnn"]["met"] for n in TRANSFORMERS)
assert [round(sysb[n]["bleu"] - rnn_r["bleu"], 1) for n in TRANSFORMERS] == [4.1, 3.5]
assert all(sysb[n]["chrf"] - rnn_r["chrf"] > 9 for n in TRANSFORMERS)
assert all(sysb[n]["greedy_bleu"] > rnn_r["bleu"] for n in TRANSFORMERS)
assert rnn_r["epochs"] > 1.7 * sysb["transformer_preln"]["epochs"]
assert min(rnn_r["valid_loss"][:20]) - min(rnn_r["valid_loss"]) < 0.03
assert all(sysb[n]["parameters"] < 0.7 * rnn_r["parameters"] for n in TRANSFORMERS)
assert all(15 < sysb[n]["epochs"] < 16 for n in TRANSFORMERS)  # "about 15"
assert 27 < rnn_r["epochs"] < 29 and all(
    sysb[n]["valid_loss"].index(min(sysb[n]["valid_loss"])) == 14 for n in TRANSFORMERS)

# %% guard: kvcache
# The cached decoder gives the full decoder's logits.
assert torch.allclose(steps, full, atol=1e-4)

# %% guard: decoding
# The cache changes no translation: about three times as fast greedy, seven with the beam.
gain = {m: dec["no_cache"][f"{m}_s"] / dec["cache"][f"{m}_s"] for m in ("greedy", "beam")}
assert dec["same_output"]
assert dec["verses"] == 200 and dec["threads"] == 1 and dec["beam"] == 5
assert 2.5 < gain["greedy"] < 3.5 and 6 < gain["beam"] < 8  # "three", "seven"
assert 2.8 < dec["cache"]["beam_s"] / dec["attention_rnn"]["beam_s"] < 3.8
assert dec["no_cache"]["beam_s"] > 20 * dec["attention_rnn"]["beam_s"]

# %% guard: alpha
# At alpha = 1.5 the beam runs on and BLEU collapses; the RNN's does not.
va = {key: sysb[key]["valid_bleu_by_alpha"] for key in names}
assert [round(va[k]["1.5"], 1) for k in TRANSFORMERS] == [6.2, 5.8]
assert [round(va[k]["1.0"], 1) for k in TRANSFORMERS] == [16.8, 17.6]
assert round(va["attention_rnn"]["1.5"], 1) == 10.3 and va["attention_rnn"]["0.5"] < 12
assert 3.1 < by_length_norm[1.5][0] < 3.3 and 1.0 < by_length_norm[1.0][0] < 1.06
assert round(by_length_norm[1.0][1], 1) == 18.0
assert round(by_length_norm[1.5][1], 1) == 5.5
assert all(sysb[k]["alpha"] == 1.0 for k in TRANSFORMERS)

# %% guard: heatmap
# Rows are labelled by the piece they write (row t read y_i[t] and wrote out[t]).
w_last = maps["cross"][-1][0]                                   # (H,T,S) last layer
assert len(tgt_labels) == w_last.shape[1] == len(out) and tgt_labels[-1] == "<eos>"
assert y_i[0, 1:].tolist() == out[:-1]                           # each row read the piece before
row = {p: [t for t, lab in enumerate(tgt_labels) if lab == p] for p in ("▁su", "▁voz")}
col = {p: src_labels.index(p) for p in ("▁his", "▁voice", "▁we", "▁up", "▁lifted")}
assert len(row["▁su"]) == 2 and len(row["▁voz"]) == 2
assert all(tgt_labels[t - 1] == "▁su" for t in row["▁voz"])     # "the row of voz read su"
voz = w_last[:, row["▁voz"][0]]                                  # (H,S) the first voz
assert all(int(voz[h].argmax()) == col["▁voice"] for h in range(4))
assert [round(float(x), 2) for x in voz.max(-1).values] == [0.83, 0.94, 0.68, 0.76]
su1, su2 = (w_last[:, t] for t in row["▁su"])                    # (H,S) each
assert round(float(su1[:, col["▁his"]].max()), 2) == 0.20        # first su: his at most 0.20
assert {int(su1[h].argmax()) for h in range(4)} == {col["▁up"], col["▁lifted"], col["▁we"]}
assert [round(float(x), 2) for x in su2[:, col["▁his"]]] == [0.03, 0.48, 0.57, 0.01]
assert [int(su2[h].argmax()) for h in range(4)] == [
    col["▁voice"], col["▁his"], col["▁his"], col["▁we"]]
assert round(float(su2[0].max()), 2) == 0.67 and round(float(su2[3].max()), 2) == 0.86

# %% guard: heads
# In order everywhere (0.72 to 0.96); the middle layer sharpest and most ordered, the first most diffuse.
assert round(float(corr.min()), 2) == 0.72 and round(float(corr.max()), 2) == 0.96
assert peak.mean(1).argmax() == 1 and corr.mean(1).argmax() == 1
assert peak.mean(1).argmin() == 0
assert round(float(peak.mean(1)[0]), 2) == 0.46 and round(float(peak.mean(1)[1]), 2) == 0.62

# %% guard: speed
# Per doubling from 1,024 to 2,048: the fused kernel x4 (T^2), the written-out x6 (more than T^2).
w_ms = {r["T"]: r["written_ms"] for r in speed}
s_ms = {r["T"]: r["sdpa_ms"] for r in speed}
assert round(s_ms[2048] / s_ms[1024], 1) == 4.0 and round(s_ms[1024] / s_ms[512], 1) == 3.2
assert [round(w_ms[2 * t] / w_ms[t], 1) for t in (256, 512, 1024)] == [5.3, 6.1, 6.0]
assert [round(w_ms[2 * t] / w_ms[t], 1) for t in (64, 128)] == [2.2, 2.6]
assert round(s_ms[128] / s_ms[64], 1) == 2.3
assert round(speed[-1]["speedup"], 1) == 4.5 and all(r["speedup"] > 1 for r in speed)
short = [round(100 * (r["speedup"] - 1)) for r in speed if r["T"] <= 512]
assert (min(short), max(short)) == (19, 55), short
assert speed[-1]["scores_mib"] == 512

# %% guard: worked-attention
# The hand-worked 3-token example: scores, the exponentials, the weights and the outputs.
assert scores.tolist() == [[2, 0, 1], [0, 2, 1], [2, 2, 2]]
z1 = scores[0] / math.sqrt(2)
assert [round(math.exp(float(s)), 2) for s in z1] == [4.11, 1.0, 2.03]
assert round(float(z1.exp().sum()), 2) == 7.14
assert A.mul(100).round().tolist() == [[58, 14, 28], [14, 58, 28], [33, 33, 33]]
assert (A @ V).mul(100).round().tolist() == [[114, 71], [71, 114], [100, 100]]
assert torch.softmax(scores[0], -1).mul(100).round().tolist() == [67, 9, 24]
assert torch.allclose(A @ V, F.scaled_dot_product_attention(Q, K, V), atol=1e-6)
# Exercise 3: doubled keys sharpen query 1 to 0.77, 0.05, 0.19; query 3 stays uniform.
A2 = torch.softmax(2 * scores / math.sqrt(2), dim=-1)
assert A2[0].mul(100).round().tolist() == [77, 5, 19]
assert torch.allclose(A2[2], torch.full((3,), 1 / 3))

# %% guard: block-check
# The block written on the page is nn.TransformerEncoderLayer (post-LN) with the same weights.
assert block_diff < 1e-6
assert count(ours_block) == count(torch_block) == 198_272

# %% guard: param-count
# The count by hand: exact for the chapter's model; BERT-base and GPT-2 small from the formula.
assert (4 * 128**2 + 4 * 128, 2 * 128 * 512 + 512 + 128, 4 * 128) == (66_048, 131_712, 512)
assert enc_n == count(model.encoder.layers[0]) == 198_272
assert dec_n == count(model.decoder.layers[0]) == 264_576
assert by_hand == count(model) == 1_901_056 and round(100 * cfg.vocab * D / by_hand) == 27
bert = 12 * block_params(768, 3072) + (30522 + 512) * 768
gpt2 = 12 * block_params(768, 3072) + (50257 + 1024) * 768
assert round(bert / 1e6, 1) == 108.9 and round(gpt2 / 1e6) == 124
assert [round(n / count(model)) for n in (bert, gpt2)] == [57, 65]
assert 15 < sysb["transformer_preln"]["epochs"] < 15.5  # "its 15 epochs"
assert 1.8e6 < seen < 1.95e6 and 0.95 < seen / count(model) < 1.05  # "about one per parameter"
# The exercises' answers: post-LN, and F = 2D.
_kw = dict(d_model=128, heads=4, enc_layers=3, dec_layers=3)
assert count(build_transformer(TransformerConfig(cfg.vocab, d_ff=512, norm_first=False, **_kw))) == 1_900_544
assert count(build_transformer(TransformerConfig(cfg.vocab, d_ff=256, norm_first=True, **_kw))) == 1_506_304
assert 6 * (2 * 128 * 256 + 256) == 394_752 and 1_901_056 - 394_752 == 1_506_304

# %% guard: gelu
# GELU's lowest value -0.17, at x about -0.75.
assert round(float(F.gelu(z)[low]), 2) == -0.17 and abs(float(z[low]) + 0.75) < 0.01
assert torch.allclose(F.gelu(z), z * 0.5 * (1 + torch.erf(z / math.sqrt(2))), atol=1e-6)

# %% guard: norm-swiglu
# RMSNorm keeps (1, 2, 3, 6) positive, LayerNorm centres it; the same once the mean is out.
assert (F.rms_norm(v, (4,)) > 0).all() and F.layer_norm(v, (4,))[0] < 0
u = v - v.mean()
assert torch.allclose(F.layer_norm(u, (4,)), F.rms_norm(u, (4,)), atol=1e-4)
assert count(relu_ffn) == 131_072 and count(swiglu) == 130_944 and 2 * 512 // 3 == 341
assert swiglu(torch.randn(2, 3, 128)).shape == (2, 3, 128)
# Exercise 4: the block with SwiGLU.
assert 198_272 - 131_712 + 130_944 == 197_504 and 131_712 - 131_072 == 640

# %% guard: sampling-toy
# k = 2 keeps light and a (0.60, 0.40); p = 0.9 drops darkness only; tau = 0.5 squares.
r2 = {k: [round(float(q), 2) for q in t] for k, t in toy.items()}
assert r2["{'top_k': 2}"] == [0.6, 0.4, 0.0, 0.0, 0.0]
assert r2["{'top_p': 0.9}"] == [0.47, 0.32, 0.13, 0.08, 0.0]
assert r2["{'temperature': 0.5}"] == [0.64, 0.28, 0.05, 0.02, 0.01]
assert [round(float(c), 2) for c in toy_p[0].cumsum(0)[:4]] == [0.45, 0.75, 0.87, 0.95]
# Exercise 2: p = 0.7 keeps two words, p = 0.8 three.
kept = {q: int((torch.softmax(reshape_logits(toy_p.log(), top_p=q), -1) > 0).sum())
        for q in (0.7, 0.8)}
assert kept == {0.7: 2, 0.8: 3}
# Exercise 1: top-k 1, a tiny top-p and a tiny temperature all keep the most probable only.
for how in ({"top_k": 1}, {"top_p": 1e-3}, {"temperature": 1e-3}):
    assert torch.softmax(reshape_logits(toy_p.log(), **how), -1)[0, 0] > 0.999

# %% guard: sampling
# Pure sampling halves BLEU; greedy repeats 8.4% of its word pairs, the references 1.5%.
sc = {k: (round(b, 1), round(100 * r, 1)) for k, (b, _c, r) in decoding_scores.items()}
assert sc["greedy"] == (18.5, 8.4) and sc["references"][1] == 1.5
assert sc["pure sampling"] == (9.4, 1.8) and sc["tau 0.7 and top-p 0.9"] == (16.6, 5.0)
lo, hi = sc["pure sampling"], sc["greedy"]  # every setting between the two ends
assert all(lo[i] <= sc[k][i] < hi[i] for k in settings for i in (0, 1))
assert (16.6 - 9.4) / (18.5 - 9.4) > 0.75  # "most of the BLEU"
train_words = {w.lower() for p in split.train for w in tokens(p.tgt)}
assert sum(w not in train_words for w in tokens(outputs["pure sampling"][5])) >= 2
assert "yo dijo: yo yo" in outputs["greedy"][5]
assert outputs["greedy"] == greedy[:200] and len(few_refs) == 200
assert round(score.bleu, 1) == 14.7  # greedy on the whole test part

"""The seq2seq chapter's library: ``nlpcourse.data.translation`` (verse pairs split by chapter, BLEU/chrF by
sacreBLEU), ``nlpcourse.models.seq2seq`` (encoder-decoder with and without attention, greedy and beam
decoding), ``nlpcourse.data.tagging`` and ``nlpcourse.models.tagger`` (the BiLSTM tagger and its baseline).

Tiny models, one thread, seconds; the CUDA variants are marked ``gpu`` (skipped where there is none).
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu
import torch
import torch.nn.functional as F
from decoding_support import check_batch_decodes_as_one_at_a_time, exhaustive_search
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpcourse.data.batching import pad_batch
from nlpcourse.data.tagging import TaggingSplit, simple_tag
from nlpcourse.data.translation import (
    detokenize,
    kjv_references,
    mt_scores,
    source_key,
    tokens,
    translation_split,
    verse_pairs,
)
from nlpcourse.data.vocab import Vocab
from nlpcourse.errors import ConfigError, CourseError, UnknownNameError
from nlpcourse.models import seq2seq
from nlpcourse.models.seq2seq import (
    SCORES,
    Attention,
    Seq2SeqConfig,
    Seq2SeqTrainConfig,
    beam_decode,
    build_seq2seq,
    corpus_loss,
    fit_seq2seq,
    greedy_decode,
    teacher_forced_loss,
)
from nlpcourse.models.tagger import (
    BiLSTMTagger,
    MostFrequentTag,
    TaggerConfig,
    TaggerFeatures,
    per_tag_accuracy,
    tag_accuracy,
    word_shape,
)

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
V = 7  # tiny target vocabulary: 4 specials + 3 words


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def split():
    return translation_split()


def tiny(attention: str = "general", device: str = "cpu", seed: int = 0, **kw):
    cfg = dict(src_vocab=9, tgt_vocab=V, embed_dim=6, hidden_dim=8, attn_dim=5, dropout=0.0) | kw
    return build_seq2seq(Seq2SeqConfig(attention=attention, **cfg), seed=seed, device=device)


def sources(device: str = "cpu") -> torch.Tensor:
    return pad_batch([[5, 6, 7, 3], [8, 3], [4, 5, 6, 7, 8, 3]]).tokens.to(device)  # (3,6), <eos> = 3 last


# ------------------------------------------------------------------ data


def test_every_pair_has_its_chapter():
    pairs = verse_pairs()
    assert len(kjv_references()) == 31_102 and len(pairs) == 31_084
    assert (pairs[0].book, pairs[0].chapter) == ("Genesis", 1) and pairs[0].src.startswith("In the beginning")
    assert (pairs[-1].book, pairs[-1].chapter) == ("Revelation of John", 22)
    john = [p for p in pairs if p.book == "John" and p.chapter == 11]
    assert any(p.src == "Jesus wept." for p in john)


def test_split_keeps_chapters_whole_and_lengths_short(split):
    chapters = [{(p.book, p.chapter) for p in part} for part in (split.train, split.valid, split.test)]
    assert not chapters[0] & chapters[1] and not chapters[0] & chapters[2] and not chapters[1] & chapters[2]
    n = len(split.train) + len(split.valid) + len(split.test)
    assert 0.75 < len(split.train) / n < 0.85 and len(split.test) > 500
    for p in split.train + split.test:
        assert len(tokens(p.src)) <= split.max_tokens and len(tokens(p.tgt)) <= split.max_tokens
    assert translation_split().test == split.test  # deterministic


def test_no_validation_or_test_source_occurs_in_training(split):
    """The leak the chapter split alone let through: a verse that recurs word for word in another book."""
    seen = {source_key(p.src) for p in split.train}
    assert not any(source_key(p.src) in seen for p in split.valid + split.test)
    assert 30 < split.dropped["test"] < 60 and split.dropped["valid"] > 10  # and the split says how many
    spake = "and the lord spake unto moses saying"
    assert spake in seen and source_key("And the LORD spake unto Moses, saying:") == spake
    small = translation_split(max_tokens=8)  # the same rule at any length limit
    assert not {source_key(p.src) for p in small.test} & {source_key(p.src) for p in small.train}


def test_vocabularies_are_fit_on_the_training_part_only(split):
    train_words = {w for p in split.train for w in tokens(p.tgt)}
    test_only = {w for p in split.test for w in tokens(p.tgt)} - train_words
    assert test_only and not any(w in split.tgt_vocab for w in test_only)
    ids = split.target_ids("test")
    assert all(t[0] == 2 and t[-1] == 3 for t in ids) and all(s[-1] == 3 for s in split.source_ids("test"))
    assert any(1 in t for t in ids)  # unknown words are <unk>


def test_decode_stops_at_eos_and_detokenises(split):
    v = split.tgt_vocab
    ids = [2] + v.encode(["y", "dijo", "dios", ":", "sea", "la", "luz", "."]) + [3, v["luz"]]
    assert split.decode(ids) == "y dijo dios: sea la luz."
    assert detokenize(["¿", "quién", "es", "?", "(", "dijo", ")"]) == "¿quién es? (dijo)"
    with pytest.raises(UnknownNameError, match="no part 'dev'"):
        split.part("dev")


def test_mt_scores_are_sacrebleus_case_insensitive_scores():
    refs = ["Y dijo Dios: Sea la luz.", "Y fué la tarde y la mañana el día primero."]
    hyps = ["y dijo dios: sea la luz.", "y fué la mañana el día."]
    s = mt_scores(hyps, refs)
    assert s.bleu == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], lowercase=True).score)
    assert s.chrf == pytest.approx(sacrebleu.CHRF(lowercase=True).corpus_score(hyps, [refs]).score)
    assert 0 < s.bleu < 100 and "case:lc" in s.bleu_signature
    assert mt_scores(refs, refs).bleu == pytest.approx(100.0)
    with pytest.raises(ConfigError, match="1 translations for 2 references"):
        mt_scores(hyps[:1], refs)


# ------------------------------------------------------------------ attention


@settings(max_examples=30, deadline=None)
@given(score=st.sampled_from(SCORES[1:]), lengths=st.lists(st.integers(1, 6), min_size=1, max_size=4),
       seed=st.integers(0, 2**16))
def test_attention_rows_sum_to_one_and_padding_gets_zero(score, lengths, seed):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    attn = Attention(score, 8, 5)
    B, S = len(lengths), max(lengths)
    q, k = torch.randn(B, 3, 8, generator=g), torch.randn(B, S, 8, generator=g)
    mask = torch.arange(S)[None, :] < torch.tensor(lengths)[:, None]  # (B,S)
    context, w = attn(q, k, mask)
    torch.testing.assert_close(w.sum(-1), torch.ones(B, 3))
    assert bool((w.masked_select(~mask[:, None, :].expand_as(w)) == 0).all())
    # what lies in the padding cannot change the result
    k2 = torch.where(mask[..., None], k, torch.randn(B, S, 8, generator=g) * 100)
    torch.testing.assert_close(attn(q, k2, mask)[0], context)


def test_dot_attention_is_sdpa_without_the_scaling():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 3, 8, generator=g), torch.randn(2, 5, 8, generator=g)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    context, _ = Attention("dot", 8, 5)(q, k, mask)
    expected = F.scaled_dot_product_attention(q, k, k, attn_mask=mask[:, None, :], scale=1.0)
    torch.testing.assert_close(context, expected)


# ------------------------------------------------------------------ the encoder-decoder


@pytest.mark.parametrize("attention, summary, layers", [(a, "last", 1) for a in SCORES] + [
    ("none", "mean", 1), ("general", "mean", 2), ("none", "last", 3)])
def test_padding_changes_nothing(attention, summary, layers):
    model = tiny(attention, summary=summary, layers=layers)
    src = sources()
    y = torch.tensor([[2, 4, 5], [2, 6, 4], [2, 5, 5]])
    extra = torch.cat([src, torch.zeros(3, 4, dtype=torch.long)], dim=1)  # 4 more pads
    torch.testing.assert_close(model(extra, y), model(src, y))
    one = model(src[1:2, :2], y[1:2])  # the short source alone, unpadded
    torch.testing.assert_close(model(src, y)[1:2], one)


def test_the_mean_summary_averages_the_real_positions_and_each_layer_gets_its_first_state():
    model = tiny("none", summary="mean", layers=2).eval()
    src = sources()
    enc = model.encode(src)
    for b, n in enumerate((4, 2, 6)):
        torch.testing.assert_close(enc.summary[b], enc.memory[b, :n].mean(0))
    state = model.init_state(enc)  # (L,B,H): layer l from its own slice of W_init
    assert state.shape == (2, 3, 8)
    first = torch.tanh(enc.summary @ model.W_init.weight.T + model.W_init.bias)  # (B,L*H)
    torch.testing.assert_close(state[1], first[:, 8:])


def test_a_stacked_model_decodes_as_exhaustive_search():
    model = tiny("general", seed=3, layers=2)
    src = sources()[:1, :4]
    score, ids = exhaustive_search(lambda y: model(src, y), V, 4, 1.0)
    got = beam_decode(model, src, max_len=4, beam=40, alpha=1.0)
    assert got.ids[0] == ids and got.scores[0] == pytest.approx(score, abs=1e-5)
    check_batch_decodes_as_one_at_a_time(greedy_decode, model, sources(), 6)


def test_teacher_forced_loss_ignores_padding():
    model = tiny()
    src, tgt = sources(), pad_batch([[2, 4, 5, 3], [2, 6, 3], [2, 3]]).tokens
    logits = model(src, tgt[:, :-1])
    per_token = [F.cross_entropy(logits[b, :n], tgt[b, 1:n + 1], reduction="sum") for b, n in enumerate((3, 2, 1))]
    torch.testing.assert_close(teacher_forced_loss(model, src, tgt), sum(per_token) / 6)


def test_greedy_decoding_of_a_batch_equals_one_at_a_time():
    for batch, one, b in check_batch_decodes_as_one_at_a_time(greedy_decode, tiny(), sources(), 6):
        torch.testing.assert_close(one.attention[0], batch.attention[b])


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_search_with_a_wide_beam_is_exhaustive_search(alpha, seed):
    model = tiny(seed=seed)
    src = sources()[:1, :4]
    score, ids = exhaustive_search(lambda y: model(src, y), V, 4, alpha)
    got = beam_decode(model, src, max_len=4, beam=40, alpha=alpha)
    assert got.ids[0] == ids and got.scores[0] == pytest.approx(score, abs=1e-5)


def test_a_beam_of_one_follows_greedy_and_ends_no_worse():
    """Beam 1 walks greedy's path (its open hypothesis is the best non-<eos> token), but it also keeps
    every <eos> ending it passed: the translation it returns scores at least greedy's."""
    for seed in range(6):
        model = tiny(seed=seed)
        greedy = greedy_decode(model, sources(), max_len=5)
        one = beam_decode(model, sources(), max_len=5, beam=1, alpha=0.0)
        for g, g_score, b, b_score in zip(greedy.ids, greedy.scores, one.ids, one.scores):
            if g[-1] == 3:
                assert b_score >= g_score - 1e-5
                assert b[:-1] == g[:len(b) - 1]  # a prefix of greedy's path, then <eos>


@pytest.mark.parametrize("layers", [1, 2])
def test_training_learns_to_reverse_short_sequences(layers):
    g = torch.Generator().manual_seed(0)
    src = [[int(t) for t in torch.randint(4, 9, (int(n),), generator=g)] for n in torch.randint(1, 5, (300,),
                                                                                                  generator=g)]
    pairs = ([s + [3] for s in src], [[2] + [t - 2 for t in reversed(s)] + [3] for s in src])  # 4..8 -> 2..6
    pairs = (pairs[0], [[2] + [t + 2 if t < 4 else t for t in y[1:-1]] + [3] for y in pairs[1]])
    model = tiny("dot", tgt_vocab=11, hidden_dim=32, embed_dim=16, layers=layers)
    before = corpus_loss(model, *pairs)
    hist = fit_seq2seq(model, pairs, pairs, Seq2SeqTrainConfig(batch_size=32, epochs=30, lr=1e-2))
    assert hist.valid_loss[-1] < 0.2 < before and hist.epochs == pytest.approx(30)
    out = greedy_decode(model, pad_batch(pairs[0][:20]).tokens, max_len=6)
    assert sum(o == y[1:] for o, y in zip(out.ids, pairs[1][:20])) >= 16


def test_budget_stops_training():
    pairs = ([[4, 5, 3]] * 64, [[2, 5, 4, 3]] * 64)
    hist = fit_seq2seq(tiny(), pairs, pairs, Seq2SeqTrainConfig(batch_size=8, epochs=50, max_cpu_seconds=0.0))
    assert hist.epochs == pytest.approx(1 / 8) and len(hist.valid_loss) == 1


def test_bad_config_is_refused():
    for bad, match in [(dict(attention="multiplicative"), "attention must be one of"),
                       (dict(hidden_dim=7), "hidden_dim must be even"), (dict(tgt_vocab=4), "more than the 4"),
                       (dict(summary="max"), "summary must be one of"), (dict(layers=0), "layers must be")]:
        with pytest.raises(ConfigError, match=match):
            Seq2SeqConfig(**(dict(src_vocab=9, tgt_vocab=9) | bad))
        assert issubclass(ConfigError, CourseError)


@pytest.mark.parametrize("device", DEVICES)
def test_same_translation_on_every_device(device):
    cpu, dev = tiny("additive"), tiny("additive", device)
    y = torch.tensor([[2, 4, 5], [2, 6, 3], [2, 1, 6]])
    torch.testing.assert_close(dev(sources(device), y.to(device)).cpu(), cpu(sources(), y), rtol=1e-4, atol=1e-5)
    assert greedy_decode(dev, sources(device), 6).ids == greedy_decode(cpu, sources(), 6).ids


def test_real_pairs_train_a_little(split):
    """A few seconds on the real data: the loss falls below a unigram model's of the target words."""
    train = (split.source_ids("train")[:512], split.target_ids("train")[:512])
    cfg = Seq2SeqConfig(len(split.src_vocab), len(split.tgt_vocab), embed_dim=32, hidden_dim=64, dropout=0.0)
    model = build_seq2seq(cfg)
    start = corpus_loss(model, *train)
    hist = fit_seq2seq(model, train, train, Seq2SeqTrainConfig(epochs=3))
    assert start == pytest.approx(math.log(len(split.tgt_vocab)), rel=0.1) and hist.valid_loss[-1] < start - 1.5


# ------------------------------------------------------------------ tagging


def test_simple_tags_drop_the_position_markers():
    assert [simple_tag(t) for t in ("nn-tl", "fw-in", "np$-hl", "ppss+md", "nn-tl+bez", "*", "FW-NN-TL")] == \
        ["nn", "in", "np$", "ppss+md", "nn+bez", "*", "nn"]
    assert [word_shape(w) for w in ("dog", "Dog", "NASA", "1961", "I")] == [0, 1, 2, 3, 1]


def _toy_split() -> TaggingSplit:
    train = [[("The", "at"), ("dog", "nn"), ("runs", "vbz")], [("a", "at"), ("run", "nn"), ("dog", "nn")],
             [("The", "at"), ("run", "vb"), ("run", "nn")], [("big", "jj"), ("zebra", "nn"), ("lion", "nn")]]
    test = [[("The", "at"), ("cat", "nn"), ("runs", "vbz")]]
    words = Vocab.build([[w.lower() for w, _ in s] for s in train])
    return TaggingSplit(train, [], test, words, ["nn", "at", "vbz", "vb", "jj"])


def test_most_frequent_tag_baseline():
    split = _toy_split()
    base = MostFrequentTag(split)
    assert base.predict([[("run", "?"), ("the", "?"), ("okapi", "?")]]) == [[0, 1, 0]]  # unknown -> nn
    pred, gold = base.predict(split.test), split.tag_ids(split.test)
    assert tag_accuracy(pred, gold) == pytest.approx(1.0)
    assert per_tag_accuracy([[0, 0, 0]], gold, split.tags) == {"at": (0.0, 1), "nn": (1.0, 1), "vbz": (0.0, 1)}


def test_tagger_padding_changes_nothing():
    split = _toy_split()
    feats = TaggerFeatures.fit(split)
    torch.manual_seed(0)
    model = BiLSTMTagger(TaggerConfig(len(feats.words), len(feats.suffixes), 5, 6, 3, 4, 0.0)).eval()
    a, b = (torch.tensor([c]) for c in feats.encode(split.train[0])), None
    one = model(*a)
    cols = [pad_batch([c, [1]]).tokens for c in feats.encode(split.train[0])]  # with a 1-token sentence
    b = model(*[torch.cat([c, torch.zeros(2, 3, dtype=torch.long)], 1) for c in cols])
    torch.testing.assert_close(b[0, :3], one[0])


# ------------------------------------------------------------------ the benchmark


@pytest.mark.slow
def test_benchmark_tiny_writes_every_system_and_checkpoints_that_load(tmp_path):
    out = tmp_path / "seq2seq.json"
    proc = subprocess.run([sys.executable, "benchmarks/seq2seq.py", "--tiny", "--threads", "1", "--json", str(out),
                           "--save", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert set(report["systems"]) == {"rnn_greedy", "rnn_beam", "attention_greedy", "attention_beam"}
    for name, result in report["systems"].items():
        assert {"bleu", "chrf", "wall_s"} <= set(result) and 0 <= result["bleu"] <= 100, name
    assert {"accuracy", "baseline_accuracy"} <= set(report["tagger"])
    assert report["setup"]["bleu_signature"].startswith("nrefs:1|case:lc")
    from nlpcourse.train import load_checkpoint
    for prefix, attention in (("rnn", "none"), ("attention", "general")):
        ckpt = load_checkpoint(tmp_path / f"seq2seq_{prefix}.pt", build=seq2seq.seq2seq_from_config)
        assert ckpt.model.config.attention == attention
        assert ckpt.extra["tgt_itos"][:4] == ["<pad>", "<unk>", "<bos>", "<eos>"]
    # --rescore: the saved models scored again, what was measured in training kept
    trained = {k: report["systems"]["attention_greedy"][k] for k in ("epochs", "train_cpu_s", "valid_loss")}
    proc = subprocess.run([sys.executable, "benchmarks/seq2seq.py", "--tiny", "--threads", "1", "--json", str(out),
                           "--rescore", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    again = json.loads(out.read_text())
    assert {k: again["systems"]["attention_greedy"][k] for k in trained} == trained
    assert again["tagger"] == report["tagger"] and again["setup"]["rescored"]["from"] == str(tmp_path)
    assert again["setup"]["dropped_seen_in_training"] == translation_split().dropped


@pytest.mark.slow
def test_benchmark_ablations_pair_each_seed_and_keep_the_rest_of_the_json(tmp_path):
    out = tmp_path / "seq2seq.json"
    out.write_text(json.dumps({"systems": {"kept": {"bleu": 1.0}}}))
    proc = subprocess.run([sys.executable, "benchmarks/seq2seq.py", "--tiny", "--ablations", "--seeds", "2",
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["systems"] == {"kept": {"bleu": 1.0}}
    ab = report["ablations"]
    for name in ("rnn", "rnn_mean", "attention", "attention_2layers"):
        assert len(ab[name]["bleu"]) == 2 and all(0 <= b <= 100 for b in ab[name]["bleu"]), name
    pair = ab["pairs"]["rnn_mean - rnn"]
    assert pair["diff"] == [round(x - y, 2) for x, y in zip(ab["rnn_mean"]["bleu"], ab["rnn"]["bleu"])]
    lo, hi = pair["diff_ci95"]
    assert lo <= pair["diff_mean"] <= hi


def test_committed_checkpoints_load_and_match_the_split(split):
    from nlpcourse.train import load_checkpoint
    for prefix, attention in (("rnn", "none"), ("attention", "general")):
        path = ROOT / "data" / "checkpoints" / f"seq2seq_{prefix}.pt"
        ckpt = load_checkpoint(path, build=seq2seq.seq2seq_from_config)
        assert ckpt.model.config.attention == attention
        assert ckpt.extra["src_itos"] == split.src_vocab.itos and ckpt.extra["tgt_itos"] == split.tgt_vocab.itos
        out = greedy_decode(ckpt.model.float(), pad_batch(split.source_ids("test")[:8]).tokens, 25)
        assert all(ids and ids[-1] == 3 for ids in out.ids)  # trained: every translation ends

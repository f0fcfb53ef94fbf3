"""The Transformer chapter's library: ``nlpcourse.data.subword`` (one BPE for both languages, learnt on the
training part) and ``nlpcourse.models.transformer`` (PyTorch's encoder and decoder layers, post-LN and
pre-LN, positions, label smoothing, warm-up, checkpoint averaging, greedy and beam decoding).

Tiny models, one thread, seconds; the CUDA variants are marked ``gpu`` (skipped where there is none).
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from causal_support import redrawn
from decoding_support import check_batch_decodes_as_one_at_a_time, exhaustive_search
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from nlpcourse.data.batching import pad_batch
from nlpcourse.data.subword import load_subword_split, subword_split, train_bpe
from nlpcourse.data.translation import translation_split
from nlpcourse.errors import ConfigError, CourseError, FormatError, ShapeError
from nlpcourse.models.transformer import (
    TransformerConfig,
    TransformerTrainConfig,
    attention_maps,
    average_weights,
    beam_decode,
    build_transformer,
    cached_step,
    corpus_loss,
    fit_transformer,
    greedy_decode,
    smoothed_loss,
    start_cache,
    transformer_from_config,
    warmup_lr,
)
from nlpcourse.train import load_checkpoint

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
V = 7  # tiny vocabulary: 4 specials + 3 pieces

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def sub():
    return subword_split(translation_split())


def tiny(device: str = "cpu", seed: int = 0, **kw):
    cfg = dict(vocab=V, d_model=8, heads=2, enc_layers=2, dec_layers=2, d_ff=16, dropout=0.0, max_len=16) | kw
    return build_transformer(TransformerConfig(**cfg), seed=seed, device=device).eval()


def sources(device: str = "cpu") -> torch.Tensor:
    return pad_batch([[5, 6, 4, 3], [6, 3], [4, 5, 6, 4, 5, 3]]).tokens.to(device)  # (3,6), <eos> = 3 last


# ------------------------------------------------------------------ BPE


def test_bpe_is_learnt_on_the_training_part_and_decodes_exactly(sub):
    assert [sub.tokenizer.id_to_token(i) for i in range(4)] == ["<pad>", "<unk>", "<bos>", "<eos>"]
    assert sub.vocab_size == 4000
    again = subword_split(sub.split)
    assert again.to_json() == sub.to_json()  # deterministic
    for part in ("train", "test"):
        for p, ids in zip(sub.split.part(part)[:200], sub.target_ids(part)[:200]):
            assert ids[0] == 2 and ids[-1] == 3 and 1 not in ids
            assert sub.decode(ids[1:]) == " ".join(p.tgt.lower().split())
    only_test = train_bpe([p.src for p in sub.split.test] + [p.tgt for p in sub.split.test], 4000)
    assert only_test.get_vocab() != sub.tokenizer.get_vocab()  # the training part decides


def test_bpe_splits_rare_words_into_known_pieces(sub):
    pieces = sub.pieces("Abram journeyed")
    assert pieces[0].startswith("▁") and len(pieces) > 2 and "<unk>" not in pieces
    assert sub.decode(sub.encode("Abram journeyed")) == "abram journeyed"


def test_bpe_refuses_bad_sizes_and_bad_files(sub):
    with pytest.raises(ConfigError, match="exceed the 4 specials"):
        train_bpe(["a b c"], vocab_size=4)
    with pytest.raises(FormatError, match="not a saved tokenizer"):
        load_subword_split(sub.split, "{not json")
    assert load_subword_split(sub.split, sub.to_json()).encode("and god said") == sub.encode("and god said")


# ------------------------------------------------------------------ the model


def test_layers_are_pytorchs_with_the_chosen_norm_placement():
    for norm_first in (True, False):
        m = tiny(norm_first=norm_first)
        assert all(isinstance(layer, nn.TransformerEncoderLayer) and layer.norm_first == norm_first
                   for layer in m.encoder.layers)
        assert all(isinstance(layer, nn.TransformerDecoderLayer) and layer.norm_first == norm_first
                   for layer in m.decoder.layers)
        assert (m.encoder.norm is not None) == norm_first and (m.decoder.norm is not None) == norm_first


def test_sinusoids_depend_on_the_offset_only():
    """P[p] . P[p+k] is a sum of cosines of k times the frequencies: the same for every p."""
    P = tiny(d_model=64, max_len=64).positions(64)  # (64,64)
    assert torch.all(P.abs() <= 1) and P.shape == (64, 64)
    for k in (1, 5, 17):
        dots = (P[:-k] * P[k:]).sum(1)  # (64-k,)
        assert torch.allclose(dots, dots[0].expand_as(dots), atol=1e-4)
    assert torch.allclose((P * P).sum(1), torch.full((64,), 32.0), atol=1e-4)  # sin^2 + cos^2, D/2 times


def test_learned_positions_are_parameters_and_too_long_is_refused():
    m = tiny(positions="learned")
    assert m.pos.weight.requires_grad and m.positions(5).shape == (5, 8)
    with pytest.raises(ShapeError, match="position table has 16 rows"):
        m(sources(), torch.full((1, 17), 4))


@settings(max_examples=25, deadline=None)
@given(cut=st.integers(1, 5), seed=st.integers(0, 10_000), norm_first=st.booleans())
def test_changing_future_tokens_never_changes_earlier_outputs(cut, seed, norm_first):
    model = tiny(norm_first=norm_first)
    y, changed = redrawn((3, 6), 4, V, cut, seed)
    with torch.no_grad():
        a, b = model(sources(), y), model(sources(), changed)
    torch.testing.assert_close(a[:, :cut], b[:, :cut], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm_first", [True, False])
def test_padding_changes_nothing(norm_first):
    """Source padding and target padding: each row of a padded batch = that row alone, unpadded."""
    model = tiny(norm_first=norm_first)
    y, short = torch.tensor([[2, 4, 5, 6]]), torch.tensor([[2, 6, 6]])
    with torch.no_grad():
        batch = model(sources(), torch.cat([y, y, F.pad(short, (0, 1))]))  # (3,4,V)
        for b, tgt in ((0, y), (1, y), (2, short)):
            alone = model(sources()[b:b + 1, :int((sources()[b] != 0).sum())], tgt)
            torch.testing.assert_close(batch[b:b + 1, :tgt.shape[1]], alone, atol=1e-5, rtol=1e-5)


def test_attention_maps_are_distributions_that_respect_the_masks():
    model = tiny()
    y = torch.tensor([[2, 4, 5], [2, 6, 0], [2, 4, 4]])
    maps = attention_maps(model, sources(), y)
    assert [len(maps[k]) for k in ("encoder", "decoder", "cross")] == [2, 2, 2]
    pad = sources() == 0  # (3,6)
    for w in maps["encoder"] + maps["cross"]:
        assert w.shape[:2] == (3, 2)
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
        assert torch.all(w.masked_select(pad[:, None, None, :].expand_as(w)) == 0)
    for w in maps["decoder"]:
        assert w.shape == (3, 2, 3, 3) and torch.all(w.triu(1) == 0)


def test_smoothed_loss_is_the_mixture_of_nll_and_uniform_over_real_targets():
    model = tiny()
    tgt = torch.tensor([[2, 4, 5, 3], [2, 6, 3, 0], [2, 3, 0, 0]])
    with torch.no_grad():
        logp = torch.log_softmax(model(sources(), tgt[:, :-1]), -1)  # (B,T,V)
        y, real = tgt[:, 1:], tgt[:, 1:] != 0
        nll = -logp.gather(2, y[..., None]).squeeze(-1)[real]
        uniform = -logp.mean(-1)[real]
        for eps in (0.0, 0.1, 0.3):
            expected = ((1 - eps) * nll + eps * uniform).mean()
            assert float(smoothed_loss(model, sources(), tgt, eps)) == pytest.approx(float(expected), abs=1e-5)


def test_bad_configs_are_refused():
    for bad, match in [(dict(d_model=10, heads=4), "must divide"), (dict(positions="rotary"), "positions must be"),
                       (dict(vocab=4), "more than the 4"), (dict(dropout=1.0), "dropout")]:
        with pytest.raises(ConfigError, match=match):
            TransformerConfig(**(dict(vocab=9) | bad))
    with pytest.raises(ConfigError, match="smoothing"):
        TransformerTrainConfig(smoothing=1.0)
    assert issubclass(ConfigError, CourseError)


# ------------------------------------------------------------------ training


def test_warmup_rises_to_the_peak_then_decays_as_one_over_root_step():
    lrs = [warmup_lr(s, 1e-3, 100) for s in range(1, 1001)]
    assert max(lrs) == pytest.approx(1e-3) and lrs.index(max(lrs)) == 99
    assert all(a < b for a, b in zip(lrs[:99], lrs[1:100])) and all(a > b for a, b in zip(lrs[99:], lrs[100:]))
    assert lrs[399] == pytest.approx(1e-3 * math.sqrt(100 / 400))


def test_average_weights_is_the_elementwise_mean():
    a, b = tiny(seed=0).state_dict(), tiny(seed=1).state_dict()
    avg = average_weights([a, b])
    for k in a:
        torch.testing.assert_close(avg[k], (a[k] + b[k]) / 2)
    with pytest.raises(ConfigError, match="no state dicts"):
        average_weights([])


def _reversal_pairs(n: int = 300) -> tuple[list, list]:
    g = torch.Generator().manual_seed(0)
    src = [[int(t) for t in torch.randint(4, 9, (int(k),), generator=g)]
           for k in torch.randint(1, 5, (n,), generator=g)]
    return [s + [3] for s in src], [[2, *reversed(s), 3] for s in src]


def test_training_learns_to_reverse_short_sequences():
    pairs = _reversal_pairs()
    model = tiny(vocab=9, d_model=32, heads=4, d_ff=64, dropout=0.0)
    before = corpus_loss(model, *pairs)
    cfg = TransformerTrainConfig(batch_size=32, epochs=40, lr=3e-3, warmup=50, smoothing=0.0, average_last=1)
    hist = fit_transformer(model, pairs, pairs, cfg)
    assert hist.valid_loss[-1] < 0.2 < before and hist.epochs == pytest.approx(40) and hist.steps == 40 * 10
    out = greedy_decode(model, pad_batch(pairs[0][:20]).tokens, max_len=6)
    assert sum(o == y[1:] for o, y in zip(out.ids, pairs[1][:20])) >= 18


def test_checkpoint_averaging_and_the_budget():
    pairs = _reversal_pairs(64)
    model = tiny(vocab=9)
    cfg = TransformerTrainConfig(batch_size=16, epochs=3, warmup=5, average_last=3)
    hist = fit_transformer(model, pairs, pairs, cfg)
    assert len(hist.valid_loss) == 3 and hist.averaged == (hist.averaged_valid_loss <= hist.valid_loss[-1])
    assert corpus_loss(model, *pairs) == pytest.approx(min(hist.averaged_valid_loss, hist.valid_loss[-1]))
    cut = fit_transformer(tiny(vocab=9), pairs, pairs, TransformerTrainConfig(batch_size=16, epochs=50,
                                                                               max_cpu_seconds=0.0))
    assert cut.epochs == pytest.approx(1 / 4) and cut.steps == 1 and len(cut.valid_loss) == 1


# ------------------------------------------------------------------ decoding


def test_greedy_and_beam_decoding_of_a_batch_equal_one_at_a_time():
    check_batch_decodes_as_one_at_a_time(greedy_decode, tiny(), sources(), 6)
    check_batch_decodes_as_one_at_a_time(lambda m, s, max_len: beam_decode(m, s, max_len, 3, 0.7), tiny(seed=1),
                                         sources(), 6)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("device", DEVICES)
def test_a_decoder_step_with_the_cache_gives_the_full_decoders_logits(norm_first, device):
    """Reading one piece at a time with the key-value cache gives, at every step, the logits of the whole
    decoder re-run on the prefix (the causal mask makes earlier positions ignore later ones)."""
    model, src = tiny(device=device, seed=3, norm_first=norm_first), sources(device)
    y = torch.tensor([[2, 5, 6, 4, 6], [2, 4, 4, 5, 3], [2, 6, 5, 5, 4]], device=device)  # (B,T), <bos> first
    memory, src_pad = model.encode(src)
    full = model.decode(memory, src_pad, y)  # (B,T,V)
    cache = start_cache(model, memory, src_pad)
    with torch.no_grad():
        steps = torch.stack([cached_step(model, cache, y[:, t]) for t in range(y.shape[1])], 1)  # (B,T,V)
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=1e-5)
    assert cache.t == 5 and cache.self_k[0].shape == (3, 2, 5, 4)  # (B,H,t,Dh)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoding_with_the_cache_gives_the_same_translations(norm_first):
    for seed in range(4):
        model = tiny(seed=seed, norm_first=norm_first)
        a, b = greedy_decode(model, sources(), 8), greedy_decode(model, sources(), 8, cache=False)
        assert a.ids == b.ids and a.scores == pytest.approx(b.scores, abs=1e-5)
        a, b = beam_decode(model, sources(), 8, 3, 0.7), beam_decode(model, sources(), 8, 3, 0.7, cache=False)
        assert a.ids == b.ids and a.scores == pytest.approx(b.scores, abs=1e-5)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_search_with_a_wide_beam_is_exhaustive_search(alpha, seed):
    model = tiny(seed=seed)
    src = sources()[:1, :4]
    score, ids = exhaustive_search(lambda y: model(src, y), V, 4, alpha)
    got = beam_decode(model, src, max_len=4, beam=40, alpha=alpha)
    assert got.ids[0] == ids and got.scores[0] == pytest.approx(score, abs=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_same_translation_on_every_device(device):
    cpu, there = tiny(), tiny(device=device)
    a, b = greedy_decode(cpu, sources(), 6), greedy_decode(there, sources(device), 6)
    assert a.ids == b.ids
    assert a.scores == pytest.approx(b.scores, abs=1e-4)
    assert F.mse_loss(cpu(sources(), sources()), there(sources(device), sources(device)).cpu()) < 1e-8


# ------------------------------------------------------------------ the benchmark and the checkpoint


@pytest.mark.slow
def test_benchmark_decoding_keeps_the_rest_of_the_json_and_times_both_decoders(tmp_path):
    out = tmp_path / "transformer.json"
    out.write_text(json.dumps({"systems": {"transformer_preln": {"alpha": 1.0}}, "targets": {"kept": True}}))
    proc = subprocess.run([sys.executable, "benchmarks/transformer.py", "--decoding", "--decode-verses", "3",
                           "--threads", "1", "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["targets"] == {"kept": True}
    dec = report["decoding"]
    assert dec["verses"] == 3 and dec["same_output"] is True and dec["alpha"] == 1.0
    for row in (dec["cache"], dec["no_cache"], dec["attention_rnn"]):
        assert row["greedy_s"] >= 0 and row["beam_s"] >= 0


def test_benchmark_warmup_study_keeps_the_rest_of_the_json_and_curves_every_run(tmp_path):
    out = tmp_path / "transformer.json"
    out.write_text(json.dumps({"systems": {}, "targets": {"kept": True}}))
    proc = subprocess.run([sys.executable, "benchmarks/transformer.py", "--tiny", "--warmup", "--jobs", "2",
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["targets"] == {"kept": True}
    study = report["warmup_study"]
    assert set(study["curves"]) == {"postln_no_warmup", "preln_no_warmup", "postln_warmup"}
    for runs in study["curves"].values():  # 2 seeds of 6 steps, in blocks of 3
        assert len(runs) == 2 and all(len(c) == 2 and all(math.isfinite(v) and v > 0 for v in c) for c in runs)
    assert study["setup"]["steps"] == 6 and study["setup"]["seeds"] == 2


@pytest.mark.slow
def test_benchmark_tiny_writes_every_system_and_a_checkpoint_that_loads(tmp_path):
    out = tmp_path / "transformer.json"
    proc = subprocess.run([sys.executable, "benchmarks/transformer.py", "--tiny", "--threads", "1", "--json",
                           str(out), "--save", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert set(report["systems"]) == {"attention_rnn", "transformer_postln", "transformer_preln"}
    for name, result in report["systems"].items():
        assert {"bleu", "chrf", "wall_s"} <= set(result) and 0 <= result["bleu"] <= 100, name
    assert [r["T"] for r in report["attention_speed"]] == [16, 32]
    assert report["setup"]["bleu_signature"].startswith("nrefs:1|case:lc")
    ckpt = load_checkpoint(tmp_path / "transformer_preln.pt", build=transformer_from_config)
    assert ckpt.model.config.norm_first and "tokenizer" in ckpt.extra


def test_committed_checkpoint_loads_and_translates(sub):
    ckpt = load_checkpoint(ROOT / "data" / "checkpoints" / "transformer_preln.pt", build=transformer_from_config)
    model = ckpt.model.float()
    loaded = load_subword_split(sub.split, ckpt.extra["tokenizer"])
    assert loaded.to_json() == sub.to_json()  # the BPE the model was trained with is the one learnt today
    src = pad_batch(loaded.source_ids("test")[:8]).tokens
    hyps = [loaded.decode(ids) for ids in greedy_decode(model, src, 60).ids]
    assert all(hyps) and sum(len(h.split()) for h in hyps) > 40

"""The RNN LM chapter's library: ``nlpcourse.data.lm_corpus`` (the protocol's split), ``nlpcourse.models.rnnlm``
(Elman / GRU / LSTM language models, stream scoring, truncated BPTT, sampling), ``nlpcourse.models.ffnn_lm``
(Bengio et al.'s feed-forward LM) and ``nlpcourse.models.lstm_cells`` (the cells written out).

Tiny models, one thread, seconds; the CUDA variants are marked ``gpu`` (skipped where there is none).
"""
from __future__ import annotations

import dataclasses
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import scipy.stats
import torch
import torch.nn.functional as F
from benchmark_support import load_benchmark
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import nlpcourse
from nlpcourse.data.lm_corpus import LM_UNK, lm_corpus, lm_tokens, split_stream
from nlpcourse.errors import ConfigError, CourseError, ShapeError, UnknownNameError
from nlpcourse.models.ffnn_lm import FFNNLM, FFNNLMConfig, context_windows, ffnn_log_probs, fit_ffnn
from nlpcourse.models.lstm_cells import CoupledPeepholeLSTM, LoopGRU
from nlpcourse.models.rnnlm import (
    CELLS,
    LMTrainConfig,
    RNNLMConfig,
    build_rnnlm,
    config_summary,
    detach_state,
    fit_lm,
    generate,
    lm_perplexity,
    perplexity_of,
    rnnlm_from_config,
    stream_log_probs,
)

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
V = 20


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def tiny(cell: str = "lstm", device: str = "cpu", **kw) -> nn.Module:
    cfg = dict(vocab_size=V, embed_dim=8, hidden_dim=8, layers=2, dropout=0.0) | kw
    return build_rnnlm(RNNLMConfig(cell=cell, **cfg), seed=0, device=device)


def full_pass_log_probs(model, stream: torch.Tensor) -> torch.Tensor:
    """log P(stream[j] | stream[:j]) for j >= 1, from one forward pass over the whole stream."""
    logits, _ = model(stream[None])  # (1,L,V)
    return F.log_softmax(logits[0, :-1].double(), -1).gather(1, stream[1:, None])[:, 0]


# ------------------------------------------------------------------ the corpus and its split


def test_split_is_by_position_with_the_training_vocabulary():
    tokens = list("aaabbc") * 10 + list("zzzz") * 5  # z only after the training part
    c = split_stream(tokens, max_vocab=2)
    assert (len(c.train), len(c.valid), len(c.test)) == (64, 8, 8)
    assert c.itos == [LM_UNK, "a", "b"]  # the 2 most frequent training tokens after <unk>
    assert c.decode(c.train[:6]) == "a a a b b <unk>"
    assert (c.test == 0).all()  # every z is <unk>
    assert torch.equal(c.context_before("test", 3), c.valid[-3:])
    assert len(c.context_before("train", 5)) == 0


def test_split_errors_name_the_problem():
    with pytest.raises(ConfigError, match="fractions"):
        split_stream(list("abcdefghij") * 3, fractions=(0.5, 0.5, 0.5))
    with pytest.raises(ConfigError, match="too few"):
        split_stream(list("abc"))
    with pytest.raises(ConfigError, match="level"):
        lm_tokens("text", "byte")
    with pytest.raises(UnknownNameError, match="part"):
        split_stream(list("abcdefghij") * 3).context_before("dev", 2)


def test_word_tokens_are_lower_case_a_to_z_words():
    assert lm_tokens("Mr. Darcy's 2 sisters--well!") == ["mr", "darcy", "s", "sisters", "well"]
    assert lm_tokens("a\n\n b", "char") == ["a", " ", "b"]


@pytest.mark.slow
def test_austen_follows_the_protocol():
    c = lm_corpus("austen")
    assert c.vocab_size == 10_001 and c.itos[0] == LM_UNK
    n = len(c.train) + len(c.valid) + len(c.test)
    assert abs(len(c.train) / n - 0.8) < 1e-4 and abs(len(c.valid) / n - 0.1) < 1e-4
    assert 0 < (c.test == 0).float().mean() < 0.1  # <unk> is rare but there


# ------------------------------------------------------------------ models


@pytest.mark.parametrize("cell", CELLS)
def test_forward_shapes_and_state_carry(cell):
    m = tiny(cell)
    x = torch.randint(0, V, (3, 7))
    logits, state = m(x)
    assert logits.shape == (3, 7, V)
    # reading the window in two halves with the state carried gives the same logits
    a, s = m(x[:, :4])
    b, _ = m(x[:, 4:], s)
    torch.testing.assert_close(torch.cat([a, b], 1), logits)


def test_config_errors():
    with pytest.raises(ConfigError, match="cell"):
        RNNLMConfig(vocab_size=5, cell="transformer")
    with pytest.raises(ConfigError, match="tie_weights"):
        RNNLMConfig(vocab_size=5, embed_dim=4, hidden_dim=8)
    with pytest.raises(ConfigError, match="dropout"):
        FFNNLMConfig(vocab_size=5, dropout=1.0)


#: Three frequency classes of the V = 20 words (none empty), as frequency_classes would number them.
WORD_CLASSES = [0] * 3 + [1] * 7 + [2] * 10


def test_class_softmax_config_errors():
    with pytest.raises(ConfigError, match="one class per word"):
        RNNLMConfig(vocab_size=V, embed_dim=8, hidden_dim=8, tie_weights=False, word_classes=[0, 1])
    with pytest.raises(ConfigError, match="tie_weights needs embed_dim == hidden_dim"):
        RNNLMConfig(vocab_size=V, embed_dim=6, hidden_dim=8, word_classes=WORD_CLASSES)


CLASS_OUTPUTS = pytest.mark.parametrize("tie", [False, True], ids=["own-embeddings", "tied-rows"])


@CLASS_OUTPUTS
def test_class_softmax_model_gives_a_distribution_and_its_loss_is_the_targets_nll(tie):
    """With word_classes the forward pass gives log-probabilities over all V words (each row sums to 1),
    the training loss (which scores only the targets' classes) is their mean negative log-likelihood at the
    targets, and stream scoring reads them as it reads logits."""
    m = tiny(word_classes=WORD_CLASSES, tie_weights=tie)
    assert not hasattr(m, "out") and m.head.n_classes == 3
    g = torch.Generator().manual_seed(2)
    x, y = torch.randint(0, V, (3, 7), generator=g), torch.randint(0, V, (3, 7), generator=g)
    lp, _ = m(x)  # (3,7,V)
    torch.testing.assert_close(lp.exp().sum(-1), torch.ones(3, 7))
    loss, _ = m.loss(x, y)
    torch.testing.assert_close(loss, -lp.gather(-1, y[..., None]).mean())
    context, ids = torch.randint(0, V, (9,), generator=g), torch.randint(0, V, (30,), generator=g)
    want = full_pass_log_probs(m, torch.cat([context, ids]))[len(context) - 1:]
    torch.testing.assert_close(stream_log_probs(m, ids, context, chunk=5), want.detach(), rtol=1e-6, atol=1e-6)
    assert stream_log_probs(m, ids)[0].item() == pytest.approx(-math.log(V))  # no context: uniform first


@pytest.mark.parametrize("output", [{}, {"word_classes": WORD_CLASSES}], ids=["softmax", "classes"])
def test_scores_of_the_top_states_are_the_forward_pass_output(output):
    """``scores`` maps any (...,H) of top-layer states to the (...,V) the forward pass returns, so code that
    needs the distribution at chosen states (the chapter's gradient through time) works for both heads."""
    m = tiny(**output).eval()
    x = torch.randint(0, V, (2, 6), generator=torch.Generator().manual_seed(4))
    out, _ = m.hidden(x)  # (2,6,H)
    want, _ = m(x)  # (2,6,V)
    torch.testing.assert_close(m.scores(out[:, -1]), want[:, -1])  # (2,H) -> (2,V)
    torch.testing.assert_close(F.softmax(m.scores(out), -1).sum(-1), torch.ones(2, 6))


def test_config_summary_counts_the_classes_and_keeps_the_rest():
    full = dataclasses.asdict(RNNLMConfig(vocab_size=V, word_classes=WORD_CLASSES))
    brief = config_summary(full)
    assert brief["word_classes"] == len(set(WORD_CLASSES)) and brief["vocab_size"] == V
    assert config_summary(dataclasses.asdict(RNNLMConfig(vocab_size=V)))["word_classes"] is None


@CLASS_OUTPUTS
def test_class_softmax_model_trains_and_round_trips_a_checkpoint(tmp_path, tie):
    stream = torch.arange(6).repeat(300)  # 0 1 2 3 4 5 0 1 ...: each token decides the next
    m = tiny(layers=1, word_classes=WORD_CLASSES, tie_weights=tie)
    before = lm_perplexity(m, stream[1000:1200])
    fit_lm(m, stream[:1000], stream[1000:1200], LMTrainConfig(batch_size=4, bptt=10, epochs=3, lr=0.03))
    after = lm_perplexity(m, stream[1000:1200])
    assert after < 1.5 < before
    nlpcourse.save_checkpoint(tmp_path / "lm.pt", m, m.config)
    again = nlpcourse.load_checkpoint(tmp_path / "lm.pt", build=rnnlm_from_config).model
    assert again.config.word_classes == WORD_CLASSES
    assert lm_perplexity(again, stream[1000:1200]) == pytest.approx(after, rel=1e-9)


def test_tied_weights_share_the_embedding_table():
    m = tiny()
    assert m.out.weight is m.embed.weight
    assert sum(p.numel() for p in m.parameters()) < sum(p.numel() for p in tiny(tie_weights=False,
                                                                                 embed_dim=8).parameters())


def test_tied_class_rows_are_the_embeddings_and_learn_from_both_ends():
    """Tied, word w's input vector is its row in its class's output block: one table, stored once, and a
    word seen only as input still moves its output row."""
    m, own = tiny(word_classes=WORD_CLASSES), tiny(word_classes=WORD_CLASSES, tie_weights=False)
    rows, _ = m.head.word_weights()  # (V,H) by word id
    x = torch.tensor([[4, 0, 17]])
    torch.testing.assert_close(m.embed(x), rows[x])
    assert not any(k.startswith("embed") for k in m.state_dict())
    saved = sum(p.numel() for p in own.parameters()) - sum(p.numel() for p in m.parameters())
    assert saved == V * 8 and float(rows.abs().max()) <= 0.1  # the table's size and the embeddings' scale
    m.loss(x, torch.tensor([[0, 0, 0]]))[0].backward()  # target 0 (class 0); word 17 only as input (class 2)
    block, within = m.head.word_out[2], int(m.head.within[17])
    assert block.weight.grad[within].abs().sum() > 0 and block.bias.grad is None  # no class-2 output formed


@pytest.mark.parametrize("chunk", [1, 5, 64])
@pytest.mark.parametrize("cell", CELLS)
def test_stream_scoring_equals_one_pass_whatever_the_chunk(cell, chunk):
    m = tiny(cell)
    g = torch.Generator().manual_seed(1)
    context, ids = torch.randint(0, V, (9,), generator=g), torch.randint(0, V, (30,), generator=g)
    got = stream_log_probs(m, ids, context, chunk=chunk)
    want = full_pass_log_probs(m, torch.cat([context, ids]))[len(context) - 1:]
    torch.testing.assert_close(got, want.detach(), rtol=1e-6, atol=1e-6)


def test_without_context_the_first_token_is_uniform():
    m = tiny()
    ids = torch.randint(0, V, (12,))
    lp = stream_log_probs(m, ids)
    assert len(lp) == 12 and lp[0].item() == pytest.approx(-math.log(V))


def test_perplexity_edge_cases():
    """A model sure of every token has perplexity 1; a uniform one has V."""
    m = tiny("elman", layers=1)
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
    ids = torch.randint(0, V, (50,))
    assert lm_perplexity(m, ids, ids[:3]) == pytest.approx(V)  # all logits 0: uniform
    with torch.no_grad():
        m.out.bias[4] = 1e4  # almost all mass on token 4
    assert lm_perplexity(m, torch.full((20,), 4), torch.tensor([4])) == pytest.approx(1.0)


def test_detach_state_keeps_values_and_cuts_the_graph():
    h = torch.randn(2, 3, requires_grad=True) * 2
    for s in (h, (h, h + 1)):
        d = detach_state(s)
        for a, b in zip(s if isinstance(s, tuple) else (s,), d if isinstance(d, tuple) else (d,)):
            assert torch.equal(a, b) and not b.requires_grad


def test_fit_lm_learns_a_repeating_stream():
    stream = torch.arange(6).repeat(200) % V  # 0 1 2 3 4 5 0 1 ...
    m = tiny("lstm", layers=1, tie_weights=False)  # tied at 8 units, Adam sits at the uniform 1/6 here
    cfg = LMTrainConfig(batch_size=4, bptt=10, epochs=3, lr=0.03, eval_tokens=None, log_every=10)
    hist = fit_lm(m, stream[:1000], stream[1000:], cfg, valid_context=stream[990:1000])
    assert hist.valid_ppl[-1] < 1.2  # a period-6 pattern is nearly certain once learned
    assert hist.train_loss[-1] < hist.train_loss[0]


def test_generate_top_1_is_greedy_and_banned_ids_never_appear():
    m = tiny()
    prompt = torch.tensor([1, 2, 3])
    out = generate(m, prompt, 6, top_k=1)
    seq, state, greedy = prompt, None, []
    logits, state = m(seq[None])
    for _ in range(6):
        nxt = int(logits[0, -1].argmax())
        greedy.append(nxt)
        logits, state = m(torch.tensor([[nxt]]), state)
    assert out.tolist() == greedy
    g = torch.Generator().manual_seed(0)
    drawn = generate(m, prompt, 200, temperature=5.0, generator=g, banned=(0, 7))
    assert not ((drawn == 0) | (drawn == 7)).any()
    with pytest.raises(ConfigError, match="temperature"):
        generate(m, prompt, 1, temperature=0)


def test_ffnn_lm_windows_scores_and_training():
    stream = torch.arange(10)
    ctx, tgt = context_windows(stream, 3)
    assert ctx[0].tolist() == [0, 1, 2] and tgt[0] == 3 and len(tgt) == 7
    m = FFNNLM(FFNNLMConfig(vocab_size=V, context=3, embed_dim=4, hidden_dim=8, dropout=0.0))
    ids = torch.randint(0, V, (40,))
    lp = ffnn_log_probs(m, ids, torch.tensor([5, 6, 7]))
    full = torch.cat([torch.tensor([5, 6, 7]), ids])
    want = F.log_softmax(m(full.unfold(0, 3, 1)[:-1]).double(), -1).gather(1, ids[:, None])[:, 0]
    torch.testing.assert_close(lp, want.detach())
    with pytest.raises(ConfigError, match="context"):
        ffnn_log_probs(m, ids, torch.tensor([1]))
    rep = torch.arange(4).repeat(300)
    hist = fit_ffnn(m, rep[:1000], rep[1000:], rep[997:1000], epochs=3, batch_size=32, lr=0.02)
    assert hist.valid_ppl[-1] < 1.1



def _score_after_training(train_fn, score) -> tuple[list[float], int | None, float]:
    """Train on 0 1 2 3 ... and validate on the stream reversed: the better the model learns the
    training pattern, the worse its validation, so an earlier epoch is the best one."""
    up = torch.arange(6).repeat(200) % V
    down = up.flip(0)
    hist = train_fn(up[:1000], down[:300], down[300:310])
    return hist.valid_ppl, hist.best_epoch, score(down[:300], down[300:310])


@pytest.mark.parametrize("device", DEVICES)
def test_weight_drop_drops_recurrent_weights_only_while_training(device):
    x = torch.randint(0, V, (3, 7), device=device)
    dropped, plain = tiny("lstm", device, weight_drop=0.5), tiny("lstm", device)
    dropped.eval()
    plain.eval()
    assert torch.equal(dropped(x)[0], plain(x)[0])  # evaluation: the whole matrices
    dropped.train()
    torch.manual_seed(1)
    a = dropped(x)[0]
    assert not torch.allclose(a, plain(x)[0])  # training: a different recurrence ...
    a.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for n, p in dropped.rnn.named_parameters()
               if n.startswith("weight_hh"))  # ... whose gradient reaches the parameters
    with pytest.raises(ConfigError, match="weight_drop"):
        RNNLMConfig(vocab_size=V, weight_drop=1.0)


def test_after_weight_dropped_training_the_model_scores_with_its_own_weights():
    stream = torch.arange(6).repeat(60) % V
    m = tiny("lstm", weight_drop=0.5)
    fit_lm(m, stream[:300], stream[300:], LMTrainConfig(batch_size=4, bptt=10, lr=0.03, eval_tokens=None))
    fresh = rnnlm_from_config(dataclasses.asdict(m.config))
    fresh.load_state_dict(m.state_dict())  # a model that never ran on dropped copies
    assert lm_perplexity(m, stream[300:]) == pytest.approx(lm_perplexity(fresh, stream[300:]), rel=1e-12)


def test_average_ends_with_the_mean_of_the_iterates():
    stream = torch.arange(6).repeat(60) % V

    def run(steps: int, average: bool = False) -> list[torch.Tensor]:
        m = tiny("lstm", layers=1)
        cfg = LMTrainConfig(batch_size=4, bptt=10, lr=1.0, optimizer="sgd", max_steps=steps, average=average)
        hist = fit_lm(m, stream[:300], stream[300:], cfg)
        assert hist.valid_ppl == [lm_perplexity(m, stream[300:300 + cfg.eval_tokens])]  # the weights it ends with
        return [p.detach() for p in m.parameters()]

    iterates = [run(k) for k in (1, 2, 3)]  # SGD without dropout: the same path each time
    for mean, *ps in zip(run(3, average=True), *iterates):
        assert torch.allclose(mean, sum(ps) / 3, atol=1e-6)
        assert not torch.allclose(mean, ps[-1])


def test_keep_best_ends_with_the_best_validation_weights():
    m = tiny("lstm", layers=1, tie_weights=False)
    cfg = LMTrainConfig(batch_size=4, bptt=10, epochs=4, lr=0.03, eval_tokens=None, keep_best=True)
    curve, best, final = _score_after_training(
        lambda tr, va, ctx: fit_lm(m, tr, va, cfg, valid_context=ctx), lambda va, ctx: lm_perplexity(m, va, ctx))
    assert best == curve.index(min(curve)) < len(curve) - 1  # the last epoch was not the best ...
    assert final == pytest.approx(min(curve))  # ... and the model ends with the best one's weights
    f = FFNNLM(FFNNLMConfig(vocab_size=V, context=3, embed_dim=4, hidden_dim=8, dropout=0.0))
    curve, best, final = _score_after_training(
        lambda tr, va, ctx: fit_ffnn(f, tr, va, ctx, epochs=4, batch_size=32, lr=0.02, keep_best=True),
        lambda va, ctx: perplexity_of(ffnn_log_probs(f, va, ctx)))
    assert best == curve.index(min(curve)) < len(curve) - 1
    assert final == pytest.approx(min(curve))


def test_gated_cells_start_remembering():
    for cell in ("lstm", "gru"):
        m = tiny(cell, layers=1)
        H = m.config.hidden_dim
        assert torch.equal(m.rnn.bias_ih_l0[H:2 * H], torch.ones(H)), cell  # LSTM's f, GRU's z


# ------------------------------------------------------------------ the cells written out


@pytest.mark.parametrize("device", DEVICES)
def test_loop_gru_equals_nn_gru(device):
    torch.manual_seed(0)
    gru = nn.GRU(5, 7, batch_first=True).to(device)
    loop = LoopGRU(5, 7).to(device)
    loop.load_state_dict(gru.state_dict())
    x = torch.randn(2, 4, 5, device=device)
    torch.testing.assert_close(loop(x)[0], gru(x)[0], rtol=1e-4, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(q_bias=st.floats(-8, 8), T=st.integers(1, 6))
def test_coupled_lstm_cell_is_a_convex_mix_of_old_cell_and_candidate(q_bias, T):
    """c_t = (1 - q) c_{t-1} + q tanh(...): each |c_t| stays within max(|c_{t-1}|, 1)."""
    torch.manual_seed(0)
    cell = CoupledPeepholeLSTM(3, 4)
    with torch.no_grad():
        cell.W.bias[:4] = q_bias
    c0 = torch.randn(2, 4) * 3
    _, (_, c) = cell(torch.randn(2, T, 3), (torch.zeros(2, 4), c0))
    assert (c.abs() <= torch.maximum(c0.abs(), torch.ones_like(c0)) + 1e-6).all()


def test_cells_reject_wrong_input_shapes():
    with pytest.raises(ShapeError, match=r"\(B,T,5\)"):
        LoopGRU(5, 3)(torch.randn(2, 4))
    with pytest.raises(ShapeError, match=r"\(B,T,5\)"):
        CoupledPeepholeLSTM(5, 3)(torch.randn(2, 4, 6))
    assert issubclass(ShapeError, CourseError)


@pytest.mark.gpu
@pytest.mark.parametrize("output", [{}, {"word_classes": WORD_CLASSES, "tie_weights": False},
                                    {"word_classes": WORD_CLASSES}], ids=["softmax", "classes", "tied-classes"])
def test_cuda_model_scores_like_the_cpu_model(output):
    cpu, gpu = tiny("lstm", **output), tiny("lstm", "cuda", **output)
    ids = torch.randint(0, V, (40,))
    torch.testing.assert_close(stream_log_probs(gpu, ids, ids[:4]), stream_log_probs(cpu, ids, ids[:4]),
                               rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ the training script and the benchmark


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("output", [("--classes", "0"), ("--classes", "7", "--dropout", "0.1")],
                         ids=["softmax", "classes"])
def test_train_script_tiny_writes_a_checkpoint_that_loads_and_scores(tmp_path, output):
    out = tmp_path / "lm.pt"
    proc = _run("scripts/train_rnnlm.py", "--tiny", "--out", str(out), *output)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads(out.with_suffix(".json").read_text())
    ckpt = nlpcourse.load_checkpoint(out, build=rnnlm_from_config)
    corpus = lm_corpus("austen", "word", 10_000, 30_000)
    assert ckpt.extra["itos"] == corpus.itos
    ppl = lm_perplexity(ckpt.model.float(), corpus.test, corpus.context_before("test", 200))
    assert ppl == pytest.approx(meta["test_ppl"], rel=0.02)  # float16 weights: a little off
    assert ppl < corpus.vocab_size  # it learned something: better than uniform
    if output[1] == "0":
        assert ckpt.model.head is None and ckpt.model.out.weight is ckpt.model.embed.weight
    else:
        assert ckpt.model.head.n_classes == 7 and ckpt.model.config.tie_weights and ckpt.model.config.dropout == 0.1


@pytest.mark.slow
def test_train_script_finetunes_its_first_stage_once(tmp_path):
    out = tmp_path / "lm.pt"
    assert _run("scripts/train_rnnlm.py", "--tiny", "--out", str(out)).returncode == 0
    first = json.loads(out.with_suffix(".json").read_text())
    proc = _run("scripts/train_rnnlm.py", "--tiny", "--finetune", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    meta = json.loads(out.with_suffix(".json").read_text())
    ckpt = nlpcourse.load_checkpoint(out, build=rnnlm_from_config)
    assert meta["init"]["test_ppl"] == first["test_ppl"] and ckpt.extra["init"]["history"]
    assert ckpt.model.config.weight_drop == 0.5 and meta["train_settings"]["average"]
    assert meta["valid_ppl"] < first["valid_ppl"]  # the tiny first stage is far from its best
    again = _run("scripts/train_rnnlm.py", "--tiny", "--finetune", "--out", str(out))
    assert again.returncode != 0 and "already" in again.stderr  # a second stage on top: refused, file kept
    assert json.loads(out.with_suffix(".json").read_text()) == meta


@pytest.mark.slow
def test_benchmark_tiny_writes_every_system(tmp_path):
    out = tmp_path / "rnnlm.json"
    proc = _run("benchmarks/rnnlm.py", "--tiny", "--seeds", "2", "--jobs", "2", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    systems = report["systems"]
    assert set(systems) == {"unigram", "kn3", "kn5", "ffnn", "elman", "gru", "lstm", "lstm_long", "lstm_class"}
    for name, result in systems.items():
        assert {"test_ppl", "valid_ppl", "wall_s"} <= set(result), name
    neural = [systems[n] for n in ("ffnn", "elman", "gru", "lstm")]  # one budget; lstm_long has its own
    assert len({r["cpu_budget_s"] for r in neural}) == 1  # one budget for all
    assert systems["lstm_long"]["cpu_budget_s"] == systems["lstm_class"]["cpu_budget_s"] == 2 * neural[0][
        "cpu_budget_s"]
    assert {"lstm_long_over_kn5", "lstm_class_over_kn5"} <= set(report["targets"])
    for r in neural:
        assert r["seeds"] == len(r["runs"]) == 2 and [x["seed"] for x in r["runs"]] == [0, 1]
        assert r["runs"][0]["test_ppl"] != r["runs"][1]["test_ppl"]  # the seed changes the run
        assert r["test_ppl"] == pytest.approx(sum(x["test_ppl"] for x in r["runs"]) / 2)
        assert r["test_ppl_std"] > 0 and r["test_ppl_ci95"][0] < r["test_ppl"] < r["test_ppl_ci95"][1]
        for x in r["runs"]:  # early stopping: the kept weights are the best evaluation's
            assert x["valid_ppl"] == pytest.approx(min(x["valid_ppl_per_epoch"]), rel=1e-6)
            assert 0 < x["mix_kn5"]["weight"] < 1
            assert x["mix_kn5"]["valid_ppl"] <= min(x["valid_ppl"], systems["kn5"]["valid_ppl"]) + 1e-6
    ranked = [row["system"] for row in report["ranking"]]
    assert sorted(ranked) == sorted(systems) and ranked[-1] == "unigram"
    assert [systems[n]["test_ppl"] for n in ranked] == sorted(systems[n]["test_ppl"] for n in ranked)
    assert systems["kn5"]["test_ppl"] < systems["lstm"]["test_ppl"]  # 20 windows of training
    assert report["speed"]["nn_lstm_tokens_per_s"] > 0 and report["speed"]["loop_gru_tokens_per_s"] > 0
    assert "lstm_over_kn5" in report["targets"] and "lstm - kn5" in report["pairs"]


def test_ranking_calls_a_difference_inside_the_noise_a_tie():
    bench = load_benchmark("rnnlm")
    systems = {"a": {"test_ppl": 100.0, "runs": [{"test_ppl": x} for x in (99.0, 100.0, 101.0)]},
               "b": {"test_ppl": 100.5, "runs": [{"test_ppl": x} for x in (99.0, 101.0, 101.5)]},
               "c": {"test_ppl": 150.0}, "d": {"test_ppl": 150.5}}  # n-gram models: one value each
    rows = bench.ranking(systems)
    assert [r["system"] for r in rows] == ["a", "b", "c", "d"]
    assert rows[0]["tie_with_next"] and not rows[1]["tie_with_next"]
    assert rows[1]["diff_to_next"] == pytest.approx(-49.5) and "next" not in rows[3]
    assert rows[2]["diff_ci95"] == pytest.approx([-0.5, -0.5]) and not rows[2]["tie_with_next"]  # exact
    systems = {"lstm": systems["a"], "gru": systems["b"], "kn5": systems["c"]}
    got = bench.pairs(systems)
    assert set(got) == {"gru - lstm", "gru - kn5", "lstm - kn5"}  # in the order of NEURAL, kn5 last
    assert got["gru - lstm"]["tie"] and not got["lstm - kn5"]["tie"]
    assert got["lstm - kn5"]["diff"] == pytest.approx(-50.0)
    # b against a constant: the one-sample t interval of b's mean
    half = scipy.stats.t.ppf(0.975, 2) * statistics.stdev([99.0, 101.0, 101.5]) / 3 ** 0.5
    assert rows[1]["diff_ci95"] == pytest.approx([-49.5 - half, -49.5 + half])
    assert bench.mean_ci95([1.0, 2.0, 3.0]) == pytest.approx([2 - 4.302653 / 3 ** 0.5, 2 + 4.302653 / 3 ** 0.5])


def test_benchmark_rejects_unknown_systems():
    proc = _run("benchmarks/rnnlm.py", "--systems", "kn5,transformer")
    assert proc.returncode == 2 and "transformer" in proc.stderr


def test_committed_checkpoints_load_with_the_current_model_class():
    for name in ("austen", "shakespeare"):
        path = ROOT / "data" / "checkpoints" / f"rnnlm_{name}.pt"
        if not path.is_file():
            pytest.skip(f"{path.name} not trained yet")
        ckpt = nlpcourse.load_checkpoint(path, build=rnnlm_from_config)
        assert ckpt.model.config.vocab_size == len(ckpt.extra["itos"])

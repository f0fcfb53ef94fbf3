"""The pretraining chapter's library, first part: ``nlpcourse.data.wordpiece`` (WordPiece learnt with Hugging
Face ``tokenizers``, BERT's pair format) and ``nlpcourse.models.bert`` (a small BERT of PyTorch's post-LN
layers, equal to Hugging Face's ``BertForPreTraining`` holding its weights; the masking rule, checked
statistically), with tiny runs of ``scripts/pretrain_bert.py`` in one process and under ``torchrun``.

Tiny models, one thread, seconds; the CUDA variants are marked ``gpu`` (skipped where there is none).
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpcourse.data.corpora import load_reviews
from nlpcourse.data.wordpiece import CLS_ID, MASK_ID, PAD_ID, SEP_ID, SPECIALS, WordPieces, train_wordpiece
from nlpcourse.errors import ConfigError, CourseError, FormatError, ShapeError
from nlpcourse.models.bert import (
    IGNORE,
    BertConfig,
    bert_from_config,
    build_bert,
    mlm_corrupt,
    mlm_loss,
    to_huggingface,
)
from nlpcourse.torchrun import torchrun
from nlpcourse.train import load_checkpoint, save_checkpoint
from scripts.pretrain_bert import TINY, PretrainSettings, RunOptions, World, pack_segments, start
from scripts.pretrain_bert import main as pretrain_main

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "pretrain_bert.py"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
V = 40

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def wp():
    return WordPieces(train_wordpiece([r.text for r in load_reviews()[:4000]], 3000))


def tiny(device: str = "cpu", seed: int = 0, **kw):
    cfg = dict(vocab=V, d_model=16, heads=2, layers=2, d_ff=32, max_len=12, dropout=0.0) | kw
    model = build_bert(BertConfig(**cfg), seed=seed, device=device).eval()
    with torch.no_grad():  # weights far from BERT's small initialisation, so that a wrong wiring shows
        g = torch.Generator().manual_seed(seed)
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g).to(device))
    return model


def pairs(device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.tensor([[CLS_ID, 10, 11, 12, SEP_ID, 20, 21, SEP_ID], [CLS_ID, 30, 31, SEP_ID, 33, SEP_ID, 0, 0]])
    segments = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1, 0, 0]])
    return ids.to(device), segments.to(device)


# ------------------------------------------------------------------ WordPiece


def test_wordpiece_has_the_specials_first_and_cuts_rare_words_into_marked_pieces(wp):
    assert [wp.tokenizer.id_to_token(i) for i in range(len(SPECIALS))] == list(SPECIALS)
    assert wp.vocab_size == 3000
    pieces = wp.pieces("An unbelievably overwrought film.")
    assert pieces[0] == "an" and any(p.startswith("##") for p in pieces), pieces
    assert wp.decode(wp.ids("An Unbelievably overwrought FILM.")) == "an unbelievably overwrought film."
    assert UNK_free(wp, "Qué película.") and wp.decode(wp.ids("Qué")) == "que", "accents stripped"


def UNK_free(wp, text: str) -> bool:  # noqa: N802
    return 1 not in wp.ids(text)


def test_wordpiece_learning_agrees_up_to_ties_and_the_saved_vocabulary_is_exact(wp):
    """Two learnings share all but the last few pieces (ties broken in hash-map order, see the module); the
    vocabulary saved with a model is what makes runs reproducible."""
    again = WordPieces(train_wordpiece([r.text for r in load_reviews()[:4000]], 3000))
    ours, theirs = set(wp.tokenizer.get_vocab()), set(again.tokenizer.get_vocab())
    assert len(ours & theirs) >= 0.99 * len(ours)
    loaded = WordPieces.from_json(wp.to_json())
    text = " ".join(r.text for r in load_reviews()[4000:4200])
    assert loaded.ids(text) == wp.ids(text) and loaded.to_json() == wp.to_json()


def test_pair_format_segments_and_truncation(wp):
    one = wp.pair("A good film.")
    assert one.ids[0] == CLS_ID and one.ids[-1] == SEP_ID and set(one.segments) == {0}
    two = wp.pair("A good film.", "It was not.")
    n = len(wp.ids("A good film.")) + 2
    assert two.segments == [0] * n + [1] * (len(two.ids) - n)
    assert two.ids.count(SEP_ID) == 2 and two.ids[n - 1] == SEP_ID
    short = wp.pair("a very very very very long first sentence", "short", max_len=10)
    assert len(short.ids) == 10 and short.segments.count(1) == len(wp.ids("short")) + 1, "the longer text is cut"


def test_wordpiece_refuses_bad_sizes_and_bad_files(wp):
    with pytest.raises(ConfigError, match="vocab_size"):
        train_wordpiece(["a b"], 5)
    with pytest.raises(FormatError, match="not a saved tokenizer"):
        WordPieces.from_json("{")
    with pytest.raises(ConfigError, match="max_len"):
        wp.pair("a", "b", max_len=4)


# ------------------------------------------------------------------ the model


@pytest.mark.parametrize("device", DEVICES)
def test_same_logits_as_hugging_faces_bert_for_pretraining(device):
    model = tiny(device)
    hf = to_huggingface(model)
    ids, segments = pairs(device)
    with torch.no_grad():
        h = model(ids, segments)
        theirs = hf(input_ids=ids, token_type_ids=segments, attention_mask=(ids != PAD_ID).long())
    real = ids != PAD_ID
    mlm = model.mlm_logits(h)
    assert mlm.abs().max() > 1.0, "logits large enough for the comparison to mean something"
    assert torch.allclose(mlm[real], theirs.prediction_logits[real], atol=1e-4, rtol=1e-4)
    assert torch.allclose(model.nsp_logits(h), theirs.seq_relationship_logits, atol=1e-4, rtol=1e-4)


def test_evaluation_computes_what_training_computes_and_leaves_the_fast_path_setting_alone():
    """The encoder never takes PyTorch's inference fast path, whose fused CUDA layer gave outputs 1.4e-3 away
    from the layer's own (nlpcourse.models.bert._math_path): in evaluation, without gradients, the hidden
    states are those of training mode (no dropout here) to the bit, and the global setting is as it was."""
    model, (ids, segments) = tiny(), pairs()
    with torch.no_grad():
        evaluated = model.eval()(ids, segments)
        trained = model.train()(ids, segments)
    model.eval()
    assert torch.equal(evaluated, trained)
    assert torch.backends.mha.get_fastpath_enabled()


def test_padding_changes_nothing_and_segments_matter():
    model = tiny()
    ids, segments = pairs()
    longer = torch.cat([ids, torch.zeros(2, 3, dtype=torch.long)], dim=1)
    with torch.no_grad():
        a = model(ids, segments)
        b = model(longer, torch.cat([segments, torch.zeros(2, 3, dtype=torch.long)], dim=1))
        flipped = model(ids, 1 - segments)
    real = ids != PAD_ID
    assert torch.allclose(a[real], b[:, :8][real], atol=1e-5)
    assert not torch.allclose(a[real], flipped[real], atol=1e-3)


def test_bad_configs_and_inputs_are_refused():
    for bad in (dict(vocab=5), dict(vocab=V, d_model=10, heads=3), dict(vocab=V, layers=0),
                dict(vocab=V, dropout=1.0)):
        with pytest.raises(ConfigError):
            BertConfig(**bad)
    with pytest.raises(ShapeError, match="max_len"):
        tiny()(torch.full((1, 13), 7))
    assert issubclass(ConfigError, CourseError)
    model = tiny()
    again = bert_from_config(model.config.to_dict())
    again.load_state_dict(model.state_dict())
    ids, segments = pairs()
    assert torch.equal(again.eval()(ids, segments), model(ids, segments))


# ------------------------------------------------------------------ masking


def test_masking_follows_the_15_percent_and_80_10_10_rule():
    """On 400,000 pieces the rates are within 5 standard deviations of the rule's (binomial counts)."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(len(SPECIALS), 1000, (400, 1000), generator=g)
    ids[:, 0], ids[:, -1] = CLS_ID, SEP_ID
    ids[::7, -100:] = PAD_ID
    inputs, labels = mlm_corrupt(ids, torch.Generator().manual_seed(1), vocab=1000)
    eligible = ids >= len(SPECIALS)
    chosen = labels != IGNORE
    assert not chosen[~eligible].any(), "specials and padding are never chosen"
    assert torch.equal(inputs[~chosen], ids[~chosen]), "what is not chosen is left alone"
    assert torch.equal(labels[chosen], ids[chosen]), "a label is the original piece"

    def near(count: int, n: int, p: float) -> bool:
        return abs(count - n * p) <= 5 * math.sqrt(n * p * (1 - p))
    n = int(eligible.sum())
    assert near(int(chosen.sum()), n, 0.15)
    k = int(chosen.sum())
    masked = int((inputs[chosen] == MASK_ID).sum())
    kept = int((inputs[chosen] == ids[chosen]).sum())
    assert near(masked, k, 0.8)
    assert near(kept, k, 0.1 + 0.1 / (1000 - len(SPECIALS))), "kept: 10%, plus random draws of the same piece"
    replaced = inputs[chosen & (inputs != MASK_ID) & (inputs != ids)]
    assert replaced.min() >= len(SPECIALS) and replaced.max() < 1000, "random pieces are never specials"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), rate=st.floats(0.05, 0.5))
def test_masking_is_reproducible_and_loss_reads_chosen_positions_only(seed, rate):
    ids, segments = pairs()
    a = mlm_corrupt(ids, torch.Generator().manual_seed(seed), rate, vocab=V)
    b = mlm_corrupt(ids, torch.Generator().manual_seed(seed), rate, vocab=V)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    labels = a[1].clone()
    labels[0, 1] = 12  # one chosen position for sure
    model = tiny()
    with torch.no_grad():
        loss = mlm_loss(model, a[0], labels, segments)
        logits = model.mlm_logits(model(a[0], segments))
    picked = labels != IGNORE
    want = -torch.log_softmax(logits, -1)[picked].gather(-1, labels[picked][:, None]).mean()
    assert float(loss) == pytest.approx(float(want), rel=1e-5)


def test_masking_refuses_a_bad_rate():
    with pytest.raises(ConfigError, match="rate"):
        mlm_corrupt(pairs()[0], torch.Generator(), rate=1.5)


# ------------------------------------------------------------------ scripts/pretrain_bert.py


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory, wp):
    path = tmp_path_factory.mktemp("vocab") / "wordpiece.json"
    path.write_text(WordPieces(train_wordpiece([r.text for r in load_reviews()[:2000]], 600)).to_json())
    return path


def pretrain(tmp_path, name: str, *args: str, nproc: int = 0) -> tuple[list[float], Path]:
    """A tiny run of the script (dropout 0, one thread per process), in this process's way or under torchrun with
    ``nproc`` processes: its losses and its checkpoint."""
    out, log = tmp_path / f"{name}.pt", tmp_path / f"{name}.jsonl"
    args = ("--tiny", "--dropout", "0", "--threads", "1", "--out", str(out), "--loss-log", str(log), *args)
    env = os.environ | {"NLPCOURSE_PROGRESS": "0"}
    if nproc:
        torchrun(SCRIPT, args, nproc, env=env, timeout=300, fresh=[out, log])
    else:
        proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
    return [json.loads(line)["loss"] for line in log.read_text().splitlines()], out


def test_torchrun_with_two_processes_reproduces_the_one_process_loss_curve(tmp_path, vocab_file):
    """DDP on 2 processes (gloo), the same global batch: the same losses to 1e-5 (the sums' order differs),
    and gradient accumulation over 2 micro-batches in one process too."""
    vocab = ("--tokenizer", str(vocab_file), "--steps", "6")
    one, _ = pretrain(tmp_path, "one", *vocab)
    two, _ = pretrain(tmp_path, "two", *vocab, nproc=2)
    accumulated, _ = pretrain(tmp_path, "acc", *vocab, "--accumulate", "2")
    assert len(one) == len(two) == len(accumulated) == 6
    assert one[-1] < one[0], "it learns"
    assert two == pytest.approx(one, rel=1e-5) and accumulated == pytest.approx(one, rel=1e-5)


def test_a_stopped_run_resumed_ends_where_a_straight_run_does(tmp_path, vocab_file):
    """The same weights and losses; the loss log holds each step once, though the stopped run had logged a step
    after its last save (as a killed one does), and its times run on from the first part's."""
    straight, a = pretrain(tmp_path, "straight", "--tokenizer", str(vocab_file), "--steps", "5")
    first, b = pretrain(tmp_path, "stopped", "--tokenizer", str(vocab_file), "--steps", "5", "--stop-at", "2")
    assert len(first) == 2
    stopped_seconds = load_checkpoint(b).extra["seconds"]
    with open(tmp_path / "stopped.jsonl", "a") as fh:  # a step logged after the last save
        fh.write(json.dumps({"step": 3, "loss": 9.0, "pieces": 1, "seconds": 9.0}) + "\n")
    resumed, b = pretrain(tmp_path, "stopped", "--resume", str(b) + ".state", "--steps", "5")
    assert resumed == straight, "the log: steps 1-2 of the first part, 3-5 of the resumed one"
    ours, theirs = load_checkpoint(a, build=bert_from_config), load_checkpoint(b, build=bert_from_config)
    assert all(torch.equal(ours.state_dict[k], theirs.state_dict[k]) for k in ours.state_dict)
    assert ours.extra["losses"] == straight and WordPieces.from_json(ours.extra["tokenizer"]).vocab_size == 600
    assert theirs.extra["seconds"] > stopped_seconds > 0  # the time of both parts, not the last one's
    times = [json.loads(line)["seconds"] for line in (tmp_path / "stopped.jsonl").read_text().splitlines()]
    assert times == sorted(times) and times[2] > stopped_seconds, times
    log = [json.loads(line) for line in (tmp_path / "straight.jsonl").read_text().splitlines()]
    assert all(r["pieces"] > 16 for r in log), "pieces per step: more than one per snippet"


def test_segments_pack_whole_sentences_of_one_corpus_and_lose_no_piece(wp):
    """Consecutive sentences fill a segment as far as they fit; a segment never holds two corpora; a sentence
    longer than a segment is cut into segments of its own; every piece is kept, in order."""
    corpora = [["the film is good .", "a dull , dull story", "it was long"] * 4,
               [" ".join(["remarkable performances"] * 20), "short one"]]
    segments = pack_segments(wp, corpora, 16)
    assert all(len(seg) <= 16 and seg[0] == CLS_ID and seg[-1] == SEP_ID for seg in segments)
    inner = [seg[1:-1] for seg in segments]
    sentences = [wp.ids(t) for texts in corpora for t in texts]
    assert sum(inner, []) == sum(sentences, [])
    first = sum(len(wp.ids(t)) for t in corpora[0])
    ends = [sum(len(x) for x in inner[:k + 1]) for k in range(len(inner))]
    assert first in ends, "the first corpus ends where a segment ends"
    lengths = [len(ids) for ids in sentences[:12]]
    assert len(inner[0]) == max(sum(lengths[:k]) for k in range(13) if sum(lengths[:k]) <= 14)
    long = wp.ids(corpora[1][0])
    assert len(long) > 14 and inner[ends.index(first) + 1] == long[:14]


def test_a_stage_started_from_a_checkpoint_has_its_weights_and_vocabulary(tmp_path, vocab_file):
    """--init: the checkpoint's weights and vocabulary, a new optimiser and schedule, the earlier stage kept in
    the record; --corpus english draws its segments from the course's English."""
    losses, first = pretrain(tmp_path, "english", "--corpus", "english", "--max-sentences", "200",
                             "--tokenizer", str(vocab_file), "--steps", "4")
    earlier = load_checkpoint(first)
    assert len(losses) == 4 and earlier.extra["settings"]["corpus"] == "english"
    settings = PretrainSettings(**(TINY | {"steps": 3}))
    run = start(settings, RunOptions(tmp_path / "next.pt", init=first), World(0, 1, torch.device("cpu")))
    assert all(torch.equal(v, earlier.state_dict[k]) for k, v in run.model.state_dict().items())
    assert run.wp.to_json() == earlier.extra["tokenizer"] and run.losses == [] and run.settings.corpus == "reviews"
    assert run.stages == [{"settings": earlier.extra["settings"], "losses": losses,
                           "seconds": earlier.extra["seconds"]}]
    assert run.opt.state_dict()["state"] == {} and run.sched.last_epoch == 0
    rest, second = pretrain(tmp_path, "reviews", "--init", str(first), "--steps", "3")
    assert len(rest) == 3 and load_checkpoint(second).extra["stages"] == json.loads(json.dumps(run.stages))


def test_pretraining_refuses_bad_settings_with_a_message(tmp_path):
    tiny = tmp_path / "tiny.pt"
    model = build_bert(BertConfig(600, 32, 2, 2, 64, 32))  # TINY's architecture
    save_checkpoint(tiny, model, model.config, extra={"settings": TINY})
    for args, message in ((["--corpus", "klingon"], "--corpus must be one of reviews, english"),
                          (["--init", str(tmp_path / "none.pt")], "no checkpoint at"),
                          (["--init", str(tiny), "--layers", "3"], "another architecture: --layers 3")):
        with pytest.raises(SystemExit, match=message):  # in this process: refused before any work
            pretrain_main(["--tiny", "--out", str(tmp_path / "x.pt"), *args])
    for args, message in ((["--batch", "15", "--accumulate", "2"], "must be a multiple"),
                          (["--resume", str(tmp_path / "none.state")], "no state to resume"),
                          (["--steps", "3", "--warmup", "3"], "--warmup")):
        proc = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--out", str(tmp_path / "x.pt"), *args],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode != 0 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "x.pt").exists(), "nothing written"

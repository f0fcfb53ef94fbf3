"""The concept figures of book/pretraining.md draw without pyplot and show the numbers they are drawn from."""
import math

import pytest
from matplotlib.figure import Figure

from nlpcourse.errors import ConfigError
from nlpcourse.figures import pretraining as figures


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_every_figure_draws():
    drawn = [figures.elmo_stack(), figures.elmo_stack(weights=[0.0, 1.0, 0.5], gamma=2.0),
             figures.ulmfit_stages(), figures.ulmfit_stages(schedule=[0.1, 1.0, 0.5, 0.1]),
             figures.attention_patterns(), figures.bert_inputs(["[CLS]", "a", "[SEP]", "b", "[SEP]"],
                                                               [0, 0, 0, 1, 1]),
             figures.masking_rule(["a", "b", "c"], ["a", "[MASK]", "c"], [False, True, False]),
             figures.family_tree(), figures.fine_tuning_heads(),
             figures.span_corruption("a b c d e".split(), [(1, 2), (3, 5)])]
    assert all(isinstance(fig, Figure) and fig.axes for fig in drawn)


def test_elmo_stack_writes_the_softmax_of_the_mix_weights():
    w = [0.0, 1.0, 0.5]
    z = sum(math.exp(v) for v in w)
    texts = _texts(figures.elmo_stack(weights=w, gamma=1.5))
    assert [f"$\\times s_{j}$ = {math.exp(v) / z:.2f}" for j, v in enumerate(w)] == [
        t for t in texts if t.startswith("$\\times s_")]
    assert "$\\times s_0$ = 0.19" in texts and "$\\times\\gamma$ = 1.50" in texts


def test_masking_rule_counts_each_fate_of_the_chosen_pieces():
    original = "[CLS] the plot is thin [SEP]".split()
    corrupted = "[CLS] [MASK] cast is thin [SEP]".split()
    texts = _texts(figures.masking_rule(original, corrupted, [False, True, True, True, False, False]))
    assert "this draw: 3 of 4 pieces chosen (1 [MASK], 1 random, 1 unchanged)" in texts  # [CLS], [SEP] never


def test_attention_patterns_count_the_pairs_each_mask_allows():
    texts = _texts(figures.attention_patterns(["a", "b", "c", "d"]))
    assert "GPT: causal: 10 of 16 pairs" in texts and "BERT: bidirectional: 16 of 16 pairs" in texts


def test_span_corruption_gives_t5s_own_example():
    words = "thank you for inviting me to your party last week".split()
    source, target = figures.span_corrupt_text(words, [(2, 4), (8, 9)])
    assert " ".join(source) == "thank you <X> me to your party <Y> week"
    assert " ".join(target) == "<X> for inviting <Y> last <Z>"
    with pytest.raises(ConfigError):
        figures.span_corrupt_text(words, [(4, 6), (2, 3)])

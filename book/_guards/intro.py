"""The checks of what book/intro.md states: see scripts/chapter_guards.py."""

# %% guard: sample
assert bench["setup"]["minutes_per_model"] == 10 and bench["setup"]["threads"] == 2  # "ten minutes on two"
assert bench["setup"]["device"] == "cpu"
# the examples are the first verses of the test part (benchmarks/transformer.py), never trained on
assert len(model["examples"]) >= 2 and bench["setup"]["pairs"]["test"] > 0

# %% guard: reading
assert all(1_500 < n < 20_000 for n in words.values()), words  # the table's hours stay plausible

"""Models shared by the chapters and the training scripts, one model per file.

``bow_mlp``: the bag-of-words MLP text classifier of the chapter "Neural building blocks".
"""
from .bow_mlp import BowMLP, BowMLPConfig, bag_of_words, build_bow_mlp

__all__ = ["BowMLP", "BowMLPConfig", "bag_of_words", "build_bow_mlp"]

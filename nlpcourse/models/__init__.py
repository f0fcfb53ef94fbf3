"""Models shared by the chapters and the training scripts, one model per file.

``bow_mlp``: the bag-of-words MLP text classifier of the chapter "Neural building blocks";
``cnn``: the Kim (2014) CNN sentence classifier of the chapter "CNN text classifiers";
``rnnlm`` (Elman / GRU / LSTM language models), ``ffnn_lm`` (Bengio et al.'s feed-forward LM) and
``lstm_cells`` (the cells written out) and ``softmax`` (class-based and sampled softmax) of the chapter
"RNN language models";
``seq2seq`` (the RNN encoder-decoder with or without attention) and ``tagger`` (the BiLSTM part-of-speech
tagger) of the chapter "Sequence to sequence with attention".
"""
from .bow_mlp import BowMLP, BowMLPConfig, bag_of_words, build_bow_mlp
from .cnn import KimCNN, KimCNNConfig, build_kim_cnn, max_norm_, pretrained_embeddings

__all__ = ["BowMLP", "BowMLPConfig", "KimCNN", "KimCNNConfig", "bag_of_words", "build_bow_mlp", "build_kim_cnn",
           "max_norm_", "pretrained_embeddings"]

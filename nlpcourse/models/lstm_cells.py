"""Recurrent cells written out, one time step at a time (chapter "RNN language models", ``benchmarks/rnnlm.py``):
the GRU PyTorch implements, and the LSTM with coupled input and forget gates and peepholes.

They are the equations of the chapter in code, for reading and for measuring what PyTorch's fused kernels
(``nn.GRU``, ``nn.LSTM``: one matrix product for all gates of a layer over the whole sequence's inputs,
cuDNN on CUDA) gain over a Python loop. :class:`LoopGRU` loads ``nn.GRU``'s weights and gives the same
outputs. The standard LSTM that ``nn.LSTM`` implements (below) is not here: writing it so that it matches
``nn.LSTM`` is a part of the assignment *rnnlm*, and the library is never an answer to a graded exercise.

Shapes: B batch, T time, D input dim, H hidden units.

Standard LSTM (Hochreiter & Schmidhuber 1997 with the forget gate of Gers et al. 2000; PyTorch's gate order
i, f, g, o):

    i_t = σ(W_ii x_t + b_ii + W_hi h_{t-1} + b_hi)      input gate
    f_t = σ(W_if x_t + b_if + W_hf h_{t-1} + b_hf)      forget gate
    g_t = tanh(W_ig x_t + b_ig + W_hg h_{t-1} + b_hg)   candidate
    o_t = σ(W_io x_t + b_io + W_ho h_{t-1} + b_ho)      output gate
    c_t = f_t ⊙ c_{t-1} + i_t ⊙ g_t,   h_t = o_t ⊙ tanh(c_t)

Coupled LSTM with peepholes (Goldberg's textbook form; Greff et al. 2017's "CIFG" with peepholes): one gate
q_t decides both how much to write and how much to forget, and the gates also read the cell:

    q_t = σ(W_q x_t + U_q h_{t-1} + p_q ⊙ c_{t-1} + b_q)
    c_t = (1 - q_t) ⊙ c_{t-1} + q_t ⊙ tanh(U x_t + V h_{t-1} + b_c)
    o_t = σ(W_o x_t + U_o h_{t-1} + p_o ⊙ c_t + b_o),   h_t = o_t ⊙ tanh(c_t)
"""
from __future__ import annotations

import torch
from torch import nn

from ..errors import ShapeError


def _check_input(x: torch.Tensor, D: int, who: str) -> None:
    if x.dim() != 3 or x.shape[-1] != D:
        raise ShapeError(f"{who}: expected input (B,T,{D}), got {tuple(x.shape)}")


class LoopGRU(nn.Module):
    """One GRU layer looped over time, with ``nn.GRU``'s layout (gate order r, z, n):

        r = σ(W_ir x + b_ir + W_hr h + b_hr),  z = σ(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),  h' = (1 - z) ⊙ n + z ⊙ h
    """

    def __init__(self, input_dim: int, hidden_dim: int):
        super().__init__()
        self.D, self.H = input_dim, hidden_dim
        self.weight_ih_l0 = nn.Parameter(torch.empty(3 * hidden_dim, input_dim))
        self.weight_hh_l0 = nn.Parameter(torch.empty(3 * hidden_dim, hidden_dim))
        self.bias_ih_l0 = nn.Parameter(torch.empty(3 * hidden_dim))
        self.bias_hh_l0 = nn.Parameter(torch.empty(3 * hidden_dim))
        bound = hidden_dim ** -0.5
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Hidden states (B,T,H) of ``x`` (B,T,D), and the last one (B,H)."""
        _check_input(x, self.D, "LoopGRU")
        B, T, _ = x.shape
        h = h if h is not None else x.new_zeros(B, self.H)
        gates_x = x @ self.weight_ih_l0.T + self.bias_ih_l0  # (B,T,D) x (D,3H) -> (B,T,3H)
        out = []
        for t in range(T):
            xr, xz, xn = gates_x[:, t].chunk(3, dim=1)  # 3 x (B,H)
            hr, hz, hn = (h @ self.weight_hh_l0.T + self.bias_hh_l0).chunk(3, dim=1)  # (B,H) x (H,3H) -> 3 x (B,H)
            r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
            h = (1 - z) * torch.tanh(xn + r * hn) + z * h
            out.append(h)
        return torch.stack(out, dim=1), h


class CoupledPeepholeLSTM(nn.Module):
    """The LSTM with one gate q for writing and (1 - q) for forgetting, and peepholes (gates read the cell)."""

    def __init__(self, input_dim: int, hidden_dim: int):
        super().__init__()
        self.D, self.H = input_dim, hidden_dim
        self.W = nn.Linear(input_dim, 3 * hidden_dim)  # x -> q, candidate, o (the biases b_q, b_c, b_o)
        self.U = nn.Linear(hidden_dim, 3 * hidden_dim, bias=False)  # h_{t-1} -> q, candidate, o
        self.p_q = nn.Parameter(torch.zeros(hidden_dim))  # peephole of the gate q on c_{t-1}
        self.p_o = nn.Parameter(torch.zeros(hidden_dim))  # peephole of the output gate on c_t

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None,
                ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Hidden states (B,T,H) of ``x`` (B,T,D), and the last (h, c)."""
        _check_input(x, self.D, "CoupledPeepholeLSTM")
        B, T, _ = x.shape
        h, c = state if state is not None else (x.new_zeros(B, self.H), x.new_zeros(B, self.H))
        gates_x = self.W(x)  # (B,T,D) x (D,3H) -> (B,T,3H)
        out = []
        for t in range(T):
            xq, xc, xo = gates_x[:, t].chunk(3, dim=1)  # 3 x (B,H)
            hq, hc, ho = self.U(h).chunk(3, dim=1)  # (B,H) x (H,3H) -> 3 x (B,H)
            q = torch.sigmoid(xq + hq + self.p_q * c)
            c = (1 - q) * c + q * torch.tanh(xc + hc)
            h = torch.sigmoid(xo + ho + self.p_o * c) * torch.tanh(c)
            out.append(h)
        return torch.stack(out, dim=1), (h, c)

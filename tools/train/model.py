"""The llama architecture exactly as momentkv's engine computes it (src/model/transformer.cpp):
RMSNorm (eps 1e-5), adjacent-pair RoPE (llama2.c style: (x[2i], x[2i+1]) rotated by
pos * theta^(-2i/head_dim)), grouped-query attention, SwiGLU, classifier tied to the embedding.

Adjacent pairs are what the engine applies for arch "llama" to llama2.c weights, so the export
writes wq/wk unpermuted (stories260K's GGUF tensors equal its .bin tensors)."""
import math
import struct
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelConfig:
    dim: int = 128
    hidden_dim: int = 384
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: int = 2
    vocab_size: int = 512
    seq_len: int = 2048
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self):
        return self.dim // self.n_heads


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(head_dim, seq_len, theta):
    """cos/sin of shape (seq_len, head_dim/2): angle = pos * theta^(-2i/head_dim)."""
    freqs = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64), freqs)
    return angles.cos().float(), angles.sin().float()


def apply_rope(x, cos, sin):
    """x: (batch, seq, heads, head_dim); rotates each adjacent pair (x[2i], x[2i+1])."""
    pairs = x.unflatten(-1, (-1, 2))
    even, odd = pairs[..., 0], pairs[..., 1]
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.c = c
        self.wq = nn.Linear(c.dim, c.n_heads * c.head_dim, bias=False)
        self.wk = nn.Linear(c.dim, c.n_kv_heads * c.head_dim, bias=False)
        self.wv = nn.Linear(c.dim, c.n_kv_heads * c.head_dim, bias=False)
        self.wo = nn.Linear(c.n_heads * c.head_dim, c.dim, bias=False)

    def forward(self, x, cos, sin, mask):
        c, (b, t, _) = self.c, x.shape
        q = apply_rope(self.wq(x).view(b, t, c.n_heads, c.head_dim), cos, sin)
        k = apply_rope(self.wk(x).view(b, t, c.n_kv_heads, c.head_dim), cos, sin)
        v = self.wv(x).view(b, t, c.n_kv_heads, c.head_dim)
        group = c.n_heads // c.n_kv_heads  # query head h reads KV head h // group
        k = k.repeat_interleave(group, dim=2)
        v = v.repeat_interleave(group, dim=2)
        q, k, v = (a.transpose(1, 2) for a in (q, k, v))  # (batch, heads, seq, head_dim)
        scores = (q @ k.transpose(-2, -1)) * c.head_dim ** -0.5 + mask
        out = torch.softmax(scores, dim=-1) @ v
        return self.wo(out.transpose(1, 2).reshape(b, t, -1))


class FeedForward(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.w1 = nn.Linear(c.dim, c.hidden_dim, bias=False)  # gate
        self.w2 = nn.Linear(c.hidden_dim, c.dim, bias=False)  # down
        self.w3 = nn.Linear(c.dim, c.hidden_dim, bias=False)  # up

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.attention_norm = RMSNorm(c.dim, c.norm_eps)
        self.attention = Attention(c)
        self.ffn_norm = RMSNorm(c.dim, c.norm_eps)
        self.feed_forward = FeedForward(c)

    def forward(self, x, cos, sin, mask):
        x = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.c = c
        self.tok_embeddings = nn.Embedding(c.vocab_size, c.dim)
        self.layers = nn.ModuleList(Block(c) for _ in range(c.n_layers))
        self.norm = RMSNorm(c.dim, c.norm_eps)
        cos, sin = rope_tables(c.head_dim, c.seq_len, c.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2 style scaled init of residual outputs
            if name.endswith("wo.weight") or name.endswith("w2.weight"):
                nn.init.normal_(p, std=0.02 / (2 * c.n_layers) ** 0.5)

    @staticmethod
    def _init_weights(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, tokens):
        """tokens: (batch, seq) -> logits (batch, seq, vocab); the classifier is tok_embeddings."""
        t = tokens.shape[1]
        mask = torch.full((t, t), float("-inf")).triu(1)
        cos, sin = self.rope_cos[:t], self.rope_sin[:t]
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.norm(x) @ self.tok_embeddings.weight.t()


def seed_previous_token_head(model: Llama, pairs=6, strength=8.0):
    """Initialises layer 0's query head 0 (and its KV head) to attend to the previous position.

    Content-based copying needs a previous-token head feeding an induction head; without one the
    copy loss gives the induction head no gradient, and tiny models sit on a long plateau. We
    reserve the last embedding dimension as a constant feature (the same value for every token,
    which shifts all tied-classifier logits equally), make q and k functions of it alone on the
    `pairs` fastest RoPE frequencies, with k pre-rotated by one position, so that
    q_t . k_s = strength^2 * sum_i cos((t - s - 1) theta_i), largest at s = t - 1. Training is
    free to change all of it."""
    c = model.c
    with torch.no_grad():
        emb = model.tok_embeddings.weight
        emb[:, -1] = 0.1  # after RMSNorm about 4.6 for the default init (std 0.02)
        const = (0.1 / (emb[:, :-1].pow(2).sum(1).mean() / c.dim + 0.01 / c.dim).sqrt()).item()
        attention = model.layers[0].attention
        hd = c.head_dim
        freqs = 1.0 / c.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        attention.wq.weight[:hd].zero_()
        attention.wk.weight[:hd].zero_()
        for i in range(pairs):
            theta = freqs[i].item()
            attention.wq.weight[2 * i, -1] = strength / const
            attention.wk.weight[2 * i, -1] = strength * math.cos(theta) / const
            attention.wk.weight[2 * i + 1, -1] = strength * math.sin(theta) / const


def export_llama2c(model: Llama, path):
    """Writes llama2.c's legacy "version 0" .bin: 7 int32 header (positive vocab_size = shared
    classifier), then fp32 tok_emb, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final,
    freq_cis_real, freq_cis_imag (each per-layer tensor for all layers in turn)."""
    c = model.c
    layers = model.layers
    groups = [
        [model.tok_embeddings.weight],
        [l.attention_norm.weight for l in layers],
        [l.attention.wq.weight for l in layers],
        [l.attention.wk.weight for l in layers],
        [l.attention.wv.weight for l in layers],
        [l.attention.wo.weight for l in layers],
        [l.ffn_norm.weight for l in layers],
        [l.feed_forward.w1.weight for l in layers],
        [l.feed_forward.w2.weight for l in layers],
        [l.feed_forward.w3.weight for l in layers],
        [model.norm.weight],
        [model.rope_cos],
        [model.rope_sin],
    ]
    with open(path, "wb") as f:
        f.write(struct.pack("7i", c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
                            c.vocab_size, c.seq_len))
        for group in groups:
            for tensor in group:
                f.write(tensor.detach().to(torch.float32).contiguous().numpy().tobytes())

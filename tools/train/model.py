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


def seed_induction_circuit(model: Llama, max_slow_angle=0.5, prev_gain=4.0, match_gain=2.0, copy_gain=0.05):
    """Builds a working induction (copy) circuit into the initial weights; training is free to
    change all of it.

    Copying by content needs two heads that only help together (a previous-token head and a head
    that matches the current token against each position's previous token), so from a random
    start tiny models sit on a long loss plateau before both form. Here they exist from step 0:
      residual dims: content [0, D-1-hd) (token embeddings), prev [D-1-hd, D-1) (written by the
      previous-token head), const D-1 (the same value for every token; it shifts all
      tied-classifier logits equally);
      layer 0, query head 0 / KV head 0: q and k read the const dim on the RoPE pairs that turn
        at least max_slow_angle over the context, k pre-rotated by one position, so
        q_t . k_s = prev_gain^2 * sum_i cos((t - s - 1) theta_i), largest at s = t - 1; v copies the
        first hd content dims and wo writes them into the prev dims;
      layer 1, query head 0 / KV head 0: on the slow RoPE pairs (turning less than max_slow_angle
        over the whole context, so the match does not depend on distance) q reads the current
        token's content dims and k the prev dims, so q_t . k_s is largest where token s-1 equals
        token t; v copies token s's content dims and wo adds them back to the content dims, which
        raises token s's tied-classifier logit: the prediction of the token that followed the
        previous occurrence."""
    c = model.c
    hd, dim = c.head_dim, c.dim
    const = dim - 1
    prev = list(range(dim - 1 - hd, dim - 1))
    freqs = 1.0 / c.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    slow = [i for i in range(hd // 2) if freqs[i].item() * c.seq_len <= max_slow_angle]
    fast = [i for i in range(hd // 2) if i not in slow]
    if len(slow) < 4:
        raise ValueError(f"RoPE base {c.rope_theta:g} leaves {len(slow)} pairs turning less than "
                         f"{max_slow_angle} rad over {c.seq_len} positions; the induction head needs >= 4")
    with torch.no_grad():
        emb = model.tok_embeddings.weight
        emb[:, prev] = 0.0
        emb[:, const] = 0.1
        rms = emb.pow(2).mean(1).sqrt().mean().item()
        const_normed = 0.1 / rms  # the const dim after RMSNorm
        content_normed = 0.02 / rms  # one content dim after RMSNorm (init std 0.02)

        def take_head0(attention):
            """Query head 0 and KV head 0 start from zero, except v = the first hd content dims."""
            for w in (attention.wq.weight, attention.wk.weight, attention.wv.weight):
                w[:hd].zero_()
            attention.wo.weight[:, :hd].zero_()
            for j in range(hd):
                attention.wv.weight[j, j] = 1.0
            return attention

        first = take_head0(model.layers[0].attention)
        for i in fast:
            theta = freqs[i].item()
            first.wq.weight[2 * i, const] = prev_gain / const_normed
            first.wk.weight[2 * i, const] = prev_gain * math.cos(theta) / const_normed
            first.wk.weight[2 * i + 1, const] = prev_gain * math.sin(theta) / const_normed
        for j in range(hd):
            first.wo.weight[prev[j], j] = 0.02 / content_normed  # prev dims get the content scale

        second = take_head0(model.layers[1].attention)
        slow_dims = [d for i in slow for d in (2 * i, 2 * i + 1)]
        for m, d in enumerate(slow_dims):
            second.wq.weight[d, m] = match_gain
            second.wk.weight[d, prev[m]] = match_gain
        for j in range(hd):
            second.wo.weight[j, j] = copy_gain


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

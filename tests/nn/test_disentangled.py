"""DisentangledSelfAttention: a plain-loop reference, log buckets, parity with transformers' DeBERTa-v2."""

import math

import pytest
import torch

from warmstart.nn.disentangled import (
    DisentangledSelfAttention,
    RelativeEmbeddings,
    _bucket_reach,
    log_bucket_position,
    relative_positions,
)
from warmstart.nn.lora import LoRALinear


def plain_bucket(r: int, buckets: int, max_position: int) -> int:
    """DeBERTa's log bucket of one relative position, in plain Python."""
    mid = buckets // 2
    if abs(r) <= mid:
        return r
    log_pos = math.ceil(math.log(abs(r) / mid) / math.log((max_position - 1) / mid) * (mid - 1)) + mid
    return int(math.copysign(log_pos, r))


def reference(attn: DisentangledSelfAttention, x, key_mask, rel):
    """The module's function written out with loops over batch, head, query i and key j."""
    b, t, h = x.shape
    n, s, mp = attn.heads, attn.buckets, attn.max_position
    d = h // n
    w, bias = attn.qkv.weight, attn.qkv.bias
    wq, wk, wv = w[:h], w[h : 2 * h], w[2 * h :]
    bq, bk, bv = bias[:h], bias[h : 2 * h], bias[2 * h :]
    y = torch.zeros(b, t, h, dtype=x.dtype)
    for bi in range(b):
        q, k, v = x[bi] @ wq.T + bq, x[bi] @ wk.T + bk, x[bi] @ wv.T + bv
        qr, kr = rel @ wq.T + bq, rel @ wk.T + bk  # the relative table through the same q/k weights
        for hd in range(n):
            cols = slice(hd * d, (hd + 1) * d)
            for i in range(t):
                scores = []
                for j in range(t):
                    c2p = min(max(plain_bucket(i - j, s, mp) + s, 0), 2 * s - 1)
                    p2c = min(max(-plain_bucket(j - i, s, mp) + s, 0), 2 * s - 1)
                    score = q[i, cols] @ k[j, cols] + q[i, cols] @ kr[c2p, cols] + k[j, cols] @ qr[p2c, cols]
                    scores.append(score / math.sqrt(3 * d) if key_mask[bi, j] else -math.inf)
                p = torch.softmax(torch.stack([torch.as_tensor(z, dtype=x.dtype) for z in scores]), dim=0)
                y[bi, i, cols] = p @ v[:, cols]
    return attn.out(y)


def make(hidden, heads, buckets, max_position, dtype=torch.float32, seed=0, std=0.5):
    torch.manual_seed(seed)
    attn = DisentangledSelfAttention(hidden, heads, 0.0, buckets, max_position).to(dtype).eval()
    with torch.no_grad():
        for p in attn.parameters():
            p.normal_(0, std)  # large enough that every term moves the scores
    return attn


# (buckets, max_position, T): beyond max_position so the clamp bites; and a short T inside a wide table
CASES = [(4, 8, 10), (16, 32, 5)]


@pytest.mark.parametrize("buckets,max_position,t", CASES)
def test_matches_plain_loop_reference_with_padding(buckets, max_position, t):
    attn = make(8, 2, buckets, max_position, torch.float64)
    x = torch.randn(2, t, 8, dtype=torch.float64)
    rel = torch.randn(2 * buckets, 8, dtype=torch.float64)
    key_mask = torch.ones(2, t, dtype=torch.bool)
    key_mask[1, -3:] = False
    with torch.no_grad():
        got = attn(x, key_mask[:, None, None, :], rel)
        want = reference(attn, x, key_mask, rel)
        assert (got - want).abs().max() < 1e-10
        assert (attn(x, None, rel) - reference(attn, x, torch.ones_like(key_mask), rel)).abs().max() < 1e-10
        # the relative table matters: another table gives other outputs
        assert (attn(x, key_mask[:, None, None, :], torch.randn_like(rel)) - got).abs().max() > 1e-3


@pytest.mark.parametrize("buckets,max_position", [(4, 8), (8, 32), (16, 64), (256, 512), (128, 1024)])
def test_log_buckets(buckets, max_position):
    from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

    mid = buckets // 2
    r = torch.arange(-3 * max_position, 3 * max_position + 1)
    got = log_bucket_position(r, buckets, max_position)
    assert got.dtype == torch.long
    assert got.tolist() == [plain_bucket(v, buckets, max_position) for v in r.tolist()]
    assert torch.equal(got, make_log_bucket_position(r, buckets, max_position).long())
    inside = r.abs() <= mid
    assert torch.equal(got[inside], r[inside])  # exact inside the window
    assert bool((got[1:] >= got[:-1]).all())  # monotone
    assert torch.equal(got.flip(0), -got)  # odd: sign kept, magnitudes symmetric
    near = r.abs() < max_position
    assert got[near].abs().max() == buckets - 1  # capped: every distance below max_position fits the table
    assert int(log_bucket_position(torch.tensor(max_position - 1), buckets, max_position)) == buckets - 1
    assert got.abs().max() > buckets - 1  # beyond max_position it keeps growing; the attention clamps it
    # the module scores only the table rows within _bucket_reach: it must bound every bucket it can meet
    for distance in range(3 * max_position):
        reach = _bucket_reach(distance, buckets, max_position)
        assert abs(plain_bucket(distance, buckets, max_position)) <= reach <= distance + 1


def test_relative_positions_grid():
    got = relative_positions(5, 7, 4, 8)
    assert got.shape == (5, 7) and got.dtype == torch.long
    assert got.tolist() == [[plain_bucket(i - j, 4, 8) for j in range(7)] for i in range(5)]


@pytest.mark.parametrize("buckets,max_position,t", [(8, 16, 12), (4, 8, 20), (16, 64, 9)])
def test_parity_with_transformers(buckets, max_position, t):
    from transformers import DebertaV2Config
    from transformers.models.deberta_v2.modeling_deberta_v2 import DisentangledSelfAttention as HF

    hidden, heads = 16, 4
    config = DebertaV2Config(
        hidden_size=hidden,
        num_attention_heads=heads,
        intermediate_size=32,
        max_position_embeddings=64,
        relative_attention=True,
        position_buckets=buckets,
        max_relative_positions=max_position,
        pos_att_type=["p2c", "c2p"],
        share_att_key=True,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    ours = make(hidden, heads, buckets, max_position, seed=1, std=0.25)  # outputs of order 1
    hf = HF(config).eval()
    with torch.no_grad():
        for name, part in zip(("query_proj", "key_proj", "value_proj"), range(3), strict=True):
            rows = slice(part * hidden, (part + 1) * hidden)
            getattr(hf, name).weight.copy_(ours.qkv.weight[rows])
            getattr(hf, name).bias.copy_(ours.qkv.bias[rows])
    x = torch.randn(3, t, hidden)
    rel = torch.randn(2 * buckets, hidden)
    valid = torch.ones(3, t, dtype=torch.long)
    valid[1, -4:] = 0
    valid[2, -1:] = 0
    key_mask = valid.bool()[:, None, None, :]
    with torch.no_grad():
        got = ours(x, key_mask, rel)
        # transformers returns the context before the output dense (that lives in DebertaV2SelfOutput)
        want = ours.out(hf(x, key_mask, rel_embeddings=rel)[0])
        assert (got - want).abs().max() < 1e-5
        # the encoder's (B, 1, T, T) mask also masks padded queries; valid query rows must agree
        square = (valid[:, None, None, :] * valid[:, None, :, None]).bool()
        want_sq = ours.out(hf(x, square, rel_embeddings=rel)[0])
        assert (got - want_sq)[valid.bool()].abs().max() < 1e-5


def test_relative_embeddings_match_transformers_encoder():
    from transformers import DebertaV2Config
    from transformers.models.deberta_v2.modeling_deberta_v2 import DebertaV2Encoder

    config = DebertaV2Config(
        hidden_size=16,
        num_attention_heads=4,
        intermediate_size=32,
        num_hidden_layers=1,
        relative_attention=True,
        position_buckets=8,
        max_relative_positions=32,
        norm_rel_ebd="layer_norm",
        layer_norm_eps=1e-7,
    )
    torch.manual_seed(0)
    ours = RelativeEmbeddings(8, 16, 1e-7)
    with torch.no_grad():
        ours.norm.weight.normal_()
        ours.norm.bias.normal_()
    encoder = DebertaV2Encoder(config)
    encoder.rel_embeddings.load_state_dict(ours.embed.state_dict())
    encoder.LayerNorm.load_state_dict(ours.norm.state_dict())
    table = ours()
    assert table.shape == (16, 16)
    assert (table - encoder.get_rel_embedding()).abs().max() < 1e-6


def test_gradients_reach_qkv_and_only_the_reachable_table_rows():
    torch.manual_seed(0)
    buckets, t = 16, 5  # |i - j| <= 4 < buckets // 2: rows buckets-4 .. buckets+4 are used, no others
    attn = DisentangledSelfAttention(8, 2, 0.0, buckets, 64)
    table = RelativeEmbeddings(buckets, 8, 1e-7)
    attn(torch.randn(2, t, 8), None, table()).square().sum().backward()
    assert attn.qkv.weight.grad.abs().sum() > 0 and attn.out.weight.grad.abs().sum() > 0
    row_grad = table.embed.weight.grad.abs().sum(-1)
    used = torch.zeros(2 * buckets, dtype=torch.bool)
    used[buckets - (t - 1) : buckets + t] = True
    assert bool((row_grad[used] > 0).all()) and bool((row_grad[~used] == 0).all())
    assert table.norm.weight.grad.abs().sum() > 0


def test_lora_on_qkv_also_adapts_the_relative_projection():
    attn = make(8, 2, 4, 8)
    x, rel = torch.randn(2, 6, 8), torch.randn(8, 8)
    attn.qkv = LoRALinear(attn.qkv, rank=2, alpha=4)
    with torch.no_grad():
        attn.qkv.lora_b.normal_()
        got = attn(x, None, rel)
        attn.qkv = attn.qkv.merged()
        assert (got - attn(x, None, rel)).abs().max() < 1e-5


def test_dropout_only_in_training_and_missing_table_is_an_error():
    torch.manual_seed(0)
    attn = DisentangledSelfAttention(8, 2, 0.5, 4, 8, rel_dropout=0.5)
    x, rel = torch.randn(2, 6, 8), torch.randn(8, 8)
    attn.eval()
    assert torch.equal(attn(x, None, rel), attn(x, None, rel))
    attn.train()
    assert not torch.allclose(attn(x, None, rel), attn.eval()(x, None, rel))
    with pytest.raises(ValueError, match="relative embedding table"):
        attn(x)
    with pytest.raises(ValueError, match="divisible"):
        DisentangledSelfAttention(10, 3, 0.0)

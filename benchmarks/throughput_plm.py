"""The XLNet row of benchmarks/throughput.py: permutation LM on the same real token ids, warmstart's training
step (objectives/plm.py: the query stream only at the targets, about 1/6 of the tokens) beside transformers'
XLNetLMHeadModel trained as its documentation trains it, with DataCollatorForPermutationLanguageModeling
(the same 1/6 share of targets, but a query row for every position: target_mapping is the identity).

FLOPs (3 x forward) count what each side computes: per content token and layer the projections q, k, v, o
(4 h^2), the relative-position projection of 2T positions (2 h^2 per token), the feed-forward (2 h i) and
attention against T content keys and 2T positions (4 T h multiply-adds); per query row the q and o
projections, the feed-forward and the same attention, plus the output layer (h V).
"""

from __future__ import annotations

import torch
from throughput_rows import BATCHES, Row, collated, tokenizer, training_step, windows


def _flops(tokens: int, queries: int, layers: int, h: int, inner: int, seq: int, vocab: int) -> int:
    """6 x the multiply-adds of one forward (2 FLOPs each, x3 for training)."""
    content = tokens * layers * (6 * h * h + 2 * h * inner + 4 * seq * h)
    query = queries * (layers * (2 * h * h + 2 * h * inner + 4 * seq * h) + h * vocab)
    return 6 * (content + query)


def plm(batch: int, seq: int, device) -> Row:
    import transformers

    from warmstart.models.xlnet import XLNetConfig, XLNetModel
    from warmstart.objectives.plm import PermutationLM, PLMCollator, PLMConfig

    tok = tokenizer("wordpiece")
    cfg = XLNetConfig(vocab_size=tok.vocab_size, d_model=256, n_layer=4, n_head=4, d_inner=1024)
    ids = windows(tok, seq, batch * BATCHES, tok.sep_id)
    ours_batches = collated(PLMCollator(PLMConfig(), tok.special_ids), ids, batch, device)
    hf_collate = transformers.DataCollatorForPermutationLanguageModeling(tok.to_transformers())
    torch.manual_seed(0)
    theirs_batches = [
        {k: v.to(device) for k, v in hf_collate(list(ids[i * batch : (i + 1) * batch])).items()}
        for i in range(BATCHES)
    ]
    targets = sum(b["target_mapping"].shape[1] for b in ours_batches) * batch // BATCHES
    h, layers, v, inner = cfg.d_model, cfg.n_layer, cfg.vocab_size, cfg.d_inner
    tokens = batch * seq

    def ours():
        unit = PermutationLM(XLNetModel(cfg), PLMConfig())
        return training_step(unit, lambda b: unit(b[0])[0], device)

    def theirs():
        hf = transformers.XLNetConfig(vocab_size=v, d_model=h, n_layer=layers, n_head=cfg.n_head,
                                      d_inner=inner, ff_activation=cfg.ff_activation)  # fmt: skip
        model = transformers.XLNetLMHeadModel(hf)
        return training_step(model, lambda b: model(**b[1]).loss, device)

    return Row(
        name="XLNet permutation LM (small)",
        shape=f"{layers}L/{h}H vocab {v} seq {seq} batch {batch}",
        tokens_per_step=tokens,
        flops_per_step={
            "warmstart": _flops(tokens, targets, layers, h, inner, seq, v),
            "transformers": _flops(tokens, tokens, layers, h, inner, seq, v),
        },
        sides={"warmstart": ours, "transformers": theirs},
        batches=list(zip(ours_batches, theirs_batches)),
    )

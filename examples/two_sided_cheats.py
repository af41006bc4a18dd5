"""Why BERT masks (lecture 001): a two-sided model trained to predict the next token cheats.

One tiny BERT-style encoder (warmstart's BertModel with its MLM head), three ways, from the same starting
weights on the same windows of real text (the packaged wiki-leads, through a small WordPiece tokenizer):

- two-sided, next token: no causal mask, the state at position t predicts token t+1. Position t can attend
  to position t+1, so the model learns to copy the answer it is shown: the training loss falls towards 0,
  and nothing it learnt helps predict a token it cannot see;
- causal, next token (GPT-style): the same encoder with a causal mask (position t sees 0..t), as GPT trains;
- masked (BERT): no causal mask, 15% of the tokens hidden (80% [MASK], 10% random, 10% kept) and predicted
  from both sides (the loss is over the hidden tokens); the answer is never in the input.

The causal and masked losses stay high (they must guess); the two-sided one collapses. Prints a table,
writes OUT/two_sided_cheats.png (the loss curves) and OUT/two_sided_cheats.json. ``--size tiny`` trains
each model 260 steps (a test runs it), ``small`` (the default) 400:

    .venv/bin/python examples/two_sided_cheats.py --out runs/two-sided
    .venv/bin/python examples/two_sided_cheats.py --size tiny --out /tmp/two-sided
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

from warmstart.data.corpus import corpus_texts
from warmstart.data.dataset import DataOptions
from warmstart.models.bert import BertConfig, BertModel
from warmstart.objectives.mlm import IGNORE, MLMCollator, MLMConfig, MLMHead
from warmstart.tokenization.train import train_tokenizer

SHAPE = dict(layers=1, hidden=64, heads=2, window=16, batch=16, vocab=300, lr=5e-3)
SIZES = {  # the same model and windows; steps, and texts read (tokenizer, then as many for the windows)
    "tiny": dict(SHAPE, steps=260, texts=400),
    "small": dict(SHAPE, steps=400, texts=1000),
}
ARMS = ("two-sided, next token", "causal, next token", "masked (15%)")
LAST = 10  # the final loss: the mean of the last this many steps


def windows(size: dict) -> tuple[torch.Tensor, object]:
    """(windows (N, window) of packed token ids, the tokenizer): a small WordPiece trained on the first
    texts of wiki-leads, the windows packed from as many texts after them."""
    texts = list(corpus_texts(["wiki-leads"], DataOptions(label_column=None), "train"))
    n = size["texts"]
    with tempfile.TemporaryDirectory() as tmp:
        tok = train_tokenizer(texts[:n], "wordpiece", size["vocab"], Path(tmp) / "tok", show_progress=False)
    stream = [t for ids in tok.encode_batch(texts[n : 2 * n]) for t in [*ids, tok.sep_id]]
    width = size["window"]
    rows = len(stream) // width
    return torch.tensor(stream[: rows * width]).view(rows, width), tok


class Encoder(torch.nn.Module):
    """A BertModel and its MLM head; ``causal`` runs its blocks with a causal mask."""

    def __init__(self, size: dict, vocab: int):
        super().__init__()
        c = BertConfig(vocab_size=vocab, hidden_size=size["hidden"], num_hidden_layers=size["layers"],
                       num_attention_heads=size["heads"], intermediate_size=4 * size["hidden"],
                       max_position_embeddings=size["window"], hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0, position_init="sinusoidal")  # fmt: skip
        self.bert = BertModel(c)
        self.head = MLMHead(c.hidden_size, vocab, c.hidden_act, c.layer_norm_eps, self.bert.word_embeddings)

    def forward(self, ids: torch.Tensor, causal: bool = False) -> torch.Tensor:
        if not causal:
            return self.head(self.bert(ids))
        t = ids.shape[1]
        mask = torch.ones(t, t, dtype=torch.bool, device=ids.device).tril()[None, None]  # True: attend
        x = self.bert.embedding_module(ids, None)
        for i in range(self.bert.config.num_hidden_layers):
            x = self.bert.block(i)(x, mask)
        return self.head(x)


def arm_loss(model: Encoder, arm: str, ids: torch.Tensor, collate, generator) -> torch.Tensor:
    """The training loss of one batch of windows under ``arm``."""
    if arm == ARMS[2]:
        batch = collate(ids, generator)
        logits = model(batch["input_ids"])
        return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=IGNORE)
    logits = model(ids[:, :-1], causal=arm == ARMS[1])  # position t predicts token t+1
    return F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())


def train(arm: str, data: torch.Tensor, tok, size: dict, seed: int) -> list[float]:
    """The training loss of each step of ``arm``, from the weights every arm starts from (``seed``)."""
    torch.manual_seed(seed)
    model = Encoder(size, tok.vocab_size)
    opt = torch.optim.AdamW(model.parameters(), lr=size["lr"])
    collate = MLMCollator(MLMConfig(), tok.mask_id, tok.vocab_size, tok.special_ids)
    order = torch.Generator().manual_seed(seed)  # the same windows in the same order for every arm
    masks = torch.Generator().manual_seed(seed + 1)
    losses = []
    for _ in range(size["steps"]):
        rows = torch.randint(len(data), (size["batch"],), generator=order)
        loss = arm_loss(model, arm, data[rows], collate, masks)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


def figure(curves: dict[str, list[float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for arm, losses in curves.items():
        ax.plot(range(1, len(losses) + 1), losses, label=arm)
    ax.set_xlabel("training step")
    ax.set_ylabel("training loss (cross-entropy, nats)")
    ax.set_title("A two-sided model shown the next token copies it")
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=list(SIZES), default="small", help="tiny: 260 steps, small: 400")
    p.add_argument("--out", default="runs/two-sided-cheats", help="folder for the figure and the JSON")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    size = SIZES[a.size]
    torch.set_num_threads(min(2, torch.get_num_threads()))
    data, tok = windows(size)
    curves = {arm: train(arm, data, tok, size, a.seed) for arm in ARMS}
    final = {arm: sum(v[-LAST:]) / LAST for arm, v in curves.items()}
    shape = f"{size['layers']} layer(s), hidden {size['hidden']}, windows of {size['window']} tokens"
    steps = f"{size['steps']} steps of {size['batch']}"
    print(f"{a.size}: {shape}, {steps}; training loss (the first step, the mean of the last {LAST})")
    print("| model | first step | last steps |\n|---|---:|---:|")
    for arm, v in curves.items():
        print(f"| {arm} | {v[0]:.3f} | {final[arm]:.3f} |")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    figure(curves, out / "two_sided_cheats.png")
    result = {"size": a.size, "seed": a.seed, "final_loss": final, "curves": curves}
    (out / "two_sided_cheats.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"figure: {out / 'two_sided_cheats.png'}, numbers: {out / 'two_sided_cheats.json'}")
    return result


if __name__ == "__main__":
    main()

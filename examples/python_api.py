import pandas as pd

import warmstart

reviews = pd.read_csv("reviews.csv")  # columns text, label; or {"train": df, "test": df2}, a DatasetDict


class StopWhenStale:  # a callback: any of on_step, on_log, on_evaluate, on_save, on_train_end
    def __init__(self, patience=2):
        self.best, self.stale, self.patience = float("inf"), 0, patience

    def on_evaluate(self, step, metrics):
        if metrics["loss"] < self.best:
            self.best, self.stale = metrics["loss"], 0
        else:
            self.stale += 1
        if self.stale >= self.patience:
            raise warmstart.StopTraining(
                f"validation loss not below {self.best:.4f} for {self.stale} evaluations"
            )


run = warmstart.finetune(
    init="runs/mini",
    data=reviews,
    out="runs/reviews",
    epochs=3,
    lr=1e-4,
    batch_size=16,
    max_length=64,
    callbacks=[StopWhenStale()],
)
print(run)  # Run(finetune, 'runs/reviews', accuracy=..., macro_f1=...): the best checkpoint's test metrics

model = run.load()  # or warmstart.load("runs/reviews", device="cuda"); a transformers directory works too
print(model.predict(["A warm, funny film.", "Dull and far too long."]))  # labels and probabilities
vectors = model.encode(["A warm, funny film."], normalize_embeddings=True)  # numpy, (1, hidden size)
model.export_hf("hf/reviews")  # the checkpoint it predicts with, with a hub model card (README.md)

"""warmstart: pretrain, then finetune, and measure what pretraining bought."""

__version__ = "0.1.0"

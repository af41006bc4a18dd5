"""Analyses of trained models: how far finetuning moved the weights, the gender probe, cloze probes."""

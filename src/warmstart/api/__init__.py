"""The Python face of the commands and checkpoints (``warmstart.load``, ``warmstart.finetune``, ...): see
``warmstart/__init__.py``."""

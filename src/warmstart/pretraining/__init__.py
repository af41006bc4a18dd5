"""Pretraining: the config classes of `warmstart pretrain` (written out, one per family) and the builder of
its training unit."""

"""A saved model answering: load a run or model directory once, then predict, encode, fill masks and
generate. The Python API (api/model.py), `serve` and the CLI wrap it."""

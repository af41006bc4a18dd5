"""How task heads read decoders and encoder-decoders (tasks/readers.py): the table of heads is transformers'
own, and a row is read at the state transformers reads (the decoder's state of the last eos; a decoder's
last real token), with the decoder input shifted as transformers shifts it."""

import pytest
import torch
import transformers
from transformers.models.bart.modeling_bart import shift_tokens_right

from warmstart.errors import WarmstartError
from warmstart.registry import family
from warmstart.tasks.readers import BASE, HEADS, SUFFIX, TokenIds, bind_heads, sequence_state, shift_right


@pytest.mark.parametrize("name", ["gpt2", "t5", "bart"])
def test_the_heads_are_the_classes_transformers_has(name, small_tokenizer):
    from warmstart.tokenization.tokenizer import Tokenizer

    tok = Tokenizer.load(small_tokenizer)
    for task, suffix in SUFFIX.items():
        exists = hasattr(transformers, BASE[name] + suffix)
        assert (task in HEADS[name]) == exists, (name, task)
        if exists:
            assert HEADS[name][task][0] == BASE[name] + suffix
            assert bind_heads(task, tok, {"pad_token_id": 0, "eos_token_id": 3}, family(name)) == TokenIds(
                0, 3, 0
            )
        else:
            with pytest.raises(WarmstartError, match=f"no {BASE[name]}{suffix} class"):
                bind_heads(task, tok, {}, family(name))
    assert bind_heads("multiple_choice", tok, {}, family("bert")) is None  # encoders: no ids needed


def test_rows_are_read_where_transformers_reads_them():
    ids = torch.tensor([[5, 2, 6, 2, 7, 0, 0], [5, 2, 8, 9, 2, 2, 0], [5, 6, 7, 8, 9, 10, 11]])
    mask = (ids != 0).long()
    mask[2] = 1
    assert torch.equal(shift_right(ids, 2, 0), shift_tokens_right(ids, 0, 2))
    hidden = torch.arange(3 * 7, dtype=torch.float32).view(3, 7, 1)
    batch, tokens = {"input_ids": ids, "attention_mask": mask}, TokenIds(pad=0, eos=2, start=2)

    def read(decoder_only: bool, pooling: str = "cls") -> list[float]:
        model = type("Model", (), {"decoder_only": decoder_only})()
        return sequence_state(model, hidden, batch, pooling, tokens)[:, 0].tolist()

    assert read(False) == [3, 7 + 5, 14 + 6]  # the last eos; a row without one: its last real token
    assert read(True) == [4, 7 + 5, 14 + 6]  # a decoder: the last real token
    assert read(True, "mean")[0] == pytest.approx(2.0)

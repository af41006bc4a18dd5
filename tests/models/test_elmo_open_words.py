"""ELMo's character model reads a word outside its vocabulary as the word's own characters, not as [UNK]:
the tokenizer's open copy gives the text's words ids after the vocabulary, and those ids last."""

import pytest
import torch

from warmstart.models.elmo import ElmoConfig, ElmoModel
from warmstart.models.tiny import tiny
from warmstart.nn.char_cnn import word_chars
from warmstart.tokenization.open_words import open_vocabulary, reading
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import train_tokenizer

NEW = "Zyxquvian"  # in no training text


@pytest.fixture(scope="module")
def word_tok(wiki_extracts, tmp_path_factory):
    return train_tokenizer(
        wiki_extracts[:300], "word", 1500, tmp_path_factory.mktemp("w") / "t", show_progress=False
    )


def test_the_open_copy_knows_new_words_and_keeps_their_ids(word_tok, small_tokenizer):
    base_size = word_tok.vocab_size
    assert word_tok.token_to_id(NEW) is None
    opened = open_vocabulary(word_tok, [f"The {NEW} river."], 48)
    first = opened.token_to_id(NEW)
    assert first >= base_size and word_tok.vocab_size == base_size  # the original is untouched
    assert opened.id_to_token(first) == NEW
    long_word = "x" * 60
    again = open_vocabulary(word_tok, [f"Qwertzuiop {NEW} {long_word}"], 48)
    assert again is opened and again.token_to_id(NEW) == first  # ids last across calls
    assert again.token_to_id("Qwertzuiop") > first
    assert again.token_to_id(long_word) is None  # longer than the character window: stays [UNK]
    ids, _ = again.encode_pairs([f"{long_word} {NEW}"], None, 8)
    assert ids[0][1:3] == [again.unk_id, first]
    pieces = Tokenizer.load(small_tokenizer)
    assert open_vocabulary(pieces, ["anything"], 48) is pieces  # not a word tokenizer


@pytest.mark.parametrize("representation", ["chars", "embeddings"])
def test_the_model_reads_a_new_words_characters(word_tok, representation):
    torch.manual_seed(0)
    model = ElmoModel(tiny(ElmoConfig, vocab_size=word_tok.vocab_size, token_representation=representation))
    model.bind(word_tok)
    model.eval()
    records = [{"text": f"The {NEW} river.", "label": "pos"}]
    words = reading(model, word_tok, records)
    if representation == "embeddings":  # a vector per token: a new word has none, [UNK] it stays
        assert words is word_tok
        return
    ids, _ = words.encode_pairs([records[0]["text"]], None, 8)
    position = ids[0].index(words.token_to_id(NEW))
    with torch.no_grad():
        layer = model.token_layer(torch.tensor(ids))[0, position]
        own = model.chars(torch.tensor([[word_chars(NEW, 50)]]))[0, 0]
        unk = model.token_layer(torch.tensor([[word_tok.unk_id]]))[0, 0]
    assert torch.allclose(layer, own) and not torch.allclose(layer, unk)
    assert "extra_chars" not in model.state_dict()  # a run saves the vocabulary's table only

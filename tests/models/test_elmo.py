"""ELMo's model: each direction reads only its side of the sequence, the presets have AllenNLP's parameter
counts, the clipped step loop computes what nn.LSTM does, and the character table holds the words."""

import pytest
import torch

from tests.helpers.models import count
from warmstart.config import from_dict, load_preset
from warmstart.errors import WarmstartError
from warmstart.models.elmo import ElmoConfig, ElmoModel
from warmstart.models.tiny import tiny
from warmstart.nn.char_cnn import BOW, EOW, PAD_CHAR, word_chars
from warmstart.nn.lstm import clipped_lstm, reverse
from warmstart.tokenization.train import train_tokenizer

# AllenNLP's ELMo page: small 13.6M, medium 28.0M, original 93.6M parameters (the softmax not counted);
# these are the exact sums of its layers (char embeddings 262 x 16, the CNN, highway, projection, 2 x 2
# LSTMs with one bias per gate and a projection).
PUBLISHED = {"elmo-small": 13_593_312, "elmo-medium": 28_027_744, "elmo-original": 93_600_864}


def published_count(model: ElmoModel) -> int:
    """Parameters as AllenNLP counts them: no softmax, and one LSTM bias (torch keeps b_ih and b_hh)."""
    extra = sum(p.numel() for n, p in model.named_parameters() if "bias_hh" in n)
    return count(model) - model.softmax.weight.numel() - extra


@pytest.mark.parametrize("preset", sorted(PUBLISHED))
def test_presets_have_the_published_parameter_counts(preset):
    cfg = from_dict(ElmoConfig, {**load_preset(preset)["model"], "vocab_size": 1000})
    with torch.device("meta"):
        model = ElmoModel(cfg)
    assert published_count(model) == PUBLISHED[preset]
    assert round(PUBLISHED[preset] / 1e6, 1) == {"elmo-small": 13.6, "elmo-medium": 28.0}.get(preset, 93.6)


@pytest.fixture(scope="module")
def word_tok(wiki_extracts, tmp_path_factory):
    return train_tokenizer(
        wiki_extracts[:400], "word", 2000, tmp_path_factory.mktemp("w") / "t", show_progress=False
    )


@pytest.fixture(params=["chars", "embeddings"])
def model(request, word_tok):
    torch.manual_seed(0)
    m = ElmoModel(tiny(ElmoConfig, vocab_size=word_tok.vocab_size, token_representation=request.param))
    m.bind(word_tok)
    return m.eval()


def test_each_direction_reads_only_its_side(model, word_tok, wiki_extracts):
    """Changing the token at position k moves forward states at k and after only, backward states at k
    and before only: at every layer, padded rows included."""
    (ids,), _ = word_tok.encode_pairs([wiki_extracts[5]], None, 16)
    ids = torch.tensor([ids, ids])
    mask = torch.ones_like(ids)
    mask[1, 12:] = 0  # the second row: 12 real tokens, then padding
    k = 6
    changed = ids.clone()
    changed[:, k] = (ids[0, k] + 7) % word_tok.vocab_size
    with torch.no_grad():
        _, f0, b0 = model.directions(ids, mask)
        _, f1, b1 = model.directions(changed, mask)
    for layer in range(len(f0)):
        moved_f = (f0[layer] - f1[layer]).abs().amax(-1) > 1e-6
        moved_b = (b0[layer] - b1[layer]).abs().amax(-1) > 1e-6
        for row, real in ((0, 16), (1, 12)):
            assert not moved_f[row, :k].any() and moved_f[row, k:real].all()
            assert not moved_b[row, k + 1 : real].any() and moved_b[row, : k + 1].all()


def test_reverse_keeps_padding_in_place():
    x = torch.arange(10.0).reshape(2, 5, 1)
    out = reverse(x, torch.tensor([5, 3]))
    assert out[0, :, 0].tolist() == [4, 3, 2, 1, 0] and out[1, :, 0].tolist() == [7, 6, 5, 8, 9]
    assert torch.equal(reverse(out, torch.tensor([5, 3])), x)


def test_the_step_loop_is_nn_lstm_and_clips():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(8, 16, proj_size=8, batch_first=True)
    x = torch.randn(3, 7, 8) * 3
    with torch.no_grad():
        assert (clipped_lstm(lstm, x, 0, 0) - lstm(x)[0]).abs().max() < 1e-5
        for p in lstm.parameters():
            p.mul_(20)
        assert clipped_lstm(lstm, x, 3.0, 0.5).abs().max() <= 0.5
        assert lstm(x)[0].abs().max() > 0.5


def test_the_character_table_holds_each_word(word_tok):
    m = ElmoModel(tiny(ElmoConfig, vocab_size=word_tok.vocab_size))
    m.bind(word_tok)
    word = "Paris"
    row = m.char_table[word_tok.token_to_id(word)].tolist()
    assert row == word_chars(word, 50) and row[:7] == [BOW + 1, *(b + 1 for b in b"Paris"), EOW + 1]
    assert row[7:] == [PAD_CHAR + 1] * 43
    assert m.char_table[word_tok.bos_id].tolist()[:3] == [BOW + 1, 256 + 1, EOW + 1]


def test_a_word_piece_tokenizer_or_a_long_word_is_refused(small_tokenizer, word_tok):
    from warmstart.tokenization.tokenizer import Tokenizer

    m = ElmoModel(tiny(ElmoConfig, vocab_size=1000))
    with pytest.raises(WarmstartError, match="a wordpiece tokenizer cuts them into pieces"):
        m.bind(Tokenizer.load(small_tokenizer))
    short = ElmoModel(tiny(ElmoConfig, vocab_size=word_tok.vocab_size, max_characters_per_token=5))
    with pytest.raises(WarmstartError, match="max_characters_per_token=5"):
        short.bind(word_tok)

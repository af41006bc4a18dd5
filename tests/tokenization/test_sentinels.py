"""T5 sentinels added to a trained unigram tokenizer: ids, encoding, special status, idempotence."""

import pytest
import torch

from warmstart.errors import WarmstartError
from warmstart.objectives.mlm import IGNORE, MLMConfig, mask_tokens
from warmstart.objectives.span_corruption import sentinel_ids
from warmstart.tokenization.sentinels import add_sentinels
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import train_tokenizer


@pytest.fixture(scope="module")
def unigram(wiki_extracts, tmp_path_factory):
    out = tmp_path_factory.mktemp("unigram") / "tok"
    return train_tokenizer(
        wiki_extracts[:600], kind="unigram", vocab_size=1000, out_dir=out, show_progress=False
    )


def test_sentinels_take_the_last_ids_in_reverse(unigram):
    tok = add_sentinels(unigram, 100)
    assert tok.vocab_size == unigram.vocab_size + 100
    assert tok.token_to_id("<extra_id_0>") == tok.vocab_size - 1  # T5: extra_id_0 = 32099 of 32100
    assert tok.token_to_id("<extra_id_99>") == unigram.vocab_size
    assert sentinel_ids(tok) == list(range(tok.vocab_size - 1, unigram.vocab_size - 1, -1))
    assert tok.roles == unigram.roles and tok.algorithm == "unigram"
    assert unigram.token_to_id("<extra_id_0>") is None  # the input tokenizer is left as it was
    assert tok.encode("plain text") == unigram.encode("plain text")


def test_sentinel_encodes_as_one_special_id(unigram):
    tok = add_sentinels(unigram, 10)
    ids = tok.encode("a <extra_id_3> b")
    sentinel = tok.token_to_id("<extra_id_3>")
    assert ids.count(sentinel) == 1
    assert tok.decode(ids, skip_special_tokens=False) == "a <extra_id_3> b"
    assert set(sentinel_ids(tok)) <= tok.special_ids
    assert tok.pad_id in tok.special_ids and tok.eos_id in tok.special_ids


def test_masking_never_picks_sentinels(unigram):
    tok = add_sentinels(unigram, 10)
    sentinels = torch.tensor(sentinel_ids(tok))
    ids = torch.randint(10, 900, (64, 50), generator=torch.Generator().manual_seed(0))
    ids[:, ::5] = sentinels[torch.arange(10)].repeat(64, 1)
    special = torch.tensor(sorted(tok.special_ids))
    inputs, labels = mask_tokens(
        ids, MLMConfig(mask_prob=0.9), tok.mask_id, tok.vocab_size, special, torch.Generator().manual_seed(1)
    )
    at_sentinel = torch.isin(ids, sentinels)
    assert (labels[at_sentinel] == IGNORE).all() and torch.equal(inputs[at_sentinel], ids[at_sentinel])
    assert not torch.isin(inputs[~at_sentinel], sentinels).any()  # never sampled as random tokens


def test_idempotent_and_survives_save_load(unigram, tmp_path):
    tok = add_sentinels(unigram, 100)
    again = add_sentinels(tok, 100)
    assert again.vocab_size == tok.vocab_size
    assert add_sentinels(tok, 10).vocab_size == tok.vocab_size  # fewer than present: nothing to add
    tok.save(tmp_path / "t5tok")
    loaded = Tokenizer.load(tmp_path / "t5tok")
    assert sentinel_ids(loaded) == sentinel_ids(tok)
    assert set(sentinel_ids(loaded)) <= loaded.special_ids
    assert loaded.fingerprint() == tok.fingerprint()


def test_partial_sentinels_and_bad_count_refused(unigram):
    with pytest.raises(WarmstartError, match="already has 10 of the 100"):
        add_sentinels(add_sentinels(unigram, 10), 100)
    with pytest.raises(WarmstartError, match="positive"):
        add_sentinels(unigram, 0)


def test_sentinel_ids_without_sentinels_says_how_to_add_them(unigram):
    with pytest.raises(WarmstartError, match="no sentinel tokens") as info:
        sentinel_ids(unigram)
    assert "--sentinels" in info.value.fix

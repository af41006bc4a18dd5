"""Position-table initialisation: BERT's normal, or sinusoidal (still a learned table)."""

import pytest
import torch

from tests.helpers.shapes import tiny_bert_config
from warmstart.errors import WarmstartError
from warmstart.models.bert import BertModel


def _model(**kw):
    return BertModel(tiny_bert_config(100, max_position_embeddings=512, **kw))


def test_sinusoidal_positions_are_learned_scaled_and_local():
    m = _model(position_init="sinusoidal", initializer_range=0.02)
    table = m.embeddings.position.weight
    assert table.requires_grad
    assert abs(table.std().item() - 0.02) < 1e-4
    unit = torch.nn.functional.normalize(table, dim=-1)
    near, far = (unit[10] @ unit[11]).item(), (unit[10] @ unit[200]).item()
    assert near > 0.9 and far < near - 0.3  # neighbours look alike; the random table has no such order
    rand = torch.nn.functional.normalize(_model().embeddings.position.weight, dim=-1)
    assert abs((rand[10] @ rand[11]).item()) < 0.5


def test_unknown_position_init_is_a_clear_error():
    with pytest.raises(WarmstartError, match="unknown model.position_init 'rope'"):
        _model(position_init="rope")

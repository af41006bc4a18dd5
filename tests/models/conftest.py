import pytest


@pytest.fixture(scope="session")
def tokenizer(small_tokenizer):
    """The small real WordPiece tokenizer, loaded."""
    from warmstart.tokenization.tokenizer import Tokenizer

    return Tokenizer.load(small_tokenizer)

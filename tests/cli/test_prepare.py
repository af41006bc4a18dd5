"""`warmstart prepare --tokenizer RUN`: shards in a run's own ids (continued pretraining on a task's text)."""

from warmstart.checkpoints.load import resolve_checkpoint
from warmstart.cli.main import main
from warmstart.data.shards import TokenShards
from warmstart.tokenization.tokenizer import Tokenizer


def test_prepare_with_a_runs_tokenizer(tiny_pretrained, tmp_path, capsys):
    text = tmp_path / "reviews.txt"
    lines = [f"a review number {i} of a film that was fine" for i in range(2000)]
    text.write_text("\n".join(lines) + "\n")
    out = tmp_path / "shards"
    assert (
        main(["prepare", "--corpus", str(text), "--tokenizer", str(tiny_pretrained), "--out", str(out)]) == 0
    )
    shards = TokenShards.open(out, "train")
    own = Tokenizer.load(resolve_checkpoint(tiny_pretrained))
    shards.check_tokenizer(own)  # the run's tokenizer: no mismatch
    encoded = {tuple(ids) for ids in own.encode_batch(lines)}
    docs = [tuple(int(t) for t in shards.doc(k) if t != shards.doc_sep_id) for k in range(shards.num_docs)]
    assert docs and all(d in encoded for d in docs)  # every document in the run's own ids
    assert "token shards written" in capsys.readouterr().out

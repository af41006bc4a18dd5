"""`torchrun --nproc_per_node 2 -m warmstart prepare` (CPU, gloo, real subprocesses): one shard set and one
meta.json, byte for byte what one process writes; a failed or killed process leaves no shard set and no
temporary files."""

import gzip
import json
import os
import signal

from tests.helpers.dist import MARKS, gone, run, start, wait_until, workers

pytestmark = MARKS


def _corpus(path, texts) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"text": t}) + "\n" for t in texts)


def _meta(out) -> dict:
    meta = json.loads((out / "meta.json").read_text())
    return {k: v for k, v in meta.items() if k not in ("seconds", "created")}


def _left(root) -> list:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("."))


def test_two_processes_write_the_shards_of_one(tmp_path, wiki_extracts, small_tokenizer):
    """2,600 documents (3 batches of 1,024 in train: processes 0, 1, 0), 100 of them copies, dropped."""
    corpus = tmp_path / "c.jsonl.gz"
    _corpus(corpus, wiki_extracts[:2500] + wiki_extracts[100:200])
    args = ["prepare", "--corpus", str(corpus), "--tokenizer", str(small_tokenizer), "--dedupe"]
    outs = {procs: tmp_path / f"procs{procs}" for procs in (0, 2)}
    for procs, out in outs.items():
        code, err = run(procs, [*args, "--out", str(out)], tmp_path / f"log{procs}")
        assert code == 0, err
        assert err.count("dropped 100 exact duplicate documents") == 1, err  # process 0 speaks for all
    one, two = outs[0], outs[2]
    assert _meta(one) == _meta(two) and _meta(two)["dedupe"]["dropped"] == 100
    files = sorted(p.name for p in one.glob("*.bin"))
    assert len(files) == 6 and sorted(p.name for p in two.glob("*.bin")) == files
    assert all((one / f).read_bytes() == (two / f).read_bytes() for f in files)
    assert _left(tmp_path) == []  # no temporary directory, no partial files
    out = (tmp_path / "log2.out").read_text()
    assert out.count("token shards written to") == 1


def test_a_failed_process_leaves_no_shard_set(tmp_path, wiki_extracts, small_tokenizer):
    corpus = tmp_path / "c.jsonl.gz"
    texts = [json.dumps({"text": t}) for t in wiki_extracts[:2500]]
    texts[2200] = "{not json"
    with gzip.open(corpus, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(texts) + "\n")
    out = tmp_path / "s"
    args = ["prepare", "--corpus", str(corpus), "--tokenizer", str(small_tokenizer), "--out", str(out)]
    code, err = run(2, args, tmp_path / "bad")
    assert code != 0 and "error: bad JSON on line 2201" in err, err
    assert "warmstart/" not in err  # no traceback of ours (torchrun prints its own report)
    assert not out.exists() and _left(tmp_path) == []

    out.mkdir()  # a directory warmstart did not make: refused before anything is written
    (out / "keep.txt").write_text("mine")
    code, err = run(2, [*args, "--overwrite"], tmp_path / "foreign")
    assert code != 0 and "error: " in err and (out / "keep.txt").read_text() == "mine"
    assert _left(tmp_path) == []


def test_a_killed_process_leaves_no_shard_set(tmp_path, wiki_extracts, small_tokenizer):
    corpus = tmp_path / "c.jsonl.gz"
    _corpus(corpus, [f"{i}: {t}" for i in range(4) for t in wiki_extracts[:3000]])
    out = tmp_path / "s"
    args = ["prepare", "--corpus", str(corpus), "--tokenizer", str(small_tokenizer), "--out", str(out)]
    proc = start(2, args, tmp_path / "log")
    try:
        wait_until(lambda: any(tmp_path.glob(".s.tmp-*/parts/train.rank00001.tokens")), 120, "the parts")
        pids = workers(proc.pid)
        assert sorted(pids) == [0, 1], pids
        os.kill(pids[1], signal.SIGKILL)
        wait_until(lambda: gone(pids[0]), 60, "process 0 to exit")
    finally:
        proc.wait(timeout=60)
    assert proc.returncode != 0
    assert not out.exists() and _left(tmp_path) == [], (tmp_path / "log.err").read_text()

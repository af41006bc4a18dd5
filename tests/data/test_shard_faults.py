"""An interrupted `warmstart prepare` leaves nothing behind: its temporary directory goes on any error, on
Ctrl-C and on SIGTERM; the temporary directory of a prepare killed outright (SIGKILL) is removed by the next
prepare into the same place, which also puts back an output that the killed one had moved aside."""

import errno
import json
import os
import signal
import subprocess
import sys

import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.data import shard_writer
from warmstart.data.shard_writer import prepare_shards
from warmstart.tokenization.tokenizer import Tokenizer

pytestmark = pytest.mark.integration


def hidden(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


@pytest.fixture
def corpus(wiki_extracts, tmp_path):
    """400 real extracts, one per line: every split (train, validation, test) gets some."""
    path = tmp_path / "corpus.txt"
    path.write_text("".join(t.replace("\n", " ")[:400] + "\n" for t in wiki_extracts[:400]), encoding="utf-8")
    return path


def test_an_error_after_the_first_shard_leaves_nothing(wiki_extracts, small_tokenizer, tmp_path, monkeypatch):
    real, opened = shard_writer.SplitWriter._open_next, []

    def open_next(self):
        if opened:
            raise RuntimeError("injected after the first shard")
        opened.append(self)
        real(self)

    monkeypatch.setattr(shard_writer.SplitWriter, "_open_next", open_next)
    out = tmp_path / "s"
    with pytest.raises(RuntimeError, match="injected"):
        prepare_shards(
            {"train": wiki_extracts[:50]},
            Tokenizer.load(small_tokenizer),
            out,
            shard_tokens=64,
            show_progress=False,
        )
    assert opened and not out.exists() and hidden(tmp_path) == []


def _disk_full():
    raise OSError(errno.ENOSPC, "No space left on device")


def _ctrl_c():
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    "fault, code, says",
    [(_ctrl_c, 130, "interrupted"), (_disk_full, 2, "disk is full")],
)
def test_prepare_interrupted_after_the_first_split_leaves_nothing(
    corpus, small_tokenizer, tmp_path, capsys, monkeypatch, fault, code, says
):
    real, calls = shard_writer.SplitWriter.write_docs, []

    def write_docs(self, docs, sep):
        calls.append(self.split)
        if self.split != "train":
            fault()
        real(self, docs, sep)

    monkeypatch.setattr(shard_writer.SplitWriter, "write_docs", write_docs)
    before, handler = corpus.read_bytes(), signal.getsignal(signal.SIGTERM)
    out = tmp_path / "s"
    got, _, err = run(capsys, "prepare", "--corpus", corpus, "--tokenizer", small_tokenizer, "--out", out)
    assert got == code and says in err and "Traceback" not in err
    assert calls[0] == "train" and calls[-1] != "train"  # the train split was written, then the fault
    assert not out.exists() and hidden(tmp_path) == []
    assert corpus.read_bytes() == before and signal.getsignal(signal.SIGTERM) == handler


TERMINATED = """
import os, signal, sys
from warmstart.cli.main import main
from warmstart.data import shard_writer
real = shard_writer.SplitWriter.write_docs
def write_docs(self, docs, sep):
    if self.split != "train":  # SIGTERM (a scheduler's preemption) after the train split was written
        os.kill(os.getpid(), signal.SIGTERM)
    real(self, docs, sep)
shard_writer.SplitWriter.write_docs = write_docs
sys.exit(main(["prepare", "--corpus", sys.argv[1], "--tokenizer", sys.argv[2], "--out", sys.argv[3]]))
"""


def test_sigterm_during_prepare_removes_its_temporary(corpus, small_tokenizer, tmp_path):
    out, before = tmp_path / "s", corpus.read_bytes()
    argv = [sys.executable, "-c", TERMINATED, str(corpus), str(small_tokenizer), str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert f"stopped by SIGTERM: {out} was not written" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists() and hidden(tmp_path) == [] and corpus.read_bytes() == before


KILLED = """
import os, signal, sys
from warmstart.data import shard_writer
from warmstart.tokenization.tokenizer import Tokenizer
if sys.argv[3] == "write":  # killed outright after the first shard
    real = shard_writer.SplitWriter.write_docs
    def write_docs(self, docs, sep):
        real(self, docs, sep)
        os.kill(os.getpid(), signal.SIGKILL)
    shard_writer.SplitWriter.write_docs = write_docs
else:  # killed between moving the old output aside and renaming the new one into place
    replace = os.replace
    def moved(src, dst):
        replace(src, dst)
        if str(dst).endswith("old"):
            os.kill(os.getpid(), signal.SIGKILL)
    os.replace = moved
texts = {"train": ["a few words of text"] * 20, "validation": ["more words"] * 3}
tok = Tokenizer.load(sys.argv[1])
shard_writer.prepare_shards(texts, tok, sys.argv[2], overwrite=True, show_progress=False)
"""


def killed_prepare(tokenizer, out, where: str):
    done = subprocess.run([sys.executable, "-c", KILLED, str(tokenizer), str(out), where], timeout=300)
    assert done.returncode == -signal.SIGKILL


def test_the_next_prepare_removes_the_temporary_of_a_killed_one(corpus, small_tokenizer, tmp_path, capsys):
    out = tmp_path / "s"
    killed_prepare(small_tokenizer, out, "write")
    (stale,) = hidden(tmp_path)
    assert stale.startswith(".s.tmp-") and not out.exists()
    dead, host = stale.removeprefix(".s.tmp-").split("@")[0], stale.split("@", 1)[1].rsplit("-", 1)[0]
    (tmp_path / f".s.tmp-{dead}").mkdir()  # the plain .<out>.tmp-<pid> of a dead process: removed too
    kept = [
        f".s.tmp-{os.getpid()}@{host}-running1",  # a prepare still running
        f".s.tmp-{dead}@another-host-remote12",  # a pid of another machine
        f".t.tmp-{dead}",  # the temporary of another output
        ".s.tmp-notapid",
    ]
    for name in kept:
        (tmp_path / name).mkdir()
    code, _, err = run(capsys, "prepare", "--corpus", corpus, "--tokenizer", small_tokenizer, "--out", out)
    assert code == 0, err
    assert (out / "meta.json").is_file() and hidden(tmp_path) == sorted(kept)


def test_an_output_moved_aside_by_a_killed_prepare_is_put_back(corpus, small_tokenizer, tmp_path, capsys):
    out = tmp_path / "s"
    argv = ["prepare", "--corpus", corpus, "--tokenizer", small_tokenizer, "--out", out]
    code, _, err = run(capsys, *argv)
    meta = (out / "meta.json").read_text() if code == 0 else pytest.fail(err)
    killed_prepare(small_tokenizer, out, "swap")
    assert not out.exists() and len(hidden(tmp_path)) == 2  # the new output and the old one, aside
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, "already exists")  # the previous output is back, and kept
    assert (out / "meta.json").read_text() == meta and json.loads(meta)["splits"]["train"]["num_docs"] > 0
    assert hidden(tmp_path) == []

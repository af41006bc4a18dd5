"""data.max_tokens: pretraining on the first N tokens of the train split, repeated to fill the steps; the run
says its unique tokens and repeats, resumes exactly, and refuses a resume with another limit."""

import json
import time

import numpy as np
import pytest

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.runs import Interrupt, assert_resumes_exactly, run_args, stop_at
from tests.helpers.shapes import TINY_MODEL
from warmstart.commands.pretrain import pretrain
from warmstart.data.shards import TokenShards

pytestmark = pytest.mark.integration

WIDTH, BATCH = 30, 8  # data.seq_len=32 less [CLS] and [SEP]; windows per micro-batch


def test_head_is_the_first_tokens_and_their_documents(small_shards):
    whole = TokenShards.open(small_shards, "train")
    n = whole.num_tokens // 3
    head = whole.head(n)
    assert head.num_tokens == n and len(head) == n
    np.testing.assert_array_equal(head.read(0, n), whole.read(0, n))
    with pytest.raises(IndexError):
        head.read(n - 5, 6)  # one token past the limit
    starts = np.asarray(whole.doc_offsets)
    assert head.num_docs == int((starts < n).sum()) and 0 < head.num_docs < whole.num_docs
    assert head.doc_range(head.num_docs - 1)[1] <= n
    assert whole.head(10**9).num_tokens == whole.num_tokens  # a limit above the split: all of it


def limited_args(shards, out, max_tokens: int, steps: int) -> dict:
    flags = {"out": str(out), "data": {"shards": str(shards)}, "train": {"steps": steps}}
    overrides = TINY_MODEL + [
        "data.seq_len=32",
        f"train.batch_size={BATCH}",
        f"data.max_tokens={max_tokens}",
        "train.eval_every=0",
        "train.save_every=0",
        "train.progress=false",
        "train.seed=5",
    ]
    return dict(preset=None, config_file=None, flags=flags, overrides=overrides)


def test_pretraining_sees_exactly_the_first_windows_every_epoch(small_shards, tmp_path, monkeypatch, capsys):
    """4 batches of 8 windows: N = 32 windows and 29 tokens, rounded down to the 32 windows (960 tokens)
    at the start of the split; 8 steps = 2 epochs, each over those 32 windows and no others, reshuffled."""
    windows, n = 4 * BATCH, 4 * BATCH * WIDTH + WIDTH - 1
    events, validation = [], set()
    read = TokenShards.read

    def spy(self, start, length):
        if self.split == "train":
            events.append((int(start), int(length)))
        else:
            validation.add(int(start))
        return read(self, start, length)

    monkeypatch.setattr(TokenShards, "read", spy)
    result = pretrain(
        **limited_args(small_shards, tmp_path / "run", n, 8), hooks=[lambda step, loss: events.append(step)]
    )
    steps = [i for i, e in enumerate(events) if isinstance(e, int)]  # on_step(step, loss) marks each step
    assert len(steps) == 8
    epochs = [
        [e for e in events[a + 1 : b] if isinstance(e, tuple)] for a, b in ((-1, steps[3]), steps[3::4])
    ]
    for reads in epochs:
        assert len(reads) == windows and {length for _, length in reads} == {WIDTH}
        assert sorted(start for start, _ in reads) == [i * WIDTH for i in range(n // WIDTH)]  # each once
    assert epochs[0] != epochs[1]  # the same windows come back, in another order
    whole = TokenShards.open(small_shards, "validation").num_tokens // WIDTH
    assert validation == {i * WIDTH for i in range(whole)}  # validation: every window of the split
    acc = json.loads((tmp_path / "run" / "unique_tokens.json").read_text())
    assert acc == result["data"]
    assert (acc["examples"], acc["unique_tokens"], acc["repeats"]) == (windows, windows * WIDTH, 2.0)
    assert acc["limited"] and acc["split_tokens"] == TokenShards.open(small_shards).num_tokens
    out = capsys.readouterr().out
    assert f"{windows} windows of {WIDTH} tokens = {windows * WIDTH} unique tokens" in out
    assert "= 2 repeats" in out


def test_a_limit_above_the_split_trains_on_all_of_it_and_says_so(small_shards, tmp_path, capsys):
    total = TokenShards.open(small_shards).num_tokens
    result = pretrain(**limited_args(small_shards, tmp_path / "run", total * 10, 2))
    assert "is more than the" in capsys.readouterr().out
    assert not result["data"]["limited"] and result["data"]["examples"] == total // WIDTH


def test_resume_with_the_limit_is_exact_and_another_limit_is_refused(small_shards, tmp_path, capsys):
    """run_args: 16 steps of 2 micro-batches of 16 windows; a 40-window limit makes every epoch 2
    micro-batches, so the cut at step 6 (resumed from step 4) lies in the fifth epoch."""
    n = 40 * WIDTH

    def args(out):
        a = run_args(small_shards, out)
        return {**a, "overrides": a["overrides"] + [f"data.max_tokens={n}"]}

    full = pretrain(**args(tmp_path / "full"))
    assert full["data"]["repeats"] == 16 * 2 * 16 / 40
    assert_resumes_exactly(args, tmp_path / "full", tmp_path / "cut", stop=6, steps=16)

    with pytest.raises(Interrupt):
        pretrain(**args(tmp_path / "again"), hooks=[stop_at(6)])
    code, _, err = run(capsys, "pretrain", "--resume", tmp_path / "again", f"data.max_tokens={2 * n}")
    assert_one_line_error(code, err, "cannot resume", f"data.max_tokens (was {n}, now {2 * n})")


def test_a_time_budget_accounts_the_steps_it_ran(small_shards, tmp_path, monkeypatch):
    """train.time_budget plans fewer than train.steps: the repeats said at the end (and in
    unique_tokens.json) are those of the steps run, not of train.steps. The budget's clock runs 1,000 times
    faster than the wall, so 12 s of budget plan the run down to the steps before its plan."""
    from warmstart.train import time_budget

    monkeypatch.setattr(time_budget, "clock", lambda: time.perf_counter() * 1000)
    args = limited_args(small_shards, tmp_path / "held", 4 * BATCH * WIDTH, steps=60)
    args["overrides"] += ["train.time_budget=0.2"]
    result = pretrain(**args)
    ran, acc = result["step"], result["data"]
    assert ran < 60 and acc["steps"] == ran
    assert acc["examples_seen"] == ran * BATCH and acc["repeats"] == ran * BATCH / (4 * BATCH)
    assert json.loads((tmp_path / "held" / "unique_tokens.json").read_text()) == acc

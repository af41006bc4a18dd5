"""Token ids bounded before ``tokenizers`` builds its tables (issue 38): a small tokenizer.json declaring one
id of 2,000,000,000 (which cost tens of seconds and gigabytes per load) is refused in well under a second,
within a bounded address space, through `warmstart tokenizer explain`, `warmstart pretrain` and finetune's
loader; tokenizers whose ids have gaps still load."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from warmstart.errors import WarmstartError
from warmstart.hub.tokenizer import load_hf_tokenizer
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.vocab_ids import SLACK, bound

HUGE = 2_000_000_000
MODEL = Path(__file__).parents[1] / "fixtures" / "old_runs" / "pretrained" / "final"  # 200-token WordPiece
ROOM = 2 << 30  # the address space the call may add to the interpreter's own (building the table: ~8 GB)

CLI = "from warmstart.cli.main import build_parser, main; build_parser()"  # its imports done before the clock

# A fresh interpreter: imports first, then its address space capped at what it uses plus ROOM (so a
# regression dies of a failed allocation instead of taking the machine's memory), then CALL timed.
BOUNDED = """
import json, resource, sys, time
from warmstart.errors import WarmstartError
{imports}
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
hard = resource.getrlimit(resource.RLIMIT_AS)[1]
cap = int(status["VmSize"].split()[0]) * 1024 + {room}
resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
rss, start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.monotonic()
try:
    result = {call}
    code = result if isinstance(result, int) else 0
except WarmstartError as exc:
    print("error: " + str(exc), file=sys.stderr)
    code = 2
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
print(json.dumps({{"seconds": time.monotonic() - start, "grown_mib": grown}}))
sys.exit(code)
"""


def bounded(call: str, *imports: str) -> tuple[int, dict, str]:
    """(exit code, {seconds, grown_mib} of ``call``, stderr) in a fresh interpreter capped as above."""
    code = BOUNDED.format(imports="\n".join(imports), room=ROOM, call=call)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    lines = proc.stdout.strip().splitlines()
    return proc.returncode, json.loads(lines[-1]) if lines else {}, proc.stderr


def poison(directory: Path, token: str = "the", idx=HUGE) -> Path:
    """Give ``token`` of ``directory``'s tokenizer.json the id ``idx``; returns the directory."""
    path = directory / "tokenizer.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert token in data["model"]["vocab"]
    data["model"]["vocab"][token] = idx
    path.write_text(json.dumps(data), encoding="utf-8")
    return directory


def tokenizer_copy(tmp_path: Path) -> Path:
    d = tmp_path / "tok"
    d.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(MODEL / name, d / name)
    return d


def refused_quickly(code: int, took: dict, err: str) -> None:
    assert code == 2, err[-2000:]
    error = err.strip().splitlines()[-1]
    assert error.startswith("error: ") and "Traceback" not in err
    assert "tokenizer.json" in error and "'the'" in error and str(HUGE) in error
    assert took["seconds"] < 10 and took["grown_mib"] < 200, took  # a loop to the id would take minutes


def test_tokenizer_explain_refuses_a_huge_id_quickly_and_small(tmp_path):
    d = poison(tokenizer_copy(tmp_path))
    assert (d / "tokenizer.json").stat().st_size < 50_000
    call = f"main(['tokenizer', 'explain', {str(d)!r}, 'The river flows north.'])"
    refused_quickly(*bounded(call, CLI, "import warmstart.hub.tokenizer, warmstart.tokenization.explain"))


def test_pretrain_refuses_a_huge_id_quickly_and_small(tmp_path, wiki_extracts):
    d = poison(tokenizer_copy(tmp_path))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(wiki_extracts[:20]) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    args = ["pretrain", "--preset", "bert-mini", "--tokenizer", d, "--corpus", corpus, "--out", out]
    call = f"main({[str(a) for a in args]!r})"
    refused_quickly(*bounded(call, CLI, "import warmstart.commands.pretrain"))
    assert not out.exists()


def test_finetunes_loader_refuses_a_huge_id_quickly_and_small(tmp_path):
    d = tmp_path / "model"
    shutil.copytree(MODEL, d)
    poison(d)
    call = f"load_encoder({str(d)!r})"
    refused_quickly(*bounded(call, "from warmstart.checkpoints.load import load_encoder"))


@pytest.mark.parametrize("bad", [-1, 2.5, "7", True, 2 * 200 + SLACK + 50])
def test_ids_that_are_not_small_whole_numbers_are_refused(tmp_path, bad):
    d = poison(tokenizer_copy(tmp_path), idx=bad)
    with pytest.raises(WarmstartError, match="the token 'the' has the id"):
        Tokenizer.load(d)
    with pytest.raises(WarmstartError, match="the token 'the' has the id"):
        load_hf_tokenizer(d)  # a transformers directory's tokenizer.json


def test_an_added_tokens_huge_id_is_refused(tmp_path):
    d = tokenizer_copy(tmp_path)
    data = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))
    assert data["added_tokens"][0]["content"] == "[PAD]"
    data["added_tokens"][0]["id"] = HUGE
    (d / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(WarmstartError, match=re.escape(f"the token '[PAD]' has the id {HUGE}")):
        Tokenizer.load(d)


def test_ids_with_gaps_inside_the_bound_still_load(tmp_path):
    d = tokenizer_copy(tmp_path)
    data = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))
    declared = len(data["model"]["vocab"]) + len(data["added_tokens"])
    poison(d, idx=bound(declared) - 1)  # the largest id allowed
    tok = Tokenizer.load(d)
    assert tok.token_to_id("the") == bound(declared) - 1
    poison(d, idx=bound(declared))  # one more is refused
    with pytest.raises(WarmstartError, match=f"outside 0..{bound(declared) - 1}"):
        Tokenizer.load(d)


def test_a_unigram_unk_id_beyond_its_pieces_is_refused(tmp_path, wiki_extracts):
    from warmstart.tokenization.train import train_tokenizer

    d = tmp_path / "uni"
    train_tokenizer(wiki_extracts[:300], "unigram", 200, d, show_progress=False)
    data = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))
    data["model"]["unk_id"] = HUGE
    (d / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(WarmstartError, match=f"unk_id {HUGE} is not one of its"):
        Tokenizer.load(d)


def test_a_vocab_json_huge_id_is_refused(tmp_path):
    d = tmp_path / "gpt2"
    d.mkdir()
    vocab = {t: i for i, t in enumerate(["<|endoftext|>", "a", "b", "ab", "Ġ", "Ġab"])}
    vocab["ab"] = HUGE
    (d / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (d / "merges.txt").write_text("#version: 0.2\na b\nĠ ab\n", encoding="utf-8")
    with pytest.raises(WarmstartError, match=f"vocab.json: the token 'ab' has the id {HUGE}"):
        load_hf_tokenizer(d)

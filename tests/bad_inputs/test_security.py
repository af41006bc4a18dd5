"""Loading never runs code from a file: a malicious pickle is refused (and its payload never runs), and the
package holds none of the calls that could (unpickling, remote code, shell strings, archive extraction)."""

import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import warmstart

pytestmark = pytest.mark.integration

SCRIPT = Path(sys.executable).with_name("warmstart")
HF_CONFIG = {"model_type": "bert", "vocab_size": 1000, "hidden_size": 32, "num_hidden_layers": 1}


class Payload:
    """Unpickling this runs ``touch MARKER``."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def write_pickle(path: Path, marker: Path, protocol: int = pickle.DEFAULT_PROTOCOL) -> None:
    path.write_bytes(pickle.dumps({"bert.embeddings.word_embeddings.weight": Payload(marker)}, protocol))


def write_pickle_2(path: Path, marker: Path) -> None:
    write_pickle(path, marker, protocol=2)  # torch's own protocol: refused by name (GLOBAL posix.system)


def write_torch_zip(path: Path, marker: Path) -> None:
    torch.save({"bert.embeddings.word_embeddings.weight": Payload(marker)}, path)  # torch's zip format


@pytest.mark.parametrize(
    "write", [write_pickle, write_pickle_2, write_torch_zip], ids=["pickle", "pickle-2", "torch-zip"]
)
def test_import_refuses_a_malicious_pickle(write, tmp_path):
    marker = tmp_path / "pwned"
    src = tmp_path / "evil"
    src.mkdir()
    (src / "config.json").write_text(json.dumps(HF_CONFIG))
    write(src / "pytorch_model.bin", marker)
    assert not marker.exists()
    if not SCRIPT.is_file():
        pytest.skip(f"no warmstart script next to {sys.executable}")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    cmd = [str(SCRIPT), "import", str(src), "--out", str(tmp_path / "out")]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "pytorch_model.bin is not a plain weights file (loading it would run code" in lines[0]
    assert not marker.exists(), "the pickle's payload ran"
    assert not (tmp_path / "out").exists()


FORBIDDEN = {
    r"\bpickle\.loads?\(|\bUnpickler\(": "unpickling",
    r"\bdill\b|\bcloudpickle\b|\bjoblib\.load\(": "pickle-based loaders",
    r"trust_remote_code": "remote code",
    r"shell\s*=\s*True|\bos\.system\(|\bos\.popen\(": "shell commands",
    r"allow_pickle\s*=\s*True": "numpy pickles",
    r"\byaml\.(?:unsafe_)?load\(": "unsafe YAML (use yaml.safe_load)",
    r"(?<![\w.])(?:eval|exec)\(": "eval/exec",
    r"\.extractall\(": "archive extraction",
}


def test_the_package_never_runs_code_from_files():
    found = []
    for path in sorted(Path(warmstart.__file__).parent.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for pattern, what in FORBIDDEN.items():
            found += [f"{path.name}: {what}: {m.group(0)}" for m in re.finditer(pattern, text)]
        for m in re.finditer(r"\btorch\.load\(([^)]*)\)", text):
            if "weights_only=True" not in m.group(1):
                found.append(f"{path.name}: torch.load without weights_only=True")
    assert not found, found

"""Fuzzing with hypothesis: the file readers and the config parser either work or raise WarmstartError,
the one error type the CLI prints as a single line. Any other exception is a bug."""

import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warmstart import config as C
from warmstart.commands.finetune import FinetuneConfig
from warmstart.data.catalog import open_dataset
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError
from warmstart.generation.decode import GenerationConfig
from warmstart.pretraining.config import config_class
from warmstart.word2vec import io as vectors_io

FAST = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# file contents: random bytes, and text made of the characters that matter to each format
SYNTAX = st.text(st.sampled_from(list("abc \t\n\r,;\"'{}[]:=-_0123456789.\x00\xe9\ufeff")), max_size=300)
CONTENT = st.one_of(st.binary(max_size=300), SYNTAX.map(str.encode))
HEADERS = st.sampled_from([b"", b"text,label\n", b"text\tlabel\n", b'{"text": "a", "label": 1}\n'])


def ok_or_clear_error(call):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # undecodable lines are replaced and warned about: allowed
            return call()
    except WarmstartError:
        return None


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@pytest.mark.parametrize("suffix", [".txt", ".csv", ".tsv", ".jsonl", ".parquet", ".conll", ".json"])
@FAST
@given(header=HEADERS, body=CONTENT, labeled=st.booleans())
def test_file_readers(scratch, suffix, header, body, labeled):
    path = scratch / f"data{suffix}"
    path.write_bytes(header + body)
    options = DataOptions(label_column="label" if labeled else None)

    def read_all():
        data = open_dataset(str(path), options)
        return [list(data.records(split)) for split in ("train", "validation", "test")]

    ok_or_clear_error(read_all)


@pytest.mark.parametrize("suffix", [".txt", ".bin", ".npy"])
@FAST
@given(body=st.one_of(CONTENT, st.sampled_from([b"2 2\n", b"1 2\nw 1 2\n", b"1 1\nw "])))
def test_word_vector_readers(scratch, suffix, body):
    path = scratch / f"vectors{suffix}"
    path.write_bytes(body)
    (scratch / "vectors.vocab.txt").write_bytes(body[:20])  # the word list beside a .npy matrix
    ok_or_clear_error(lambda: vectors_io.load(path))


KEYS = sorted(
    {k for arch in ("bert", "gpt2", "t5", "bart") for k in C.all_keys(config_class({"arch": arch}))}
    | set(C.all_keys(FinetuneConfig))
)
VALUES = st.one_of(
    st.text(max_size=20),
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=True).map(str),
    st.sampled_from(["", "null", "true", "[1, 2]", "{a: 1}", "1e400", "-0", ".5", "a,b", "1,2,3", ": x"]),
)
OVERRIDES = st.one_of(st.text(max_size=40), st.tuples(st.sampled_from(KEYS), VALUES).map("=".join))


@FAST
@given(overrides=st.lists(OVERRIDES, max_size=4), arch=st.sampled_from(["bert", "gpt2", "t5", "bart"]))
def test_config_overrides(overrides, arch):
    def parse():
        explicit = {"arch": arch}
        for text in overrides:
            explicit = C.merge(explicit, C.parse_override(text))
        C.from_dict(config_class({"arch": arch}), explicit)
        C.from_dict(FinetuneConfig, {k: v for k, v in explicit.items() if k != "arch"})
        C.from_dict(GenerationConfig, explicit)

    ok_or_clear_error(parse)


YAML = st.text(st.sampled_from(list("abt: -\n[]{}'\"0123456789.,&*!|>%@`#\t")), max_size=200)


@FAST
@given(body=st.one_of(YAML.map(str.encode), st.text(max_size=100).map(str.encode), st.binary(max_size=100)))
def test_config_files(scratch, body):
    path = scratch / "config.yaml"
    path.write_bytes(body)
    ok_or_clear_error(lambda: C.from_dict(FinetuneConfig, C.load_yaml(path)))


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5), st.lists, max_leaves=5)
FIELDS = st.sampled_from(["text", "tokens", "question", "context", "choices", "label"])
OBJECTS = st.dictionaries(FIELDS, JSON, max_size=4).map(json.dumps)


@FAST
@given(line=st.one_of(SYNTAX, OBJECTS), kind=st.sampled_from(["labeled", "tagging", "qa", "choice"]))
def test_prediction_input_lines(line, kind):
    from warmstart.inference.records import parse_record

    ok_or_clear_error(lambda: parse_record(line, 1, kind))

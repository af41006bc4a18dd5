import csv
import json
import warnings

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from warmstart.data.readers import file_columns, read_file
from warmstart.errors import WarmstartError

ROWS = [
    {"text": "first, with a comma", "pair": "p1", "label": "pos", "other": 1},
    {"text": 'second "quoted" text', "pair": "p2", "label": "neg", "other": 2},
    {"text": "third ünïcödé", "pair": "p3", "label": "pos", "other": 3},
]
EXPECTED = [{"text": r["text"], "text_pair": r["pair"], "label": r["label"]} for r in ROWS]
OPTIONS = {"text_column": "text", "text_pair_column": "pair", "label_column": "label"}


def write(path, rows):
    suffix = path.suffix
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    elif suffix == ".tsv":  # GLUE style: no quoting
        lines = ["\t".join(rows[0])] + ["\t".join(str(v) for v in r.values()) for r in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(list(rows[0]))
            writer.writerows([list(r.values()) for r in rows])
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".tsv", ".parquet"])
def test_round_trip(tmp_path, suffix):
    path = write(tmp_path / f"data{suffix}", ROWS)
    assert list(read_file(path, **OPTIONS)) == EXPECTED
    assert list(read_file(path)) == [{"text": r["text"]} for r in ROWS]
    assert file_columns(path) == ["text", "pair", "label", "other"]


def test_parquet_reads_in_batches(tmp_path):
    rows = [{"text": f"doc {i}", "label": i % 3} for i in range(10000)]
    path = write(tmp_path / "big.parquet", rows)
    got = list(read_file(path, label_column="label"))
    assert len(got) == 10000 and got[-1] == {"text": "doc 9999", "label": "0"}


def test_txt_modes(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("one\ntwo\n\n\nthree\nfour\n   \nfive", encoding="utf-8")
    assert [r["text"] for r in read_file(path)] == ["one", "two", "three", "four", "five"]
    assert [r["text"] for r in read_file(path, txt_mode="blank")] == ["one\ntwo", "three\nfour", "five"]
    with pytest.raises(WarmstartError, match="txt_mode"):
        read_file(path, txt_mode="page")


def test_empty_text_is_skipped_in_corpora_and_an_error_in_labeled_data(tmp_path):
    path = write(tmp_path / "e.csv", [{"text": "a", "label": "x"}, {"text": "  ", "label": "y"}])
    assert list(read_file(path)) == [{"text": "a"}]
    with pytest.raises(WarmstartError, match="line 3 of .* has a label but an empty 'text'"):
        list(read_file(path, label_column="label"))


def test_empty_second_text_of_a_pair_is_an_error(tmp_path):
    path = write(tmp_path / "p.csv", [{"a": "x", "b": "y", "label": "1"}, {"a": "x", "b": " ", "label": "0"}])
    with pytest.raises(WarmstartError, match="line 3 .* no value for column 'b'"):
        list(read_file(path, text_column="a", text_pair_column="b", label_column="label"))


def test_non_utf8_is_replaced_with_one_warning(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"good line\ncaf\xe9 latin-1\nfine\n\xff\xfe also bad\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        texts = [r["text"] for r in read_file(path)]
    assert texts == ["good line", "caf\ufffd latin-1", "fine", "\ufffd\ufffd also bad"]
    assert len(caught) == 1 and issubclass(caught[0].category, UnicodeWarning)
    message = str(caught[0].message)
    assert "2 line(s)" in message and "line 2" in message and "save" in message and "UTF-8" in message


def test_bom_is_dropped(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufefftext,label\nhello,a\n".encode())
    assert list(read_file(path, label_column="label")) == [{"text": "hello", "label": "a"}]


def test_a_semicolon_csv_is_read_by_its_semicolons(tmp_path):
    """Excel where the decimal mark is a comma writes ``;`` between fields: the header has no comma."""
    path = tmp_path / "excel.csv"
    path.write_text('review;sentiment\n"good; really, good";fresh\nbad, dull;rotten\n', encoding="utf-8-sig")
    assert file_columns(path) == ["review", "sentiment"]
    rows = list(read_file(path, text_column="review", label_column="sentiment"))
    assert rows == [
        {"text": "good; really, good", "label": "fresh"},
        {"text": "bad, dull", "label": "rotten"},
    ]
    comma = tmp_path / "comma.csv"  # a comma in the header keeps the comma, semicolons inside fields or not
    comma.write_text("text,label\na; b,x\n", encoding="utf-8")
    assert list(read_file(comma, label_column="label")) == [{"text": "a; b", "label": "x"}]


def test_missing_column_lists_columns(tmp_path):
    for suffix in (".csv", ".tsv", ".parquet"):
        path = write(tmp_path / f"d{suffix}", ROWS)
        with pytest.raises(
            WarmstartError, match=r"no column 'sentence' \(columns: text, pair, label, other\)"
        ):
            read_file(path, text_column="sentence")
    path = write(tmp_path / "d.jsonl", ROWS)
    with pytest.raises(
        WarmstartError, match=r"line 1 .* no key 'sentence' \(keys: text, pair, label, other\)"
    ):
        list(read_file(path, text_column="sentence"))


def test_a_tsv_field_quoted_over_two_lines_is_said_as_such(tmp_path):
    # what csv.writer(delimiter="\t") writes for a text holding a newline; TSV is read the GLUE way
    path = tmp_path / "d.tsv"
    path.write_text('text\tlabel\none\tpos\n"two\nlines"\tneg\n')
    with pytest.raises(WarmstartError, match="line 3 .* 1 of 2 fields .* opens a quote: TSV is read without"):
        list(read_file(path, label_column="label"))


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_missing_column_names_the_flag_of_its_role(tmp_path, suffix):
    path = write(tmp_path / f"d{suffix}", ROWS)
    with pytest.raises(WarmstartError) as err:
        list(read_file(path, text_column="text", label_column="sentiment"))
    fix = "--label-column NAME (from Python: label_column=NAME), one of: text, pair, label, other"
    assert fix in err.value.fix
    with pytest.raises(WarmstartError) as err:
        list(read_file(path, text_column="review"))
    assert err.value.fix.startswith("pass --text-column NAME")


def test_missing_label_value_names_the_line(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"text": "a", "label": "x"}\n{"text": "b", "label": null}\n', encoding="utf-8")
    with pytest.raises(WarmstartError, match="line 2"):
        list(read_file(path, label_column="label"))


def test_bad_jsonl_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "a"}\n\n{"text": oops}\n', encoding="utf-8")
    with pytest.raises(WarmstartError, match=r"bad JSON on line 3 of .*bad\.jsonl"):
        list(read_file(path))
    path.write_text('["not", "an", "object"]\n', encoding="utf-8")
    with pytest.raises(WarmstartError, match="not a JSON object"):
        list(read_file(path))


def test_missing_file_and_unknown_extension(tmp_path):
    with pytest.raises(WarmstartError, match="no such file: .*nope.csv; check the path"):
        read_file(tmp_path / "nope.csv")
    path = tmp_path / "data.xlsx"
    path.write_bytes(b"x")
    with pytest.raises(WarmstartError, match=r"\.txt, \.jsonl, \.csv, \.tsv, \.parquet"):
        read_file(path)


def test_csv_multiline_field_and_row_line_numbers(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text('text,label\n"two\nlines",a\nshort\n', encoding="utf-8")
    reader = read_file(path, label_column="label")
    assert next(reader) == {"text": "two\nlines", "label": "a"}
    with pytest.raises(WarmstartError, match="line 4 of .*m.csv has no value for column 'label'"):
        next(reader)


def test_a_parquet_file_written_by_datasets_reads_its_class_names(tmp_path):
    """`Dataset.to_parquet` keeps ClassLabel names in the schema's metadata, as `datasets` reads them back:
    the label is the name ("rotten"), not the int; a sequence of ClassLabel gives a list of names."""
    datasets = pytest.importorskip("datasets")
    features = datasets.Features(
        {
            "text": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["fresh", "rotten"]),
            "tags": datasets.Sequence(datasets.ClassLabel(names=["a", "b", "c"])),
            "stars": datasets.Value("int64"),
        }
    )
    rows = {"text": ["good", "bad"], "label": [0, 1], "tags": [[0, 2], [1]], "stars": [5, 1]}
    path = tmp_path / "hf.parquet"
    datasets.Dataset.from_dict(rows, features=features).to_parquet(str(path))
    assert [r["label"] for r in read_file(path, label_column="label")] == ["fresh", "rotten"]
    tags = [r["label"].parts for r in read_file(path, label_column="tags")]
    assert tags == [("a", "c"), ("b",)]
    assert [r["label"] for r in read_file(path, label_column="stars")] == ["5", "1"]  # a plain int column

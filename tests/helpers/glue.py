"""GLUE in its two layouts, written by the tests from rotten-tomatoes snippets: glue_data/ as the original
TSVs (what download_glue_data.py writes) and the hub's copy (nyu-mll/glue: a parquet file per task and split
with the `datasets` features, class labels as indices, and the README's configs)."""

import csv

from warmstart.data.glue import TASKS

MNLI = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
        "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1"]  # fmt: skip
NLI = ("entailment", "neutral", "contradiction")


def _rows(task, i, text, pair, good):
    """One TSV row of ``task`` in its original column layout."""
    label = "1" if good else "0"
    return {
        "cola": ["gj04", label, "" if good else "*", text],
        "sst2": [text, label],
        "mrpc": [label, str(1000 + i), str(2000 + i), text, pair],
        "stsb": [str(i), "main-captions", "MSRvid", "2012test", str(i), "none", "none", text, pair,
                 f"{(4.2 if good else 0.8) + (i % 5) / 10:.3f}"],
        "qqp": [str(i), str(2 * i), str(2 * i + 1), text, pair, label],
        "mnli": [str(i), str(i), f"{i}e", "fiction", "( x )", "( y )", "(ROOT x)", "(ROOT y)", text, pair,
                 NLI[i % 3], NLI[i % 3]],
        "qnli": [str(i), text, pair, "entailment" if good else "not_entailment"],
        "rte": [str(i), text, pair, "entailment" if good else "not_entailment"],
        "wnli": [str(i), text, pair, label],
    }[task]  # fmt: skip


HEADERS = {
    "sst2": ["sentence", "label"],
    "mrpc": ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
    "stsb": ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
             "sentence2", "score"],
    "qqp": ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
    "mnli": MNLI + ["gold_label"],
    "qnli": ["index", "question", "sentence", "label"],
    "rte": ["index", "sentence1", "sentence2", "label"],
    "wnli": ["index", "sentence1", "sentence2", "label"],
}  # fmt: skip


def write_glue(root, snippets, train=40, dev=16):
    """glue_data/ with every task's train and dev TSVs (MNLI: dev_matched, dev_mismatched)."""
    for name, task in TASKS.items():
        folder = root / task.folder
        folder.mkdir(parents=True)
        for file, start, count in [("train", 0, train)] + [(d, train + k * dev, dev) for k, (d, _) in
                                                            enumerate(task.dev)]:  # fmt: skip
            lines = []
            if name in HEADERS:
                header = HEADERS[name]
                if name == "mnli" and file != "train":  # dev: five annotators' labels
                    header = MNLI + ["label2", "label3", "label4", "label5", "gold_label"]
                lines.append(header)
            for i in range(start, start + count):
                text, good = snippets[i]
                row = _rows(name, i, text, snippets[-1 - i][0], good)
                if name == "mnli" and file != "train":
                    row = row[:-1] + [row[-1]] * 4 + [row[-1]]
                lines.append(row)
            (folder / f"{file}.tsv").write_text("".join("\t".join(r) + "\n" for r in lines), encoding="utf-8")
    return root


def snippets(rt_small):
    with open(rt_small, encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [(" ".join(r["text"].replace('"', "'").split()), r["label"] == "fresh") for r in rows]


HUB_NAMES = {  # nyu-mll/glue's class names, by index
    "cola": ["unacceptable", "acceptable"],
    "sst2": ["negative", "positive"],
    "mrpc": ["not_equivalent", "equivalent"],
    "qqp": ["not_duplicate", "duplicate"],
    "mnli": list(NLI),
    "qnli": ["entailment", "not_entailment"],
    "rte": ["entailment", "not_entailment"],
    "wnli": ["not_entailment", "entailment"],
}


def _hub_label(name, i, good):
    if name == "stsb":
        return (4.2 if good else 0.8) + (i % 5) / 10
    if name == "mnli":
        return i % 3
    if name in ("qnli", "rte"):
        return 0 if good else 1
    return int(good)


def write_glue_hub(root, snippets, train=40, dev=16, test=4):
    """The hub's layout of the same rows as write_glue: NAME/SPLIT-00000-of-00001.parquet and README.md."""
    import datasets

    configs = []
    for name, task in TASKS.items():
        text, pair = task.hub
        label = datasets.Value("float32") if name == "stsb" else datasets.ClassLabel(names=HUB_NAMES[name])
        columns = {text: datasets.Value("string"), **({pair: datasets.Value("string")} if pair else {})}
        features = datasets.Features({**columns, "label": label, "idx": datasets.Value("int32")})
        tests = ["test"] if len(task.dev) == 1 else ["test_matched", "test_mismatched"]
        splits = [("train", 0, train)] + [(hub, train + k * dev, dev) for k, (_, hub) in enumerate(task.dev)]
        splits += [(split, 0, test) for split in tests]
        configs.append(f"- config_name: {name}\n  data_files:\n")
        for split, start, count in splits:
            rows = {key: [] for key in features}
            for i in range(start, start + count):
                sentence, good = snippets[i]
                rows[text].append(sentence)
                if pair:
                    rows[pair].append(snippets[-1 - i][0])
                rows["label"].append(-1 if split.startswith("test") else _hub_label(name, i, good))
                rows["idx"].append(i - start)
            path = root / name / f"{split}-00000-of-00001.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            datasets.Dataset.from_dict(rows, features=features).to_parquet(str(path))
            configs.append(f"  - split: {split}\n    path: {name}/{split}-*\n")
    (root / "README.md").write_text("---\nconfigs:\n" + "".join(configs) + "---\n", encoding="utf-8")
    return root

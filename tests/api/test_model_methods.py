"""``warmstart.load(path, device, dtype)`` and its methods with Hugging Face's argument names (issue 37):
``predict(top_k=None)`` equal to transformers' text-classification pipeline on the exported model,
``encode``/``similarity`` equal to sentence-transformers on all-MiniLM-L6-v2, ``generate`` with do_sample,
num_return_sequences, repetition_penalty, num_beams and stop strings (the command gives the same text),
a dtype, ``predict``'s batches by length in tokens (not characters: 30% more padding on rotten-tomatoes'
snippets, measured with benchmarks/inference.py's 2,048), and, where CUDA is, every method on the GPU."""

import json

import numpy as np
import pytest
import torch

import warmstart
from tests.helpers.cli import run
from tests.helpers.models import minilm_dir
from warmstart.errors import WarmstartError

pytestmark = pytest.mark.integration

REVIEWS = ["A warm, funny and moving film.", "Dull and far too long.", "fine"]
# predict batches: short in characters but many word pieces, long in characters but few
UNEVEN = ["qzxv jkwq pfzt xqvk", "ok " * 12, "zzqj vvkx", "the film " * 5, "wqzk", "a a a a a a a a a a"]
SENTENCES = ["A man is eating food.", "A man eats a meal.", "The new movie is awesome.", "short"]
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(scope="module")
def classifier(tiny_pretrained, rt_small, tmp_path_factory):
    out = tmp_path_factory.mktemp("typed") / "clf"
    warmstart.finetune("train.progress=false", init=tiny_pretrained, data=rt_small, out=out, steps=6,
                       batch_size=16, max_length=32, lr=1e-3)  # fmt: skip
    return out


@pytest.fixture(scope="module")
def generator(wiki_extracts, tmp_path_factory):
    root = tmp_path_factory.mktemp("typed-gen")
    warmstart.train_tokenizer(texts=wiki_extracts[:300], out=root / "tok", kind="bpe", vocab_size=800)
    warmstart.pretrain(
        "train.progress=false", "data.seq_len=64", "model.n_positions=64", "train.eval_batches=1",
        preset="gpt2-tiny", texts=wiki_extracts[300:360], tokenizer=root / "tok", steps=4, batch_size=4,
        out=root / "gpt2",
    )  # fmt: skip
    return root / "gpt2"


def test_predict_top_k_ranks_labels_as_the_transformers_pipeline(classifier, tmp_path):
    from transformers import pipeline

    model = warmstart.load(classifier, device="cpu")
    plain = model.predict(REVIEWS)
    assert [set(p) for p in plain] == [{"text", "label", "probabilities"}] * 3  # top_k=1: as before
    ranked = model.predict(REVIEWS, top_k=None)
    one = model.predict(REVIEWS[0], top_k=None)
    assert [x["label"] for x in one] == [x["label"] for x in ranked[0]]  # alone or in a batch: the same
    assert np.allclose([x["score"] for x in one], [x["score"] for x in ranked[0]], atol=1e-5)
    assert [r[0]["label"] for r in ranked] == [p["label"] for p in plain]
    for r in ranked:
        scores = [x["score"] for x in r]
        assert scores == sorted(scores, reverse=True) and abs(sum(scores) - 1) < 1e-5 and len(r) == 2
    assert model.predict(REVIEWS, top_k=1) == plain and model.predict(REVIEWS, top_k=2) == ranked
    theirs = pipeline("text-classification", model=str(model.export_hf(tmp_path / "hf")), top_k=None)
    for mine, reference in zip(ranked, theirs(REVIEWS)):
        assert [x["label"] for x in mine] == [x["label"] for x in reference]
        assert np.allclose([x["score"] for x in mine], [x["score"] for x in reference], atol=1e-5)
    with pytest.raises(WarmstartError, match="top_k must be a positive whole number"):
        model.predict(REVIEWS, top_k=0)


def test_a_model_called_answers_as_the_transformers_pipeline(classifier, generator, tmp_path):
    """``model(inputs)`` in the pipeline's layout: each call form of text-classification (one text, a list,
    top_k None / 1 / 2, which nest differently) and of text-generation, against the pipeline on the export."""
    from transformers import pipeline

    model = warmstart.load(classifier, device="cpu")
    theirs = pipeline("text-classification", model=str(model.export_hf(tmp_path / "hf")))
    for inputs in (REVIEWS[0], REVIEWS):
        for kw in ({}, {"top_k": None}, {"top_k": 1}, {"top_k": 2}):
            mine, reference = model(inputs, **kw), theirs(inputs, **kw)
            assert _layout(mine) == _layout(reference), (inputs, kw)
            assert np.allclose(_scores(mine), _scores(reference), atol=1e-5)
    gen = warmstart.load(generator, device="cpu")
    written = pipeline("text-generation", model=str(gen.export_hf(tmp_path / "gen")))
    for prompt in ("The city of", ["The city of", "In 1990"]):
        assert gen(prompt, max_new_tokens=6) == written(prompt, max_new_tokens=6, do_sample=False)
    two = gen("The city of", max_new_tokens=4, num_return_sequences=2, do_sample=True, seed=1)
    assert [set(x) for x in two] == [{"generated_text"}] * 2
    with pytest.raises(WarmstartError, match="no max_new_tokens when called"):
        model(REVIEWS, max_new_tokens=3)
    with pytest.raises(WarmstartError, match=r"model.encode\(texts\)"):
        warmstart.load(minilm_dir(), device="cpu")("a text")


def _layout(answer):
    """The nesting and labels of a pipeline answer, its scores left out."""
    if isinstance(answer, list):
        return [_layout(x) for x in answer]
    return answer["label"]


def _scores(answer) -> list[float]:
    return [x["score"] for x in answer] if isinstance(answer[0], dict) else sum(map(_scores, answer), [])


def test_evaluate_scores_data_in_memory_as_the_command_scores_a_file(classifier, rt_small, tmp_path, capsys):
    """``model.evaluate(df)`` (Trainer.evaluate's habit): every row scored, the metrics and per-class
    breakdown `warmstart evaluate --test-file` gives for the same rows; other column names by keyword."""
    import pandas as pd

    model = warmstart.load(classifier, device="cpu")
    frame = pd.read_csv(rt_small)
    mine = model.evaluate(frame)
    code, _, err = run(capsys, "evaluate", classifier, "--test-file", rt_small, "--out", tmp_path / "m.json")
    assert code == 0, err
    theirs = json.loads((tmp_path / "m.json").read_text())
    assert mine["examples"] == len(frame) == theirs["examples"]
    assert mine["metrics"] == pytest.approx(theirs["metrics"]) and mine["breakdown"] == theirs["breakdown"]
    renamed = model.evaluate(frame.rename(columns={"text": "review", "label": "stars"}), text_column="review",
                             label_column="stars")  # fmt: skip
    assert renamed["metrics"] == pytest.approx(mine["metrics"])
    assert model.evaluate(rt_small, split="dev")["examples"] == len(frame)  # a file: whole, any split
    with pytest.raises(WarmstartError, match="has no key 'text' .*pass text_column=NAME"):
        model.evaluate(frame.rename(columns={"text": "review"}))
    with pytest.raises(WarmstartError, match="cannot evaluate"):
        warmstart.load(minilm_dir(), device="cpu").evaluate(frame)


@pytest.fixture(scope="module")
def sentence_transformer():
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(minilm_dir()), device="cpu")


def test_encode_and_similarity_take_sentence_transformers_arguments(sentence_transformer):
    model = warmstart.load(minilm_dir(), device="cpu")
    for kwargs in (dict(batch_size=2), dict(batch_size=3, normalize_embeddings=True, convert_to_tensor=True)):
        ours, theirs = model.encode(SENTENCES, **kwargs), sentence_transformer.encode(SENTENCES, **kwargs)
        assert type(ours) is type(theirs) and tuple(ours.shape) == (4, 384)
        assert np.abs(np.asarray(ours) - np.asarray(theirs)).max() < 1e-5
    listed = model.encode(SENTENCES, convert_to_numpy=False)
    assert isinstance(listed, list) and len(listed) == 4 and torch.is_tensor(listed[0])
    one = model.encode(SENTENCES[0])
    assert one.shape == (384,) and np.allclose(one, model.encode(SENTENCES)[0], atol=1e-6)
    raw = model.encode(SENTENCES, normalize=False)  # the old keyword still turns the declared norm off
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1, atol=1e-3)
    vectors = model.encode(SENTENCES)
    ours = model.similarity(vectors, vectors[:2])
    theirs = sentence_transformer.similarity(vectors, vectors[:2])
    assert ours.shape == (4, 2) and torch.allclose(ours, theirs, atol=1e-5)
    assert torch.allclose(model.similarity(SENTENCES, SENTENCES[:2]), theirs, atol=1e-5)  # texts: encoded
    assert ours[1, 0] > ours[2, 0]  # eating food is closer to eating a meal than to a movie


def test_generate_takes_transformers_arguments(generator, capsys):
    model = warmstart.load(generator, device="cpu")
    greedy = model.generate("The city of", max_new_tokens=12)
    drawn = model.generate("The city of", max_new_tokens=8, do_sample=True, num_return_sequences=3, top_p=0.9)
    assert isinstance(drawn, list) and len(drawn) == 3 and all(t.startswith("The city of") for t in drawn)
    assert len(set(drawn)) > 1 and drawn == model.generate("The city of", max_new_tokens=8, do_sample=True,
                                                           num_return_sequences=3, top_p=0.9)  # fmt: skip
    several = model.generate(
        ["The city of", "A river"], max_new_tokens=6, num_beams=3, num_return_sequences=2
    )
    assert [len(x) for x in several] == [2, 2] and several[1][0].startswith("A river")
    assert several[0][0] == model.generate("The city of", max_new_tokens=6, num_beams=3)
    penalised = model.generate("The city of", max_new_tokens=12, repetition_penalty=5.0)
    assert penalised != greedy
    capsys.readouterr()
    argv = ["generate", generator, "--prompt", "The city of", "max_new_tokens=12", "repetition_penalty=5.0"]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and out.strip() == penalised  # the command gives the same text
    new = greedy[len("The city of") :]
    word = new.split()[1] if len(new.split()) > 1 else new.strip()
    stopped = model.generate("The city of", max_new_tokens=12, stop=word)
    assert stopped == "The city of" + new[: new.index(word)]  # cut before the stop string
    with pytest.raises(WarmstartError, match="do_sample=True with num_beams above 1"):
        model.generate("The city of", do_sample=True, num_beams=2)
    with pytest.raises(WarmstartError, match="greedy decoding would give 2 copies") as caught:
        model.generate("The city of", num_return_sequences=2)
    assert "--" not in str(caught.value)


def test_load_in_a_dtype(classifier, generator):
    full = warmstart.load(classifier, device="cpu")
    half = warmstart.load(classifier, device="cpu", dtype="bf16")
    assert half.dtype is torch.bfloat16 and next(half.model.parameters()).dtype is torch.bfloat16
    a, b = full.predict(REVIEWS), half.predict(REVIEWS)
    for x, y in zip(a, b):
        assert np.allclose(list(x["probabilities"].values()), list(y["probabilities"].values()), atol=0.05)
    gen = warmstart.load(generator, device=torch.device("cpu"), dtype=torch.bfloat16)
    assert next(gen.model.parameters()).dtype is torch.bfloat16 and gen.generate("A", max_new_tokens=3)
    assert (
        full.to(dtype="float16").dtype is torch.float16
        and next(full.model.parameters()).dtype is torch.float16
    )


@pytest.mark.gpu
@cuda
def test_every_method_runs_on_the_gpu(classifier, generator):
    cpu, gpu = warmstart.load(classifier, device="cpu"), warmstart.load(classifier, device="cuda")
    assert next(gpu.model.parameters()).is_cuda
    for x, y in zip(cpu.predict(REVIEWS), gpu.predict(REVIEWS, top_k=None)):
        assert x["label"] == y[0]["label"] and abs(x["probabilities"][x["label"]] - y[0]["score"]) < 1e-4
    encoder = warmstart.load(minilm_dir(), device="cuda", dtype=torch.float16)
    vectors = encoder.encode(SENTENCES, convert_to_tensor=True)
    assert vectors.is_cuda and next(encoder.model.parameters()).dtype is torch.float16
    reference = warmstart.load(minilm_dir(), device="cpu").encode(SENTENCES)
    assert np.abs(vectors.float().cpu().numpy() - reference).max() < 1e-2
    on_gpu = warmstart.load(generator, device="cuda")
    assert next(on_gpu.model.parameters()).is_cuda
    assert on_gpu.generate("The city of", max_new_tokens=8) == warmstart.load(
        generator, device="cpu"
    ).generate("The city of", max_new_tokens=8)


def test_predict_groups_rows_by_tokens_and_keeps_the_order(classifier, monkeypatch):
    model = warmstart.load(classifier)
    alone = [model.predict([t])[0] for t in UNEVEN]
    unit = model._predictor.unit
    batches = []
    real = unit.predict

    def spy(batch):
        batches.append(batch["attention_mask"].sum(1).tolist())
        return real(batch)

    monkeypatch.setattr(unit, "predict", spy)
    tokens = {t: len(model._predictor.tokenizer.encode_pairs([t])[0][0]) for t in UNEVEN}
    by_chars = [tokens[t] for t in sorted(UNEVEN, key=len)]
    assert by_chars != sorted(by_chars)  # the texts do tell the two orders apart
    got = model.predict(UNEVEN, batch_size=2)
    assert [n for b in batches for n in b] == sorted(tokens.values())  # each batch its nearest lengths
    for g, a in zip(got, alone, strict=True):
        assert g["text"] == a["text"] and g["label"] == a["label"]
        assert g["probabilities"] == pytest.approx(a["probabilities"], abs=1e-5)

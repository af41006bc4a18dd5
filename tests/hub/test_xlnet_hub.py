"""XLNet through `warmstart import` / `warmstart export` (issue 25): XLNetLMHeadModel, XLNetModel and the
task classes (XLNetForSequenceClassification, ...ForTokenClassification, ...ForQuestionAnsweringSimple,
...ForMultipleChoice) both ways with equal outputs; transformers' heads read the last token, so the
exported tokenizer pads on the left while warmstart pads on the right and reads the last real token."""

import json

import pytest
import torch

from tests.helpers.cli import run
from tests.helpers.hub import hf_dir
from tests.helpers.runs import pretrain_family
from warmstart.checkpoints.load import load_encoder, load_finetuned
from warmstart.hub.convert import export_hf, import_hf
from warmstart.objectives.plm import PLMCollator, PLMConfig
from warmstart.tokenization.tokenizer import Tokenizer

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.parity
TOL = 1e-4
TEXTS = ["a gorgeous , witty , seductive movie .", "the film is strictly routine .", "not bad at all"]
TINY = dict(d_model=32, n_layer=2, n_head=4, d_inner=64)


@pytest.fixture(scope="module")
def xlnet_pretrained(unigram_shards, tmp_path_factory):
    out = tmp_path_factory.mktemp("xlnet_hub") / "run"
    pretrain_family("xlnet", unigram_shards, out, steps=6, extra=["data.tokenizer_kind=unigram"])
    return out


def padded(tok, texts, left=False):
    ids = [tok.encode_pairs([t], None, 64)[0][0] for t in texts]
    n = max(map(len, ids))
    pad = [[tok.pad_id] * (n - len(i)) for i in ids]
    rows = [p + i if left else i + p for i, p in zip(ids, pad)]
    x = torch.tensor(rows)
    return x, (x != tok.pad_id).long()


def test_a_pretrained_run_exports_as_xlnet_lm_head_model_and_imports_back(xlnet_pretrained, tmp_path):
    out = export_hf(xlnet_pretrained, tmp_path / "hf")
    hf = transformers.AutoModel.from_pretrained(out).eval()
    lm = transformers.XLNetLMHeadModel.from_pretrained(out).eval()
    assert json.loads((out / "config.json").read_text())["architectures"] == ["XLNetLMHeadModel"]
    model, tok, _ = load_encoder(xlnet_pretrained)
    tok = Tokenizer.load(xlnet_pretrained / "final")
    ids, mask = padded(tok, TEXTS)
    batch = PLMCollator(PLMConfig(plm_probability=0.3), tok.special_ids)(
        ids, torch.Generator().manual_seed(0)
    )
    model.eval()
    with torch.no_grad():
        mine = model.streams(ids, mask, perm_mask=batch["perm_mask"], target_mapping=batch["target_mapping"])
        theirs = lm(input_ids=ids, attention_mask=mask, perm_mask=batch["perm_mask"],
                    target_mapping=batch["target_mapping"]).logits  # fmt: skip
        assert (model.lm_logits(mine.query) - theirs).abs().max() < TOL
        base = hf(input_ids=ids, attention_mask=mask).last_hidden_state
        assert (model(ids, mask) - base)[mask.bool()].abs().max() < TOL
    back = import_hf(out, tmp_path / "ws")
    again, _, _ = load_encoder(back)
    with torch.no_grad():
        assert (again.eval()(ids, mask) - base)[mask.bool()].abs().max() < TOL
    assert again.config == model.config


def test_a_finetuned_classifier_exports_with_left_padding_and_imports_back(
    xlnet_pretrained, rt_small, tmp_path, capsys
):
    ft = tmp_path / "ft"
    code, _, err = run(capsys, "finetune", "--init", xlnet_pretrained, "--dataset", rt_small, "--out", ft,
                       "--epochs", "1", "task.max_length=48", "train.progress=false", "train.batch_size=16",
                       "--lr", "1e-3")  # fmt: skip
    assert code == 0, err
    out = export_hf(ft, tmp_path / "hf")
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(out).eval()
    assert type(hf).__name__ == "XLNetForSequenceClassification"
    hf_tok = transformers.AutoTokenizer.from_pretrained(out)
    assert hf_tok.padding_side == "left"
    enc = hf_tok(TEXTS, padding=True, return_tensors="pt")
    unit, _, _, labels = load_finetuned(ft / "best")
    tok = Tokenizer.load(ft / "best")
    ids, mask = padded(tok, TEXTS)
    left_ids, _ = padded(tok, TEXTS, left=True)
    assert torch.equal(enc["input_ids"], left_ids)
    with torch.no_grad():
        mine = unit.eval().logits({"input_ids": ids, "attention_mask": mask}).softmax(-1)
        theirs = hf(**enc).logits.softmax(-1)
    assert (mine - theirs).abs().max() < 1e-5
    assert [hf.config.id2label[i] for i in range(len(labels))] == labels
    back = import_hf(hf_dir(tmp_path / "hf2", hf, out), tmp_path / "ws")
    unit2 = load_finetuned(back)[0]
    assert unit2.encoder.config.pooler  # transformers' summary, imported as XLNet's pooler
    with torch.no_grad():
        again = unit2.eval().logits({"input_ids": ids, "attention_mask": mask}).softmax(-1)
    assert (again - theirs).abs().max() < 1e-5


@pytest.mark.parametrize("task", ["tagging", "extractive_qa", "multiple_choice"])
def test_every_task_head_imports_and_exports_as_its_xlnet_class(task, unigram_shards, tmp_path):
    name = {"tagging": "XLNetForTokenClassification", "extractive_qa": "XLNetForQuestionAnsweringSimple",
            "multiple_choice": "XLNetForMultipleChoice"}[task]  # fmt: skip
    tok_dir = unigram_shards / "tokenizer"
    tok = Tokenizer.load(tok_dir)
    torch.manual_seed(0)
    labels = {"num_labels": 3} if task == "tagging" else {}
    config = transformers.XLNetConfig(vocab_size=tok.vocab_size, **TINY, **labels)
    hf = getattr(transformers, name)(config).eval()
    ws = import_hf(hf_dir(tmp_path / "hf", hf, tok_dir), tmp_path / "ws")
    assert json.loads((ws / "config.json").read_text())["warmstart"]["task"]["name"] == task
    out = export_hf(ws, tmp_path / "out")
    back = getattr(transformers, name).from_pretrained(out).eval()
    ids, mask = padded(tok, TEXTS, left=True)
    if task == "multiple_choice":
        ids, mask = ids[None], mask[None]
    with torch.no_grad():
        a, b = hf(input_ids=ids, attention_mask=mask), back(input_ids=ids, attention_mask=mask)
    for key in ("logits", "start_logits", "end_logits"):
        if key in a:
            assert (a[key] - b[key]).abs().max() < TOL, key


def write_spiece(path, words):
    """A SentencePiece unigram model file written by the test in the protobuf layout of spiece.model: XLNet's
    special pieces, then ``words`` (scores falling), then single letters."""
    from transformers.convert_slow_tokenizer import import_protobuf

    proto = import_protobuf().ModelProto()
    proto.trainer_spec.model_type, proto.trainer_spec.unk_id = 1, 0
    proto.normalizer_spec.add_dummy_prefix = True
    pieces = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3), ("<cls>", 0.0, 4), ("<sep>", 0.0, 4),
              ("<pad>", 0.0, 4), ("<mask>", 0.0, 4)]  # fmt: skip
    pieces += [("\u2581" + w, -1.0 - i, 1) for i, w in enumerate(words)]
    pieces += [(c, -50.0, 1) for c in "\u2581abcdefghijklmnopqrstuvwxyz.,"]
    for text, score, kind in pieces:
        piece = proto.pieces.add()
        piece.piece, piece.score, piece.type = text, score, kind
    path.write_bytes(proto.SerializeToString())
    return [p[0] for p in pieces]


def test_an_xlnet_with_only_spiece_model_imports(tmp_path):
    words = "the film was not dull cafe a good".split()
    hf_path = tmp_path / "hf"
    hf_path.mkdir()
    pieces = write_spiece(hf_path / "spiece.model", words)
    (hf_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "XLNetTokenizer"}))
    torch.manual_seed(0)
    hf = transformers.XLNetLMHeadModel(transformers.XLNetConfig(vocab_size=len(pieces), **TINY)).eval()
    hf.save_pretrained(hf_path)
    ws = import_hf(hf_path, tmp_path / "ws")
    tok = Tokenizer.load(ws)
    ids, types = tok.encode_pairs(["the film was not dull"], ["a café"], 64)
    expected = ["\u2581the", "\u2581film", "\u2581was", "\u2581not", "\u2581dull", "<sep>", "\u2581a",
                "\u2581cafe", "<sep>", "<cls>"]  # fmt: skip
    assert ids[0] == [pieces.index(p) for p in expected]  # accents stripped, XLNet's template
    assert types[0] == [0] * 6 + [1] * 3 + [2]
    assert tok.pad_id == pieces.index("<pad>") and tok.mask_id == pieces.index("<mask>")
    model, _, _ = load_encoder(ws)
    x = torch.tensor(ids)
    with torch.no_grad():
        theirs = hf.transformer(input_ids=x, token_type_ids=torch.tensor(types)).last_hidden_state
        assert (model.eval()(x, None, torch.tensor(types)) - theirs).abs().max() < TOL


def test_fill_mask_reads_the_query_stream_as_transformers_does(xlnet_pretrained, tmp_path, capsys):
    """`fill-mask` on a permutation-LM run: each mask predicted through its query stream with every mask
    hidden from every position; equal to XLNetLMHeadModel given the same perm_mask and target_mapping."""
    from warmstart.inference.fill_mask import FillMask

    tok = Tokenizer.load(xlnet_pretrained / "final")
    mask = tok.roles["mask_token"]
    text = f"the film is {mask} and the plot is {mask} ."
    result = FillMask(str(xlnet_pretrained)).fill(text, top_k=4)
    lm = transformers.XLNetLMHeadModel.from_pretrained(export_hf(xlnet_pretrained, tmp_path / "hf")).eval()
    (ids,), _ = tok.encode_pairs([text], None, 64)
    where = [i for i, t in enumerate(ids) if t == tok.mask_id]
    perm_mask = torch.zeros(1, len(ids), len(ids))
    perm_mask[0, :, where] = 1
    target_mapping = torch.zeros(1, 2, len(ids))
    target_mapping[0, [0, 1], where] = 1
    with torch.no_grad():
        logits = lm(torch.tensor([ids]), perm_mask=perm_mask, target_mapping=target_mapping).logits[0]
    for row, masked in zip(logits.softmax(-1), result["masks"]):
        scores, best = row.topk(4)
        assert [m["token"] for m in masked] == [tok.id_to_token(int(i)) for i in best]
        assert [m["score"] for m in masked] == pytest.approx(scores.tolist(), abs=2e-5)
    code, out, err = run(capsys, "fill-mask", xlnet_pretrained, text, "--json", "--top-k", "2")
    assert code == 0, err
    assert json.loads(out)["masks"] == [m[:2] for m in result["masks"]]

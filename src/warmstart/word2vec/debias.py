"""Hard debiasing of word vectors (Bolukbasi, Chang, Zou, Saligrama and Kalai 2016, "Man is to Computer
Programmer as Woman is to Homemaker? Debiasing Word Embeddings", NeurIPS), with WEAT and DirectBias before
and after.

On unit vectors, as the paper and its code (github.com/tolga-b/debiaswe, debias.py):

1. the gender direction g is the first principal component of the pairs' centred vectors (each definitional
   pair a, b gives a - mu and b - mu, mu their mean), oriented so that she - he points along +g;
2. neutralise: every word not in the gender-specific list (case-insensitive) loses its component along g
   and is renormalised;
3. equalise: each equality pair (lowercase, Title and UPPER forms) becomes y +- z g, with y the pair's mean
   without its g part and z = sqrt(1 - |y|^2): both words equally far from every neutral word, differing
   along g only.

Each changed row is then scaled back to its input length (cosines, WEAT and analogies read directions; a
warm start keeps the lengths it had), so every other row (the gender-specific words) is the input's, byte
for byte. DirectBias_1 is the mean |cos(w, g)| over the neutral occupations found, with the g of step 1 both
before and after.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from warmstart.atomic import check_writable, write_atomic
from warmstart.errors import WarmstartError
from warmstart.paths import refuse_same_file
from warmstart.word2vec import gender_words as G
from warmstart.word2vec import io
from warmstart.word2vec.vectors import WordVectors
from warmstart.word2vec.weat import GENDER_TESTS, weat


@dataclass
class Debiased:
    vectors: WordVectors  # the debiased vectors (same words, order and counts)
    direction: np.ndarray  # the gender direction g (unit length)
    explained: float  # share of the pairs' variance along g
    pairs: list[tuple[str, str]]  # the definitional pairs found
    neutralised: int  # rows neutralised
    equalised: list[tuple[str, str]]  # the equality pairs found


def _form(wv: WordVectors, word: str) -> str | None:
    """``word`` as written, Title-cased or UPPER, whichever the vocabulary has first."""
    return next((f for f in (word, word.title(), word.upper()) if f in wv), None)


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-12 else v


def gender_direction(wv: WordVectors, pairs=G.DEFINITIONAL) -> tuple[np.ndarray, float, list]:
    """(g, share of variance along g, the pairs found): the first principal component of the definitional
    pairs' centred unit vectors, oriented so that the first word of each pair (she) lies along +g."""
    unit = wv.unit().astype(np.float64)
    found = [(a, b) for a, b in ((_form(wv, x), _form(wv, y)) for x, y in pairs) if a and b]
    if not found:
        shown = ", ".join(f"{a}/{b}" for a, b in pairs[:4])
        raise WarmstartError(
            f"none of the definitional pairs ({shown}, ...) is in the vocabulary ({len(wv):,} words)",
            "use vectors trained on more text, or a lower min_count",
        )
    rows = []
    for a, b in found:
        mu = (unit[wv.index[a]] + unit[wv.index[b]]) / 2
        rows += [unit[wv.index[a]] - mu, unit[wv.index[b]] - mu]
    matrix = np.array(rows)
    matrix -= matrix.mean(0)  # zero already (the pairs are centred); as PCA does
    _, s, vt = np.linalg.svd(matrix, full_matrices=False)
    g = vt[0]
    if sum(float((unit[wv.index[a]] - unit[wv.index[b]]) @ g) for a, b in found) < 0:
        g = -g
    explained = float(s[0] ** 2 / (s**2).sum()) if (s**2).sum() > 0 else math.nan
    return g, explained, found


def hard_debias(
    wv: WordVectors,
    definitional=G.DEFINITIONAL,
    equality=G.EQUALITY,
    specific=G.GENDER_SPECIFIC,
) -> Debiased:
    """``wv`` hard-debiased (see the module docstring); ``wv`` itself is not changed."""
    g, explained, pairs = gender_direction(wv, definitional)
    unit = wv.unit().astype(np.float64)
    new = unit.copy()
    keep = {w.lower() for w in specific}
    changed = np.array([w.lower() not in keep for w in wv.words], dtype=bool)
    new[changed] -= np.outer(new[changed] @ g, g)
    norms = np.linalg.norm(new[changed], axis=1, keepdims=True)
    new[changed] /= np.where(norms > 1e-12, norms, 1.0)
    neutralised = int(changed.sum())
    equalised = []
    for x, y in dict.fromkeys((f(a), f(b)) for a, b in equality for f in (str.lower, str.title, str.upper)):
        if x not in wv or y not in wv or x == y:
            continue
        ia, ib = wv.index[x], wv.index[y]
        mu = (new[ia] + new[ib]) / 2
        rest = mu - (mu @ g) * g
        z = math.sqrt(max(0.0, 1.0 - float(rest @ rest)))
        if float((new[ia] - new[ib]) @ g) < 0:
            z = -z
        new[ia], new[ib] = rest + z * g, rest - z * g
        changed[[ia, ib]] = True
        equalised.append((x, y))
    out = wv.vectors.copy()
    lengths = np.linalg.norm(wv.vectors.astype(np.float64), axis=1, keepdims=True)
    out[changed] = (new[changed] * lengths[changed]).astype(np.float32)
    return Debiased(
        WordVectors(list(wv.words), out, None if wv.counts is None else wv.counts.copy()),
        g,
        explained,
        pairs,
        neutralised,
        equalised,
    )


def direct_bias(wv: WordVectors, g: np.ndarray, words=G.OCCUPATIONS) -> tuple[float | None, list[str]]:
    """(DirectBias_1, the words it averages): mean |cos(w, g)| over ``words`` found (None: none found)."""
    found = [f for f in (_form(wv, w) for w in words) if f]
    if not found:
        return None, []
    unit = wv.unit().astype(np.float64)
    return float(np.abs(unit[[wv.index[w] for w in found]] @ _unit(g)).mean()), found


def _weats(wv: WordVectors, permutations: int, seed: int) -> dict[str, dict]:
    results = {}
    for key, test in GENDER_TESTS.items():
        try:
            r = weat(wv, test, permutations, seed)
        except WarmstartError as exc:  # a small vocabulary may lack a whole set: said, not fatal
            results[key] = {"test": test.name, "skipped": exc.problem}
            continue
        d = None if math.isnan(r.effect_size) else r.effect_size  # JSON has no NaN
        results[key] = {"test": test.name, "d": d, "p": r.p_value, "s": r.statistic, "missing": r.missing}
    return results


def debias_report(wv: WordVectors, permutations: int = 100_000, seed: int = 0) -> tuple[Debiased, dict]:
    """(the debiased vectors, a JSON-able report): WEATs 6-8 and DirectBias before and after."""
    result = hard_debias(wv)
    bias_before, words = direct_bias(wv, result.direction)
    bias_after, _ = direct_bias(result.vectors, result.direction)
    before, after = _weats(wv, permutations, seed), _weats(result.vectors, permutations, seed)
    weats = []
    for key, b in before.items():
        a = after[key]
        row = {"test": b["test"]}
        if "skipped" in b:
            row["skipped"] = b["skipped"]
        else:
            row |= {"d_before": b["d"], "d_after": a["d"], "p_before": b["p"], "p_after": a["p"]}
            row |= {"statistic_before": b["s"], "statistic_after": a["s"]}
            row["missing"] = b["missing"]
        weats.append(row)
    report = {
        "direction": {"pairs": [list(p) for p in result.pairs], "explained_variance": result.explained},
        "neutralised": result.neutralised,
        "equalised": [list(p) for p in result.equalised],
        "direct_bias": {"before": bias_before, "after": bias_after, "words": words},
        "weat": weats,
    }
    report["markdown"] = markdown(report)
    return result, report


STATISTIC_NOTE = (
    "d is scale-free: divided by the spread of the associations s(w, A, B), it can stay large, or flip, when "
    "debiasing shrinks them all; the statistic (sum over X of s minus sum over Y) shows their size. "
    "Removing the component along g does not remove the bias from the neighbourhoods either (Gonen and "
    "Goldberg 2019, 'Lipstick on a pig')."
)


def _number(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def markdown(report: dict) -> str:
    d = report["direction"]
    lines = [
        f"gender direction: first principal component of {len(d['pairs'])} definitional pairs "
        f"({d['explained_variance']:.0%} of their variance); {report['neutralised']:,} words neutralised, "
        f"{len(report['equalised'])} equality pairs equalised",
        "",
        "| measure | before | after |",
        "|---|---:|---:|",
    ]
    db = report["direct_bias"]
    shown = f"{_number(db['before'])} | {_number(db['after'])}"
    lines.append(f"| DirectBias_1 ({len(db['words'])} occupations) | {shown} |")
    for r in report["weat"]:
        if "skipped" in r:
            lines.append(f"| {r['test']} d | skipped: {r['skipped']} | |")
        else:
            lines.append(
                f"| {r['test']} d (p; statistic) | {_number(r['d_before'])} ({r['p_before']:.2g}; "
                f"{_number(r['statistic_before'])}) | {_number(r['d_after'])} ({r['p_after']:.2g}; "
                f"{_number(r['statistic_after'])}) |"
            )
    lines += ["", STATISTIC_NOTE]
    return "\n".join(lines)


def _files(spec: str | Path, fmt: str) -> list[Path]:
    """The files a vectors spec (run directory or file) or output of format ``fmt`` is made of."""
    path = Path(spec)
    if path.is_dir():
        path = path / io.RUN_VECTORS
    return list(io._npy_paths(path)) if fmt == "npy" else [path]


def write_debiased(vectors: str | Path, out: str | Path, permutations: int = 100_000, seed: int = 0) -> dict:
    """`warmstart word2vec debias`: the vectors of ``vectors`` (a run directory, a file or ``glove``)
    hard-debiased into ``out`` (format from its suffix) and the report into OUT.debias.json, both written
    atomically; an output that is one of the input's files is refused before anything is read."""
    fmt = io.detect(out)
    report_path = Path(out).with_suffix(".debias.json")
    given = Path(vectors)
    inputs = {}
    if given.exists():
        in_fmt = "npy" if given.is_dir() else io.detect(given)
        inputs = {f"vectors file {p}": p for p in _files(given, in_fmt)}
    for path in [*_files(out, fmt), report_path]:
        refuse_same_file(path, inputs)
        check_writable(path)
    wv = io.load_vectors(vectors)
    result, report = debias_report(wv, permutations, seed)
    written = io.save(result.vectors, out, fmt)
    report = {"input": str(vectors), "output": str(written), **report}
    data = {k: v for k, v in report.items() if k != "markdown"}
    write_atomic(report_path, lambda fh: fh.write(json.dumps(data, indent=1).encode()))
    return {**report, "report": str(report_path)}

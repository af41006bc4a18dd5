"""Beam search over a decoding state: ``state.logits(new_tokens)`` gives the
next-token logits of every row, ``state.reorder(idx)`` reorders its rows (the KV cache included).

A hypothesis scores ``sum of log-probs / length ** length_penalty`` (as Hugging Face ``transformers``); its
length counts the new tokens, the end-of-sequence token included. Each prompt keeps its ``num_beams`` best
finished hypotheses and stops once no running beam can beat the worst of them: log-probs are never
positive, so a running sum only falls, and the best score it can still reach is bounded exactly.
"""

from __future__ import annotations

import torch


def _bound(best_sum: float, length: int, limit: int, penalty: float) -> float:
    """The highest normalised score a running beam with log-prob sum ``best_sum`` can still reach."""
    if penalty > 0:  # dividing a negative sum by a longer length raises it: the longest length is best
        return best_sum / limit**penalty
    return best_sum / length**penalty  # no or a negative penalty: longer only lowers the score


def _add(finished: list, tokens: list[int], score: float, length: int, keep: int, penalty: float) -> None:
    finished.append((score / length**penalty, tokens))
    finished.sort(key=lambda h: -h[0])
    del finished[keep:]


def beam_search(state, limits: list[int], num_beams: int, length_penalty: float, eos_id: int | None,
                pad_id: int, returns: int = 1) -> list[list[int]]:  # fmt: skip
    """The best hypothesis of each row (new tokens, EOS excluded); row ``b`` makes at most ``limits[b]``.
    ``eos_id`` None: no hypothesis ends early (all run to their limit). ``returns`` (at most ``num_beams``):
    the best that many of each row, best first, row by row."""
    b_size, k = len(limits), num_beams
    logits = state.logits()
    device = logits.device
    start = torch.arange(b_size, device=device).repeat_interleave(k)
    state.reorder(start)
    logits = logits.index_select(0, start)
    scores = torch.zeros(b_size, k, device=device)
    scores[:, 1:] = float("-inf")  # the beams start identical: expand only the first
    seqs: list[list[int]] = [[] for _ in range(b_size * k)]
    finished: list[list] = [[] for _ in range(b_size)]
    done = [False] * b_size
    for step in range(max(limits)):
        length = step + 1
        vocab = logits.shape[-1]
        cand = scores[:, :, None] + torch.log_softmax(logits.float(), dim=-1).view(b_size, k, vocab)
        top_scores, top_idx = cand.view(b_size, k * vocab).topk(min(2 * k, k * vocab), dim=1)
        top_beam, top_tok = (top_idx // vocab).tolist(), (top_idx % vocab).tolist()
        top_scores = top_scores.tolist()
        new_scores = [[float("-inf")] * k for _ in range(b_size)]
        new_beam = list(range(b_size * k))  # flat source row of each next beam
        new_tok = [pad_id] * (b_size * k)
        for b in range(b_size):
            if done[b]:
                continue
            running = []  # (log-prob sum, flat beam, token) of the next beams, best first
            for rank, (s, beam, tok) in enumerate(zip(top_scores[b], top_beam[b], top_tok[b])):
                if s == float("-inf") or len(running) == k:
                    break
                if tok != eos_id:
                    running.append((s, b * k + beam, tok))
                elif rank < k:  # an EOS counts only among the num_beams best candidates
                    _add(finished[b], seqs[b * k + beam], s, length, k, length_penalty)
            if length >= limits[b]:  # out of room: the running beams end here
                for s, beam, tok in running:
                    _add(finished[b], seqs[beam] + [tok], s, length, k, length_penalty)
            bound = _bound(running[0][0], length, limits[b], length_penalty) if running else float("-inf")
            beaten = len(finished[b]) >= k and finished[b][-1][0] >= bound
            done[b] = length >= limits[b] or not running or beaten
            for j, (s, beam, tok) in enumerate(running):
                new_scores[b][j], new_beam[b * k + j], new_tok[b * k + j] = s, beam, tok
        if all(done):
            break
        seqs = [seqs[i] + [t] for i, t in zip(new_beam, new_tok)]
        state.reorder(torch.tensor(new_beam, device=device))
        logits = state.logits(torch.tensor(new_tok, device=device))
        scores = torch.tensor(new_scores, device=device)
    return [f[i][1] if i < len(f) else [] for f in finished for i in range(returns)]

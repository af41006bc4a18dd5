"""The clipped LSTM with its hand-written backward pass (nn/clipped_lstm.py) against the step loop under
autograd it replaces (nn/lstm.py's ``clipped_lstm``), with the clips biting."""

import pytest
import torch

from warmstart.nn.clipped_lstm import ClippedLstm, fast_clipped_lstm
from warmstart.nn.lstm import LstmStack, clipped_lstm


def big_lstm(dtype=torch.float32, width=6, cells=16, inputs=8) -> torch.nn.LSTM:
    """Weights large enough that the cell state passes 1 and the projected state 0.5."""
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(inputs, cells, proj_size=width, batch_first=True).to(dtype)
    with torch.no_grad():
        for p in lstm.parameters():
            p.mul_(4)
    return lstm


def outputs_and_grads(run, lstm, x, clips):
    lstm.zero_grad(set_to_none=True)
    x = x.clone().requires_grad_()
    y = run(lstm, x, *clips)
    (y.float() * torch.linspace(-1, 1, y.numel()).view_as(y)).sum().backward()
    return [y.detach(), x.grad] + [p.grad for p in lstm.parameters()]


@pytest.mark.parametrize("clips", [(1.0, 0.5), (1.0, 0.0), (0.0, 0.5), (0.0, 0.0)])
def test_outputs_and_every_gradient_equal_the_autograd_loop(clips):
    lstm, x = big_lstm(), torch.randn(3, 9, 8) * 3
    new = outputs_and_grads(fast_clipped_lstm, lstm, x, clips)
    old = outputs_and_grads(clipped_lstm, lstm, x, clips)
    assert len(new) == 7  # output, input, w_ih, w_hh, b_ih, b_hh, w_hr
    for a, b in zip(new, old, strict=True):
        assert a.shape == b.shape and (a - b).abs().max() < 1e-5
    cell_clip, proj_clip = clips
    if proj_clip:  # the clip bites: outputs sit at it
        assert (new[0].abs() == proj_clip).any() and new[0].abs().max() == proj_clip
    if cell_clip:  # clipping the cells changes the outputs
        unclipped = fast_clipped_lstm(lstm, x, 0.0, proj_clip).detach()
        assert (unclipped - new[0]).abs().max() > 1e-2


def test_gradcheck_in_float64_with_both_clips_biting():
    lstm = big_lstm(torch.float64, width=2, cells=3, inputs=3)
    x = torch.randn(2, 4, 3, dtype=torch.float64) * 2
    weights = [lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.weight_hr_l0, lstm.bias_ih_l0 + lstm.bias_hh_l0]
    args = [x.requires_grad_()] + [w.detach().clone().requires_grad_() for w in weights]
    assert torch.autograd.gradcheck(lambda *a: ClippedLstm.apply(*a, 1.0, 0.5), args)
    assert (ClippedLstm.apply(*args, 1.0, 0.5).abs() == 0.5).any()
    assert (ClippedLstm.apply(*args, 0.0, 0.5) != ClippedLstm.apply(*args, 1.0, 0.5)).any()


def test_bf16_autocast_matches_the_loop_under_autocast():
    lstm, x = big_lstm(), torch.randn(3, 9, 8) * 3
    with torch.autocast("cpu", dtype=torch.bfloat16):
        new = outputs_and_grads(fast_clipped_lstm, lstm, x, (1.0, 0.5))
        old = outputs_and_grads(clipped_lstm, lstm, x, (1.0, 0.5))
    assert new[0].dtype == old[0].dtype == torch.bfloat16
    assert all(g.dtype == torch.float32 for g in new[1:])
    for a, b in zip(new, old, strict=True):
        assert (a.float() - b.float()).abs().max() <= 0.02 * max(b.float().abs().max(), 1)


def test_gradient_checkpointing_gives_the_same_gradients():
    def grads(checkpointing):
        torch.manual_seed(0)
        stack = LstmStack(6, 16, 2, 0.0, True, (1.0, 0.5))
        if checkpointing:
            stack.gradient_checkpointing_enable()
        x = (torch.randn(2, 7, 6) * 3).requires_grad_()
        sum(y.pow(2).sum() for y in stack(x)).backward()
        return [x.grad] + [p.grad for p in stack.parameters()]

    for a, b in zip(grads(True), grads(False), strict=True):
        assert (a - b).abs().max() < 1e-6


def test_padding_after_a_row_leaves_its_real_positions_alone():
    lstm, x = big_lstm(), torch.randn(2, 9, 8) * 3
    padded = x.clone()
    padded[1, 4:] = 0  # row 1: 4 real tokens, then padding
    y = fast_clipped_lstm(lstm, padded, 1.0, 0.5)
    assert (y[1:, :4] - fast_clipped_lstm(lstm, x[1:, :4], 1.0, 0.5)).abs().max() < 1e-6


def test_one_step_and_no_steps():
    lstm, x = big_lstm(), torch.randn(2, 1, 8) * 3
    new = outputs_and_grads(fast_clipped_lstm, lstm, x, (1.0, 0.5))
    old = outputs_and_grads(clipped_lstm, lstm, x, (1.0, 0.5))
    for a, b in zip(new, old, strict=True):
        assert (a - b).abs().max() < 1e-5
    assert fast_clipped_lstm(lstm, x[:, :0], 1.0, 0.5).shape == (2, 0, 6)

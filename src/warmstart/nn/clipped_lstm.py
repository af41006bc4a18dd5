"""One LSTM layer with a projection (LSTMP) whose cell state and projected state are clipped after every step
(the original ELMo clips both at 3), with its backward pass written out by hand.

``nn.LSTM`` does not expose the cell state, so clipping needs a step loop; run under autograd, that loop
records a dozen small operations per step and the backward pass replays them one by one. Here the forward
loop runs without autograd and keeps the gate activations, the cell and projected states; back-propagation
through time runs in a second loop that carries only the recurrent gradients, each clamp passing its
gradient where the value was inside the clip (as ``torch.clamp`` does: bounds included). The big matmuls
are out of the loops: the input projection of every step at once before the forward loop, and the input,
weight and bias gradients as one matmul over every step after the backward loop.

Under autocast the matmuls run in its dtype (bf16) and the gates and cell state in float32, as the step
loop under autocast did (nn/lstm.py's ``clipped_lstm``, kept as the reference the tests compare with). What
the backward pass needs is saved with ``save_for_backward``, so gradient checkpointing (nn/checkpointing.py)
drops and recomputes it; there are no second derivatives (``once_differentiable``)."""

from __future__ import annotations

import torch
from torch import nn


def fast_clipped_lstm(lstm: nn.LSTM, x: torch.Tensor, cell_clip: float, proj_clip: float) -> torch.Tensor:
    """``clipped_lstm(lstm, x, cell_clip, proj_clip)`` (nn/lstm.py): one layer, batch first, with a
    projection, the cell state clipped to +-cell_clip and the projected state to +-proj_clip after every
    step (0: no clip); (B, T, projection)."""
    weights = (lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.weight_hr_l0)
    bias = lstm.bias_ih_l0 + lstm.bias_hh_l0
    if x.shape[1] == 0:  # no steps
        return x.new_zeros(x.shape[0], 0, lstm.proj_size)
    kind = x.device.type
    if torch.is_autocast_enabled(kind):
        dtype = torch.get_autocast_dtype(kind)
        x, weights = x.to(dtype), tuple(w.to(dtype) for w in weights)
        with torch.autocast(kind, enabled=False):
            return ClippedLstm.apply(x, *weights, bias.float(), float(cell_clip), float(proj_clip))
    return ClippedLstm.apply(x, *weights, bias, float(cell_clip), float(proj_clip))


class ClippedLstm(torch.autograd.Function):
    """``apply(x (B, T, D), w_ih (4H, D), w_hh (4H, P), w_hr (P, H), bias (4H), cell_clip, proj_clip)`` ->
    (B, T, P); gates in ``nn.LSTM``'s order i, f, g, o. Matmuls in x's dtype, the rest in float32."""

    @staticmethod
    def forward(ctx, x, w_ih, w_hh, w_hr, bias, cell_clip, proj_clip):
        b, t, d = x.shape
        cells, proj = w_hr.shape[1], w_hr.shape[0]
        f32 = torch.promote_types(x.dtype, torch.float32)  # gates and cell state: float32 at least
        inputs = (x.transpose(0, 1).reshape(t * b, d) @ w_ih.t()).to(f32).add_(bias)
        inputs = inputs.view(t, b, 4 * cells)
        acts = x.new_empty(t, b, 4 * cells, dtype=f32)  # sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
        c_raw = x.new_empty(t, b, cells, dtype=f32)  # the cell state before its clip
        hs = x.new_zeros(t + 1, b, proj, dtype=x.dtype)  # hs[s + 1]: step s's output, hs[0] = 0
        h_raw = x.new_empty(t, b, proj, dtype=x.dtype) if proj_clip else hs[1:]  # before its clip
        c = x.new_zeros(b, cells, dtype=f32)
        w_hh_t, w_hr_t = w_hh.t(), w_hr.t()
        # every step's slices made at once (indexing in the loop costs as much as the arithmetic)
        steps = acts.view(t, b, 4, cells).unbind(0)
        i, f, g, o = (part.unbind(0) for part in acts.view(t, b, 4, cells).unbind(2))
        cs, ins, hs_in, hs_out, h_pre = (v.unbind(0) for v in (c_raw, inputs, hs[:-1], hs[1:], h_raw))
        for s in range(t):
            gates = mm_add(ins[s], hs_in[s], w_hh_t).view(b, 4, cells)
            torch.sigmoid(gates, out=steps[s])
            torch.tanh(gates[:, 2], out=g[s])
            torch.addcmul(f[s] * c, i[s], g[s], out=cs[s])
            c = cs[s].clamp(-cell_clip, cell_clip) if cell_clip else cs[s]
            torch.mm((o[s] * c.tanh()).to(x.dtype), w_hr_t, out=h_pre[s])
            if proj_clip:
                torch.clamp(h_pre[s], -proj_clip, proj_clip, out=hs_out[s])
        ctx.save_for_backward(x, w_ih, w_hh, w_hr, acts, c_raw, h_raw, hs)
        ctx.clips, ctx.bias_dtype = (cell_clip, proj_clip), bias.dtype
        return hs[1:].transpose(0, 1).contiguous()

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        x, w_ih, w_hh, w_hr, acts, c_raw, h_raw, hs = ctx.saved_tensors
        d_gates, d_h_raw, m = bptt(grad_out.transpose(0, 1), w_hh, w_hr, acts, c_raw, h_raw, ctx.clips)
        t, b, four_h = d_gates.shape
        flat = d_gates.view(t * b, four_h).to(x.dtype)
        xs = x.transpose(0, 1).reshape(t * b, -1)
        dx = (flat @ w_ih).view(t, b, -1).transpose(0, 1) if ctx.needs_input_grad[0] else None
        d_w_ih = flat.t() @ xs
        d_w_hh = flat[b:].t() @ hs[1:t].reshape((t - 1) * b, hs.shape[-1])
        d_w_hr = d_h_raw.reshape(t * b, -1).to(x.dtype).t() @ m.reshape(t * b, -1).to(x.dtype)
        d_bias = d_gates.sum((0, 1)).to(ctx.bias_dtype)
        return dx, d_w_ih, d_w_hh, d_w_hr, d_bias, None, None


def bptt(grad_out, w_hh, w_hr, acts, c_raw, h_raw, clips):
    """Back-propagation through time: the gradients (T, B, 4H) of the gate pre-activations and (T, B, P)
    of the projected state before its clip, from those of the outputs (T, B, P, time first); and the
    projection's inputs (T, B, H) again."""
    cell_clip, proj_clip = clips
    t, b, cells = c_raw.shape
    i, f, g, o = acts.view(t, b, 4, cells).unbind(2)
    c = c_raw.clamp(-cell_clip, cell_clip) if cell_clip else c_raw
    c_prev = torch.cat([torch.zeros_like(c[:1]), c[:-1]])
    tanh_c = c.tanh()
    # what each step's gate gradients are made of, for every step at once: d gates = d c * k[:3], d m * k[3]
    k = torch.stack([g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g), tanh_c * o * (1 - o)], 2)
    dc_from_m = o * (1 - tanh_c * tanh_c)  # d c / d m
    dtype = w_hh.dtype
    d_gates = k.new_empty(t, b, 4, cells)
    d_h_raw = k.new_empty(t, b, w_hr.shape[0])
    dc_next = k.new_zeros(b, cells)
    # every step's slices made at once, as in the forward loop
    dh_s, go_s, dc_dm, f_s = (v.unbind(0) for v in (d_h_raw, grad_out, dc_from_m, f))
    d_cells, d_outs, k_cells, k_outs = (
        v.unbind(0) for v in (d_gates[:, :, :3], d_gates[:, :, 3], k[:, :, :3], k[:, :, 3])
    )
    d_next = d_gates.view(t, b, 4 * cells)[1:].unbind(0)
    h_in = (h_raw.abs() <= proj_clip).unbind(0) if proj_clip else None  # where a clamp passes gradients
    c_in = (c_raw.abs() <= cell_clip).unbind(0) if cell_clip else None
    for s in reversed(range(t)):
        dh = dh_s[s]
        if s + 1 < t:
            mm_add(go_s[s], d_next[s], w_hh, out=dh)
        else:
            dh.copy_(go_s[s])
        if proj_clip:
            dh.mul_(h_in[s])
        dm = (dh.to(dtype) @ w_hr).to(k.dtype)
        dc = torch.addcmul(dc_next, dm, dc_dm[s])
        if cell_clip:
            dc.mul_(c_in[s])
        dc_next = dc * f_s[s]
        torch.mul(dc.unsqueeze(1), k_cells[s], out=d_cells[s])
        torch.mul(dm, k_outs[s], out=d_outs[s])
    return d_gates.view(t, b, 4 * cells), d_h_raw, o * tanh_c


def mm_add(acc: torch.Tensor, a: torch.Tensor, w: torch.Tensor, out=None) -> torch.Tensor:
    """``acc + a @ w``: one addmm where all three share a dtype, else the matmul in w's dtype (bf16) added
    to acc (float32)."""
    if acc.dtype == a.dtype == w.dtype:
        return torch.addmm(acc, a, w, out=out)
    return torch.add(acc, a.to(w.dtype) @ w, out=out)

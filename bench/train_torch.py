#!/usr/bin/env python3
"""bench/train_torch.py - the PyTorch side of bench_train (row D).

One training step of the MLP of bench_train.c (784-512-512-10, relu,
softmax cross-entropy averaged over the batch, Adam) on one thread, in
two forms: PyTorch eager, and TorchScript (the forward pass and its loss
compiled by torch.jit.script; the backward runs through autograd, Adam
through torch.optim, as a TorchScript model is trained).

bench_train starts it with pipes on stdin and stdout:

    python3 train_torch.py DATA B,IN,H,OUT LR,BETA1,BETA2,EPS

DATA holds x [B,IN], the one-hot labels [B,OUT] and the initial w1 b1 w2
b2 w3 b3 as raw little-endian f32, in that order; both forms start from
them. The script answers once with

    ready LOSS_EAGER LOSS_SCRIPT THREADS

(the loss of each form's first step, taken before its update, which the
harness compares with its own, and torch's thread count), or with
"skip WHY" if it cannot run. Then, for each line "step" it reads, it runs
one eager and one TorchScript step and answers "SECONDS_EAGER
SECONDS_SCRIPT"; "quit" or the end of its input ends it. Between two
lines it only waits, so the harness's rounds alternate with its steps.
"""
import sys
import time

WARM_UP = 5  # steps of each form after the first: the profiling executor optimizes then


def forward(x, y, w1, b1, w2, b2, w3, b3):
    h1 = (x @ w1 + b1).relu()
    h2 = (h1 @ w2 + b2).relu()
    return torch.nn.functional.cross_entropy(h2 @ w3 + b3, y)


def load(path, dims):
    b, n_in, h, n_out = dims
    shapes = [(b, n_in), (b, n_out), (n_in, h), (h,), (h, h), (h,), (h, n_out), (n_out,)]
    raw = numpy.fromfile(path, dtype="<f4")
    if raw.size != sum(int(numpy.prod(s)) for s in shapes):
        print("skip %s has %d floats, not the sizes %s" % (path, raw.size, dims), flush=True)
        sys.exit(0)
    out, at = [], 0
    for s in shapes:
        n = int(numpy.prod(s))
        out.append(torch.from_numpy(raw[at:at + n].reshape(s).copy()))
        at += n
    return out[0], out[1].argmax(dim=1), out[2:]


class Form:
    """One way of running the step: its function, parameters and optimizer."""

    def __init__(self, fn, start, hyper):
        lr, b1, b2, eps = hyper
        self.fn = fn
        self.params = [p.clone().requires_grad_() for p in start]
        self.opt = torch.optim.Adam(self.params, lr=lr, betas=(b1, b2), eps=eps)

    def step(self, x, y):
        self.opt.zero_grad(set_to_none=True)
        loss = self.fn(x, y, *self.params)
        loss.backward()
        self.opt.step()
        return loss.item()

    def timed_step(self, x, y):
        t0 = time.perf_counter()
        self.step(x, y)
        return time.perf_counter() - t0


def main():
    dims = [int(v) for v in sys.argv[2].split(",")]
    hyper = [float(v) for v in sys.argv[3].split(",")]
    torch.set_num_threads(1)
    x, y, start = load(sys.argv[1], dims)
    eager = Form(forward, start, hyper)
    script = Form(torch.jit.script(forward), start, hyper)
    loss_eager, loss_script = eager.step(x, y), script.step(x, y)
    for _ in range(WARM_UP):
        eager.step(x, y)
        script.step(x, y)
    print("ready %.9g %.9g %d" % (loss_eager, loss_script, torch.get_num_threads()), flush=True)
    for line in sys.stdin:
        if line.strip() != "step":
            break
        print("%.9g %.9g" % (eager.timed_step(x, y), script.timed_step(x, y)), flush=True)


if __name__ == "__main__":
    try:
        import torch
        import numpy
    except ImportError as e:
        name = "python3-numpy" if getattr(e, "name", "") == "numpy" else "python3-torch"
        print("skip %s not installed" % name, flush=True)
        sys.exit(0)
    main()

"""A few training steps of a tiny transformer language model on synthetic
tokens, with xent's loss under torch.compile beside plain PyTorch.

    python3 examples/torch/train.py [--steps 30] [--vocab 128256] [--batch 4] [--seq 2048]

Needs a CUDA GPU, PyTorch and the xent package (``pip install ./python``);
xent.torch finds its kernels in ``$XENT_CACHE_DIR`` (a bundle built by
python/tools/make_xent_bundle.py, or compiled on first use where
xent-opt is on PATH). Three runs from the same initial weights, each under
``torch.compile`` and bf16 autocast:

- ``torch``: the model's loss is ``F.cross_entropy``;
- ``xent``: the model calls ``xent.torch.cross_entropy``;
- ``swap``: the model of the first run, unmodified, compiled with
  ``backend="xent"`` (xent.torch.patch()), which swaps its
  ``F.cross_entropy`` for xent's.

Prints each run's loss every few steps and its tokens/s after warm-up, then
the largest loss difference between the runs.
"""

import argparse
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import xent.torch as xt


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, s, d))
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab, dim=256, heads=4, layers=2, loss="torch"):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.loss = loss

    def forward(self, tokens, targets):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x)).flatten(0, 1)
        if self.loss == "xent":
            # float32 like F.cross_entropy's under autocast
            return xt.cross_entropy(logits, targets.flatten(), loss_dtype=torch.float32)
        return F.cross_entropy(logits, targets.flatten())


def train(model, batches, steps, label):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    losses, start, warm = [], None, min(5, steps - 1)
    for step in range(steps):
        if step == warm:
            torch.cuda.synchronize()
            start = time.perf_counter()
        tokens, targets = batches[step % len(batches)]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach())
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    tokens_per_s = (steps - warm) * batches[0][0].numel() / elapsed
    losses = [v.float().item() for v in losses]
    shown = ", ".join(f"{v:.4f}" for v in losses[:: max(1, steps // 6)])
    print(f"{label:6s} loss {shown}  ...  {losses[-1]:.4f}   {tokens_per_s:,.0f} tokens/s")
    return losses


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=2048)
    args = p.parse_args()
    torch.manual_seed(0)
    g = torch.Generator(device="cuda").manual_seed(0)
    batches = []
    for _ in range(4):
        seq = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device="cuda",
                            generator=g)
        batches.append((seq[:, :-1].contiguous(), seq[:, 1:].contiguous()))
    base = TinyLM(args.vocab).cuda()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}; "
          f"vocab {args.vocab}, {args.batch}x{args.seq} tokens per step")
    runs = {}
    for label, loss, backend in (("torch", "torch", "inductor"), ("xent", "xent", "inductor"),
                                 ("swap", "torch", xt.patch())):
        model = copy.deepcopy(base)
        model.loss = loss
        runs[label] = train(torch.compile(model, backend=backend), batches, args.steps, label)
    for label in ("xent", "swap"):
        diff = max(abs(a - b) for a, b in zip(runs["torch"], runs[label]))
        print(f"largest loss difference torch vs {label}: {diff:.2e}")


if __name__ == "__main__":
    main()

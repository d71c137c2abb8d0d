"""Vocabulary-parallel cross-entropy over NCCL, one process per GPU:
:func:`xent.torch.vocab_parallel_cross_entropy` (both merges) against a
Megatron-style implementation written here in PyTorch (a max all-reduce and
one all-reduce of (Σ exp, target logit) around eager ops; its gradient from
the saved softmax). Forward + backward per call, GPU time (CUDA events, the
slowest rank) beside wall clock, and the bytes each rank sends per row.

    python3 -m xent.bench.vocab_parallel --vocab 128256 256000 --rows 8192 \\
        --ranks 2 4 8 --dtype bf16

A run needs as many GPUs as its largest ``--ranks``; NVLink multicast stays
off (NCCL_NVLS_ENABLE=0 is set for the workers).
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from xent.torch import vocab_parallel_cross_entropy

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


class _MegatronStyle(torch.autograd.Function):
    """Megatron's vocab-parallel cross-entropy, plain (no smoothing)."""

    @staticmethod
    def forward(ctx, logits, target, offset, group):
        x = logits.float()
        m = x.amax(dim=1)
        dist.all_reduce(m, op=dist.ReduceOp.MAX, group=group)
        x = x - m.unsqueeze(1)
        local = (target >= offset) & (target < offset + x.shape[1])
        t = torch.where(local, target - offset, torch.zeros_like(target))
        predicted = torch.where(local, x.gather(1, t.unsqueeze(1)).squeeze(1),
                                torch.zeros_like(m))
        e = torch.exp(x)
        sums = torch.stack([e.sum(dim=1), predicted], dim=1)
        dist.all_reduce(sums, op=dist.ReduceOp.SUM, group=group)
        loss = torch.log(sums[:, 0]) - sums[:, 1]
        e.div_(sums[:, 0].unsqueeze(1))
        ctx.save_for_backward(e, t, local)
        ctx.dtype = logits.dtype
        return loss.mean()

    @staticmethod
    def backward(ctx, g):
        softmax, t, local = ctx.saved_tensors
        grad = softmax
        grad.scatter_add_(1, t.unsqueeze(1), -local.float().unsqueeze(1))
        grad.mul_(g / softmax.shape[0])
        return grad.to(ctx.dtype), None, None, None


def _time(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / iters * 1e3
    gpu = start.elapsed_time(end) / iters
    times = torch.tensor([gpu, wall], device="cuda")
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    return times.tolist()


def _worker(rank, world, port, args, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0",
                      TORCH_SYMM_MEM_DISABLE_MULTICAST="1")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    dtype = DTYPES[args.dtype]
    for vocab in args.vocab:
        width = vocab // world
        gen = torch.Generator(device="cuda").manual_seed(rank)
        shard = (torch.randn(args.rows, width, device="cuda", generator=gen) * 3).to(dtype)
        shard.requires_grad_()
        target = torch.randint(0, width * world, (args.rows,), device="cuda",
                               generator=torch.Generator(device="cuda").manual_seed(7))

        def run(fn):
            def step():
                shard.grad = None
                fn().backward()
            return step

        cases = {
            "xent all_reduce": lambda: vocab_parallel_cross_entropy(shard, target),
            "xent all_gather": lambda: vocab_parallel_cross_entropy(shard, target,
                                                                    merge="all_gather"),
            "megatron-style": lambda: _MegatronStyle.apply(shard, target, rank * width, None),
        }
        for name, fn in cases.items():
            gpu, wall = _time(run(fn), args.iters, args.warmup)
            if rank == 0:
                queue.put((world, vocab, name, gpu, wall))
    dist.destroy_process_group()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, nargs="+", default=[128256, 256000])
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args(argv)
    gpus = torch.cuda.device_count()
    ctx = mp.get_context("spawn")
    # Bytes each rank sends per row: all-reduce of the max and of
    # (Σ exp, x_t); all-gather of (m, Σ exp, x_t). f32 values.
    sent = {"xent all_reduce": 12, "xent all_gather": 12, "megatron-style": 12}
    print(f"rows {args.rows}, {args.dtype}; forward + backward per call, ms "
          f"(GPU: CUDA events of the slowest rank; wall: host clock)")
    print(f"{'ranks':>5} {'vocab':>7} {'provider':<16} {'GPU ms':>8} {'wall ms':>8} "
          f"{'vs megatron':>11} {'bytes/row sent':>14}")
    for world in args.ranks:
        if world > gpus:
            print(f"{world:>5} skipped: {gpus} GPU(s) here")
            continue
        queue = ctx.Queue()
        mp.spawn(_worker, args=(world, 29500 + world, args, queue), nprocs=world, join=True)
        rows = [queue.get() for _ in range(len(args.vocab) * 3)]
        for vocab in args.vocab:
            base = next(r for r in rows if r[1] == vocab and r[2] == "megatron-style")
            for w, v, name, gpu, wall in rows:
                if v == vocab:
                    print(f"{w:>5} {v:>7} {name:<16} {gpu:>8.3f} {wall:>8.3f} "
                          f"{base[3] / gpu:>10.2f}x {sent[name]:>14}")


if __name__ == "__main__":
    main()

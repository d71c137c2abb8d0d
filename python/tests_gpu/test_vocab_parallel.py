"""xent.torch.vocab_parallel_cross_entropy over 2 and 4 processes (gloo, on the
GPU and on the CPU) against PyTorch's cross-entropy of the whole logits in
float64 (z-loss and softcap on top, as test_torch_dropin.py does): the loss
on every rank and the gradient slices put back together, for both merges,
every feature, N-D logits, probability targets and an uneven split.

Runs on the GPU machine (needs PyTorch; the CPU cases too, so that one run
covers both); never in CI.
"""

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from xent.torch import VocabParallelCrossEntropyLoss, vocab_parallel_cross_entropy

# name, dtype, logits shape (classes on axis 1), weighted, ignore_index,
# label smoothing, z-loss scale, softcap, reduction, probability targets.
CONFIGS = [
    ("plain", torch.float32, (16, 64), False, None, 0.0, 0.0, None, "mean", False),
    ("weighted-ignore", torch.float32, (16, 64), True, 3, 0.0, 0.0, None, "mean", False),
    ("smoothing", torch.float32, (16, 64), False, None, 0.1, 0.0, None, "sum", False),
    ("weighted-smoothing", torch.float32, (16, 64), True, 5, 0.2, 0.0, None, "mean", False),
    ("z-softcap-none", torch.float32, (16, 64), False, 2, 0.0, 1e-2, 20.0, "none", False),
    ("everything", torch.float32, (12, 128), True, 7, 0.1, 1e-3, 15.0, "mean", False),
    ("rank3", torch.float32, (4, 64, 5), True, 1, 0.1, 1e-3, None, "none", False),
    ("probs", torch.float32, (16, 64), True, None, 0.1, 1e-3, None, "mean", True),
    ("bf16", torch.bfloat16, (32, 256), False, 9, 0.1, 1e-4, 30.0, "mean", False),
]
# An uneven split over 2 ranks: classes [0, 20) and [20, 37).
UNEVEN = ("uneven", torch.float32, (16, 37), True, 4, 0.1, 1e-3, 10.0, "mean", False)
SPLIT = (20, 17)

LOSS_RTOL = {torch.float32: 1e-6, torch.bfloat16: 8e-3}
GRAD_RTOL = {torch.float32: 1e-6, torch.bfloat16: 2.6e-3}  # of max |dlogits|, f32; L2 for bf16


def _inputs(config, device, seed):
    name, dtype, shape, weighted, ignore, eps, z, cap, reduction, probs = config
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=gen) * 3.0).to(dtype)
    classes = shape[1]
    rows = (shape[0],) + shape[2:]
    if probs:
        target = torch.softmax(torch.randn(shape, generator=gen), dim=1)
    else:
        target = torch.randint(0, classes, rows, generator=gen)
        if ignore is not None:
            target[torch.rand(rows, generator=gen) < 0.25] = ignore
    weight = torch.rand(classes, generator=gen) + 0.5 if weighted else None
    grad = torch.randn(rows, generator=gen) if reduction == "none" else torch.tensor(1.5)
    to = lambda t: None if t is None else t.to(device)
    return to(x), to(target), to(weight), to(grad)


def _kwargs(config):
    _, _, _, _, ignore, eps, z, cap, reduction, _ = config
    return dict(ignore_index=-100 if ignore is None else ignore, reduction=reduction,
                label_smoothing=eps, z_loss_scale=z, softcap=cap)


def _reference(config, x, target, weight, grad):
    """Loss and dlogits of the whole logits in float64."""
    kw = _kwargs(config)
    x64 = x.detach().double().requires_grad_()
    xx = kw["softcap"] * torch.tanh(x64 / kw["softcap"]) if kw["softcap"] else x64
    probs = target.is_floating_point()
    t = target.double() if probs else target
    w = None if weight is None else weight.double()
    ce = F.cross_entropy(xx, t, w, ignore_index=kw["ignore_index"], reduction="none",
                         label_smoothing=kw["label_smoothing"])
    kept = torch.ones_like(ce) if probs else (target != kw["ignore_index"]).double()
    lse = torch.logsumexp(xx, dim=1)
    z = kw["z_loss_scale"] * lse * lse * kept
    if kw["reduction"] == "none":
        loss = ce + z
    elif kw["reduction"] == "sum":
        loss = ce.sum() + z.sum()
    else:
        w_t = kept if probs or w is None else w[torch.where(kept > 0, target, 0)] * kept
        loss = ce.sum() / w_t.sum() + z.sum() / kept.sum()
    (loss * grad.double()).sum().backward()
    return loss.detach(), x64.grad


def _check(config, loss, dlogits, ref_loss, ref_grad, what):
    dtype = config[1]
    err = (loss.double() - ref_loss).abs()
    assert torch.all(err <= LOSS_RTOL[dtype] * ref_loss.abs() + 1e-7 * ref_loss.abs().max()), (
        f"{what}: loss error {err.max().item():.3g} of {ref_loss.abs().max().item():.3g}")
    d, r = dlogits.double(), ref_grad
    if dtype == torch.float32:
        err = (d - r).abs().max() / r.abs().max()
    else:
        err = torch.linalg.vector_norm(d - r) / torch.linalg.vector_norm(r)
    assert err <= GRAD_RTOL[dtype], f"{what}: dlogits error {err.item():.3g}"


def _slices(config, world):
    classes = config[2][1]
    widths = SPLIT if config[0] == "uneven" else (classes // world,) * world
    offsets = [sum(widths[:r]) for r in range(world)]
    return widths, offsets


def _worker(rank, world, init_file, device, merge, out_dir):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world)
    configs = CONFIGS + ([UNEVEN] if world == 2 else [])
    results = {}
    for i, config in enumerate(configs):
        x, target, weight, grad = _inputs(config, device, seed=100 + i)
        widths, offsets = _slices(config, world)
        shard = x.narrow(1, offsets[rank], widths[rank]).detach().clone().requires_grad_()
        t = target.narrow(1, offsets[rank], widths[rank]) if target.is_floating_point() else target
        uneven = config[0] == "uneven"
        loss, z = vocab_parallel_cross_entropy(
            shard, t, None, weight, return_z_loss=True, merge=merge,
            class_offset=offsets[rank] if uneven else None,
            num_classes=x.shape[1] if uneven else None, **_kwargs(config))
        (loss * grad).sum().backward()
        results[config[0]] = (loss.detach().cpu(), z.detach().cpu(), shard.grad.cpu())
    torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


DEVICES = ["cuda", "cpu"] if torch.cuda.is_available() else ["cpu"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("merge", ["all_reduce", "all_gather"])
@pytest.mark.parametrize("world", [2, 4])
def test_gloo_matches_whole_logits(tmp_path, world, merge, device):
    mp.spawn(_worker, args=(world, str(tmp_path / "init"), device, merge, str(tmp_path)),
             nprocs=world, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(world)]
    configs = CONFIGS + ([UNEVEN] if world == 2 else [])
    for i, config in enumerate(configs):
        name = config[0]
        x, target, weight, grad = _inputs(config, "cpu", seed=100 + i)
        ref_loss, ref_grad = _reference(config, x, target, weight, grad)
        loss0 = ranks[0][name][0]
        for r in range(1, world):
            assert torch.equal(ranks[r][name][0], loss0), f"{name}: rank {r}'s loss differs"
        dlogits = torch.cat([ranks[r][name][2] for r in range(world)], dim=1)
        _check(config, loss0, dlogits, ref_loss, ref_grad, f"{name} p={world} {merge} {device}")


@pytest.mark.parametrize("device", DEVICES)
def test_one_process_without_distributed(device):
    """Without torch.distributed the whole row is the slice."""
    assert not dist.is_initialized()
    for i, config in enumerate(CONFIGS):
        x, target, weight, grad = _inputs(config, device, seed=100 + i)
        ref_loss, ref_grad = _reference(config, x.cpu(), target.cpu(),
                                        None if weight is None else weight.cpu(), grad.cpu())
        xs = x.detach().clone().requires_grad_()
        loss = VocabParallelCrossEntropyLoss(weight=weight, **_kwargs(config))(xs, target)
        (loss * grad).sum().backward()
        _check(config, loss.detach().cpu(), xs.grad.cpu(), ref_loss, ref_grad, config[0])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the kernels need CUDA")
@pytest.mark.parametrize("index", range(len(CONFIGS)))
def test_kernels_match_the_pytorch_steps(monkeypatch, index):
    """On CUDA the slice's steps are xent kernels (xent.runtime.slices); the
    same protocol as PyTorch operations (XENT_VOCAB_KERNELS=0) gives the same
    loss and gradient, for a slice that does not start at class 0 too, and
    with the z-loss returned: used for logging only (the kernels) or
    differentiated beside the loss (the PyTorch steps)."""
    config = CONFIGS[index]
    if config[-1]:
        pytest.skip("probability targets take the PyTorch steps either way")
    x, target, weight, grad = _inputs(config, "cuda", seed=300 + index)
    kw = _kwargs(config)
    classes = x.shape[1]
    slices = [(0, classes)]
    # In one process the merged statistics are the slice's own; with label
    # smoothing and no weights the gradient kernel takes Σ w = C (the op's
    # contract: merged statistics cover the row), the PyTorch steps the
    # slice's sum: they agree on a slice only where the merge is real.
    if not (kw["label_smoothing"] and weight is None):
        slices.append((classes // 4, classes // 2))
    for offset, width in slices:
        xs = x.narrow(1, offset, width)
        results = []
        for kernels in ("1", "0"):
            monkeypatch.setenv("XENT_VOCAB_KERNELS", kernels)
            for use_z in (False, True):
                leaf = xs.detach().clone().requires_grad_()
                loss, z = vocab_parallel_cross_entropy(
                    leaf, target, weight=weight, class_offset=offset, num_classes=classes,
                    return_z_loss=True, loss_dtype=torch.float32, **kw)
                total = (loss * grad).sum() + (z.sum() if use_z else 0.0)
                total.backward()
                results.append((loss.detach(), leaf.grad))
        for (lk, gk), (lp, gp) in zip(results[:2], results[2:]):
            if x.dtype == torch.float32:
                tol = dict(rtol=1e-5, atol=1e-6)
            else:
                # The kernels' softcap of bf16 logits is the hardware tanh
                # (relative error below 2^-10.9: a capped logit off by up to
                # cap * 2^-10.9, each p_c by as much relative), the PyTorch
                # steps' f32 tanh; both are checked against float64 by
                # test_gloo_matches_whole_logits.
                tol = dict(rtol=2e-2, atol=2e-2 * gp.float().abs().max().item())
            torch.testing.assert_close(lk, lp, rtol=1e-5, atol=1e-6, equal_nan=True)
            torch.testing.assert_close(gk.float(), gp.float(), **tol, equal_nan=True)


def test_bad_arguments():
    x = torch.randn(4, 8)
    t = torch.randint(0, 8, (4,))
    with pytest.raises(ValueError, match="reduction"):
        vocab_parallel_cross_entropy(x, t, reduction="avg")
    with pytest.raises(ValueError, match="merge"):
        vocab_parallel_cross_entropy(x, t, merge="ring")
    with pytest.raises(ValueError, match="not within"):
        vocab_parallel_cross_entropy(x, t, class_offset=4, num_classes=10)
    with pytest.raises(ValueError, match="class-index targets"):
        vocab_parallel_cross_entropy(x, t[:3])
    with pytest.raises(ValueError, match="all 8 class weights"):
        vocab_parallel_cross_entropy(x, t, weight=torch.ones(4))

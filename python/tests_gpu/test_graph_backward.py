"""xent.torch.cross_entropy inside traced graphs: the forward calls the loss
alone (``xent::cross_entropy``, one read of the logits) and the backward the
joint kernel with the graph's grad_output (``xent::cross_entropy_backward``:
one read, one write, the gradient already scaled), never the joint kernel's
gradient for grad_output = 1 scaled again by a pointwise op of the graph.

Checked on the graphs aot_autograd hands its compilers, and in numbers:
random configurations (dtype, shape, rank, reduction, class weights,
smoothing, z-loss, softcap, loss dtype, a grad_output that is a value of the
graph) under torch.compile against float64 and against PyTorch's own error
in the same dtype; a Hugging Face style loss through ``backend="xent"``; the
new operator under torch.library.opcheck; XENT_GRAPH_JOINT=1's older graph
for comparison.
"""

import os
import random
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from xent import torch as xt

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _capture():
    """An aot_autograd backend that keeps the forward and backward graphs'
    text and runs them as they are."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd
    graphs = {}

    def keep(name):
        def compiler(gm, _inputs):
            graphs[name] = str(gm.graph)
            return make_boxed_func(gm.forward)
        return compiler
    return aot_autograd(fw_compiler=keep("forward"), bw_compiler=keep("backward")), graphs


def _loss(x, t, w, eps, z, cap, reduction, ignore_index=-100):
    """F.cross_entropy with a softcap and the z-loss (z·lse² on kept
    elements, divided by their number for mean) in x's dtype; the z-loss in
    float32 at least, as Liger and xent compute it."""
    if cap:
        x = cap * torch.tanh(x / cap)
    ce = F.cross_entropy(x, t, None if w is None else w.to(x.dtype), ignore_index=ignore_index,
                         reduction=reduction, label_smoothing=eps)
    if not z:
        return ce
    acc = x if x.dtype == torch.float64 else x.float()
    keep = (t != ignore_index).to(acc.dtype)
    zl = z * torch.logsumexp(acc, 1) ** 2 * keep
    if reduction == "mean":
        zl = zl.sum() / keep.sum()
    elif reduction == "sum":
        zl = zl.sum()
    return (ce.to(zl.dtype) + zl).to(ce.dtype)


def _rel(a, ref):
    n = ref.norm()
    return ((a.double() - ref).norm() / n).item() if n > 0 else (a.double() - ref).norm().item()


def _configs(count=32, seed=36):
    rng = random.Random(seed)
    out = []
    for k in range(count):
        out.append(dict(
            dtype=DTYPES[k % 3], rows=rng.choice([1, 7, 64, 300, 1024]),
            vocab=rng.choice([2, 5, 1000, 4097, 32000, 50257]),
            rank=3 if k % 5 == 4 else 2, reduction=("mean", "sum", "none")[k % 3 if k % 7 else 1],
            weighted=rng.random() < 0.3, eps=rng.choice([0.0, 0.0, 0.1]),
            z=rng.choice([0.0, 0.0, 1e-4]), cap=rng.choice([None, None, 30.0]),
            f32_loss=rng.random() < 0.5, ignore_index=rng.choice([-100, 0]), seed=k))
    return out


def _inputs(c):
    g = torch.Generator(device="cuda").manual_seed(c["seed"])
    shape = (c["rows"], c["vocab"]) if c["rank"] == 2 else (max(c["rows"] // 8, 1), c["vocab"], 8)
    x64 = torch.randn(shape, device="cuda", dtype=torch.float64, generator=g) * 4
    tshape = shape[:1] + shape[2:]
    # Some kept element in every configuration (a mean over none is NaN).
    low = 1 if c["ignore_index"] == 0 else 0
    t = torch.randint(low, c["vocab"], tshape, device="cuda", generator=g)
    t.view(-1)[1::7] = c["ignore_index"]
    w = (torch.rand(c["vocab"], device="cuda", generator=g) + 0.5) if c["weighted"] else None
    # grad_output as models make it: a value of the graph (a token count
    # here, a tensor), per element for none.
    n_items = (t != c["ignore_index"]).sum().clamp(min=1).float()
    rows = torch.rand(tshape, device="cuda", generator=g) + 0.5
    return x64, t, w, n_items, rows


def _reduce(loss, c, n_items, rows):
    if c["reduction"] == "none":
        return (loss * rows).sum()
    return loss / n_items


@pytest.mark.parametrize("c", _configs(), ids=lambda c: (
    f"{str(c['dtype'])[6:]}-{c['rows']}x{c['vocab']}-r{c['rank']}-{c['reduction']}"
    f"{'-w' if c['weighted'] else ''}{'-ls' if c['eps'] else ''}{'-z' if c['z'] else ''}"
    f"{'-cap' if c['cap'] else ''}{'-f32loss' if c['f32_loss'] else ''}-ii{c['ignore_index']}"))
def test_compiled_against_float64_and_pytorch(c):
    x64, t, w, n_items, rows = _inputs(c)
    ii = c["ignore_index"]
    torch._dynamo.reset()  # one code object, a new closure per configuration
    backend, graphs = _capture()

    def xent_fn(x, t, w, n_items, rows):
        loss = xt.cross_entropy(x, t, w, ignore_index=ii, reduction=c["reduction"],
                                label_smoothing=c["eps"], z_loss_scale=c["z"], softcap=c["cap"],
                                loss_dtype=torch.float32 if c["f32_loss"] else None)
        return _reduce(loss, c, n_items, rows)
    compiled = torch.compile(xent_fn, backend=backend, fullgraph=True)

    def run(fn, x):
        x = x.detach().requires_grad_()
        out = fn(x)
        out.backward()
        return out.detach(), x.grad

    x = x64.to(c["dtype"])
    xe_l, xe_g = run(lambda x: compiled(x, t, w, n_items, rows), x)
    assert "xent.cross_entropy.default" in graphs["forward"], graphs["forward"]
    assert "cross_entropy_with_grad" not in graphs["forward"], graphs["forward"]
    assert "xent.cross_entropy_backward.default" in graphs["backward"], graphs["backward"]
    assert xe_g.dtype == c["dtype"] and xe_g.shape == x.shape

    def torch_fn(x, w):
        return _reduce(_loss(x, t, w, c["eps"], c["z"], c["cap"], c["reduction"], ii), c,
                       n_items, rows)
    pt_l, pt_g = run(lambda x: torch_fn(x, w), x)
    ref_l, ref_g = run(lambda x: torch_fn(x, None if w is None else w.double()), x.double())
    ref_g = torch.nan_to_num(ref_g)
    slack = 1e-6 if c["dtype"] == torch.float32 else 1e-3
    assert _rel(xe_l, ref_l) <= 2 * _rel(pt_l, ref_l) + slack, (_rel(xe_l, ref_l),
                                                                _rel(pt_l, ref_l))
    assert _rel(xe_g, ref_g) <= 2 * _rel(pt_g, ref_g) + slack, (_rel(xe_g, ref_g),
                                                                _rel(pt_g, ref_g))


def test_the_upcast_model_loss_through_the_backend():
    """Transformers' ForCausalLMLoss as a graph: logits.float(), a sum
    divided by the token count; the backend absorbs the upcast and the
    backward writes the bf16 gradient once."""
    xt.patch()
    g = torch.Generator(device="cuda").manual_seed(5)
    x = (torch.randn(256, 32000, device="cuda", generator=g) * 3).to(torch.bfloat16)
    t = torch.randint(0, 32000, (256,), device="cuda", generator=g)
    t[::9] = -100
    n = torch.tensor(float((t != -100).sum()), device="cuda")

    def model_loss(logits, labels, num_items):
        logits = logits.float()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1),
                               ignore_index=-100, reduction="sum") / num_items

    def run(fn, x):
        x = x.detach().requires_grad_()
        loss = fn(x, t, n)
        loss.backward()
        return loss.detach(), x.grad
    torch._dynamo.reset()
    xe_l, xe_g = run(torch.compile(model_loss, backend="xent"), x)
    assert any(what == "swapped" for _, what in xt.last_report()), xt.last_report()
    ref_l, ref_g = run(model_loss, x.double())
    pt_l, pt_g = run(model_loss, x)
    assert xe_g.dtype == torch.bfloat16
    assert _rel(xe_l, ref_l) <= 2 * _rel(pt_l, ref_l) + 1e-6
    assert _rel(xe_g, ref_g) <= 2 * _rel(pt_g, ref_g) + 1e-3


@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_opcheck_backward(dtype, reduction):
    g = torch.Generator(device="cuda").manual_seed(3)
    x = (torch.randn(48, 1000, device="cuda", generator=g) * 3).to(dtype)
    t = torch.randint(0, 1000, (48,), device="cuda", generator=g)
    t[::5] = -100
    w = torch.rand(1000, device="cuda", generator=g) + 0.5
    grad = torch.rand(48 if reduction == "none" else (), device="cuda", generator=g)
    args = (x, t, w, reduction, -100, 0.1, 1e-4, 30.0, False)
    torch.library.opcheck(torch.ops.xent.cross_entropy_backward.default, (grad,) + args)
    # The forward operator's autograd formula, checked by opcheck too.
    torch.library.opcheck(torch.ops.xent.cross_entropy.default,
                          (x.detach().requires_grad_(),) + args[1:])
    dx = torch.ops.xent.cross_entropy_backward(grad, *args)
    x64 = x.double().requires_grad_()
    loss = _loss(x64, t, w.double(), 0.1, 1e-4, 30.0, reduction)
    (loss * grad.double()).sum().backward()
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
    assert _rel(dx, x64.grad) <= tol


def test_joint_graph_on_request():
    """XENT_GRAPH_JOINT=1 (comparisons): the joint kernel in the forward, as
    before; same numbers."""
    code = (
        "import torch, torch.nn.functional as F\n"
        "from xent import torch as xt\n"
        "x = torch.randn(64, 1000, device='cuda').requires_grad_()\n"
        "t = torch.randint(0, 1000, (64,), device='cuda')\n"
        "f = torch.compile(lambda x, t: xt.cross_entropy(x, t) * 3.0, fullgraph=True)\n"
        "f(x, t).backward()\n"
        "y = x.detach().double().requires_grad_()\n"
        "(F.cross_entropy(y, t) * 3.0).backward()\n"
        "torch.testing.assert_close(x.grad.double(), y.grad, rtol=1e-4, atol=1e-7)\n"
        "from torch._dynamo.backends.common import aot_autograd\n"
        "from functorch.compile import make_boxed_func\n"
        "seen = []\n"
        "def fw(gm, _):\n"
        "    seen.append(str(gm.graph)); return make_boxed_func(gm.forward)\n"
        "torch._dynamo.reset()\n"
        "g = torch.compile(lambda x, t: xt.cross_entropy(x, t) * 3.0,\n"
        "                  backend=aot_autograd(fw_compiler=fw), fullgraph=True)\n"
        "g(x, t).backward()\n"
        "assert 'cross_entropy_with_grad' in seen[0], seen[0]\n"
        "print('ok')\n")
    env = dict(os.environ, XENT_GRAPH_JOINT="1")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-3000:]

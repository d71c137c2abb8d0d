"""The in-place rules of convert-xent-to-gpu, executed on the GPU.

dlogits may take the logits' buffer only when nothing reads the logits after
the op (test/Conversion/XentToGPU/in-place.mlir checks the IR): here the
compiled functions of kernel_configs.IN_PLACE_MLIR run at both settings of
``resident-rows``, and the test checks where dlogits landed (the logits'
own memory, or fresh memory), that logits still read later were not
overwritten, and the values against PyTorch in float64 — so a wrong reuse
shows up as a wrong number, not only as a wrong pointer.

Runs where PyTorch sees a GPU; the libraries come from ``$XENT_CACHE_DIR``
(python/tools/make_bundle.py) or are compiled on first use.
"""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

from xent.runtime import gpu  # noqa: E402

import kernel_configs  # noqa: E402

ARGS = ["memref<f32>", "memref<?x?xbf16>", "memref<?xi64>"]
# V = 65536 bf16 at 512 threads: a full block's worth of 16-byte vectors, so
# rows take the resident path when it is compiled in; at V = 4096 they take
# the two-pass walk either way.
SHAPES = [(64, 65536), (33, 4096)]


def library(resident: bool):
    try:
        return gpu.KernelCache().get(kernel_configs.in_place_config(resident),
                                     lambda: kernel_configs.IN_PLACE_MLIR,
                                     kernel_configs.in_place_pipeline(resident))
    except gpu.DriverError as e:
        pytest.skip(f"no compiled in-place module: {e}")


def inputs(n, v, g):
    gen = torch.Generator(device="cuda").manual_seed(n * v)
    x = (torch.randn(n, v, device="cuda", generator=gen) * 3).to(torch.bfloat16)
    t = torch.randint(0, v, (n,), device="cuda", generator=gen)
    t[::7] = -100
    return torch.tensor(g, device="cuda"), x, t


def reference(x, t, g):
    """Loss and dlogits in float64, and PyTorch's own dlogits in bf16."""
    x64 = x.double().requires_grad_()
    loss = torch.nn.functional.cross_entropy(x64, t)
    (d64,) = torch.autograd.grad(loss * g, x64)
    xb = x.clone().requires_grad_()
    (db,) = torch.autograd.grad(torch.nn.functional.cross_entropy(xb, t) * g, xb)
    return loss.detach(), d64, db


def assert_gradient(d, d64, db):
    """xent's dlogits is at least as close to float64 as PyTorch's own bf16."""
    assert d.dtype == torch.bfloat16 and d.shape == d64.shape
    err = (d.double() - d64).norm() / d64.norm()
    torch_err = (db.double() - d64).norm() / d64.norm()
    assert err <= max(2.6e-3, 1.05 * torch_err), (err.item(), torch_err.item())


# name, results, grad_output, reduction of its loss (None: no loss), and
# whether dlogits takes the logits' memory, by resident-rows setting.
CASES = [
    # A joint op with dead logits: in place, except where the kernel has the
    # resident path compiled in (it reads the target's logit for the loss
    # after other blocks of its cluster may have written their gradient),
    # whatever path a row then takes.
    ("joint_dead", ["memref<f32>", "memref<?x?xbf16>"], 0.5, "mean", lambda r: not r),
    # A gradient op alone with dead logits: in place on both paths.
    ("grad_dead", ["memref<?x?xbf16>"], -3.0, None, lambda r: True),
    # A sum after a mean gradient: another configuration, so
    # xent-fuse-forward-backward leaves the pair alone and the logits are
    # live after the gradient op: never in place.
    ("grad_read_later", ["memref<?x?xbf16>", "memref<f32>"], 1.0, "sum", lambda r: False),
    # The same loss after its gradient: the pipeline fuses them into a joint
    # op, whose rule applies; its loss still sees the logits as they were.
    ("pair_fused", ["memref<?x?xbf16>", "memref<f32>"], 1.0, "mean", lambda r: not r),
]


@pytest.mark.parametrize("name,results,grad,reduction,in_place", CASES,
                         ids=[c[0] for c in CASES])
@pytest.mark.parametrize("resident", [True, False], ids=["resident", "two-pass"])
@pytest.mark.parametrize("n,v", SHAPES)
def test_in_place_rules(name, results, grad, reduction, in_place, resident, n, v):
    g, x, t = inputs(n, v, grad)
    x0 = x.clone()
    _, d64, db = reference(x, t, grad)
    outputs = library(resident).function(name, ARGS, results)(g, x, t)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    torch.cuda.synchronize()
    d = outputs[results.index("memref<?x?xbf16>")]
    assert (d.data_ptr() == x.data_ptr()) == in_place(resident)
    if not in_place(resident):
        assert torch.equal(x, x0)
    if reduction:
        loss = outputs[results.index("memref<f32>")]
        ref = torch.nn.functional.cross_entropy(x0.double(), t, reduction=reduction)
        torch.testing.assert_close(loss.double(), ref, rtol=1e-4, atol=1e-5 * n)
    assert_gradient(d, d64, db)

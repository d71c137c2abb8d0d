"""Memory through the caller's allocator: every device
buffer an xent.torch call needs — the kernels' scratch, the linear ops'
chunk logits and accumulators, the cuBLASLt workspace — comes from PyTorch's
caching allocator (the runtime's xentSetDeviceAllocator), so
torch.cuda.max_memory_allocated covers a call's whole footprint, the
per-process memory fraction bounds it, and the driver's default pool (where
the runtime's own cuMemAllocAsync would put it) stays untouched."""

import ctypes

import pytest
import torch

from xent import torch as xt

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

_USED_MEM_HIGH = 8  # CU_MEMPOOL_ATTR_USED_MEM_HIGH


def _default_pool():
    cuda = ctypes.CDLL("libcuda.so.1")
    dev, pool = ctypes.c_int(), ctypes.c_void_p()
    assert cuda.cuDeviceGet(ctypes.byref(dev), torch.cuda.current_device()) == 0
    assert cuda.cuDeviceGetDefaultMemPool(ctypes.byref(pool), dev) == 0
    return cuda, pool


def _pool_high_reset():
    cuda, pool = _default_pool()
    zero = ctypes.c_uint64(0)
    assert cuda.cuMemPoolSetAttribute(pool, _USED_MEM_HIGH, ctypes.byref(zero)) == 0


def _pool_high():
    cuda, pool = _default_pool()
    v = ctypes.c_uint64()
    assert cuda.cuMemPoolGetAttribute(pool, _USED_MEM_HIGH, ctypes.byref(v)) == 0
    return v.value


def _problem(n=2048, h=512, v=32000, dtype=torch.bfloat16):
    torch.manual_seed(0)
    hidden = (torch.randn(n, h, device="cuda") * 0.5).to(dtype).requires_grad_()
    weight = (torch.randn(v, h, device="cuda") * 0.05).to(dtype).requires_grad_()
    target = torch.randint(0, v, (n,), device="cuda")
    return hidden, weight, target


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_linear_footprint_is_pytorchs(dtype):
    hidden, weight, target = _problem(dtype=dtype)
    xt.linear_cross_entropy(hidden, weight, target).backward()  # warm: libraries loaded
    torch.cuda.synchronize()
    hidden.grad = weight.grad = None
    torch.cuda.reset_peak_memory_stats()
    _pool_high_reset()
    before = torch.cuda.memory_allocated()
    loss = xt.linear_cross_entropy(hidden, weight, target)
    loss.backward()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    v, h = weight.shape
    grads = hidden.numel() * hidden.element_size() + weight.numel() * weight.element_size()
    # At least the gradients, one 128-row chunk of f32 logits and the
    # 32 MiB cuBLASLt workspace; for bf16 also the f32 weight-gradient
    # accumulator.
    floor = grads + 128 * v * 4 + (32 << 20)
    if dtype != torch.float32:
        floor += v * h * 4
    assert peak >= floor, (peak, floor)
    assert _pool_high() == 0, "memory came from the driver's pool, not PyTorch's allocator"


def test_cross_entropy_scratch_is_pytorchs():
    x = torch.randn(64, 4096, device="cuda", requires_grad=True)
    t = torch.randint(0, 4096, (64,), device="cuda")
    xt.cross_entropy(x, t).backward()
    torch.cuda.synchronize()
    _pool_high_reset()
    count = torch.cuda.memory_stats()["allocation.all.allocated"]
    xt.cross_entropy(x, t, label_smoothing=0.1).backward()
    torch.cuda.synchronize()
    # The loss, the gradient and the kernels' f64 scratch.
    assert torch.cuda.memory_stats()["allocation.all.allocated"] >= count + 3
    assert _pool_high() == 0


def test_memory_fraction_bounds_the_linear_path():
    hidden, weight, target = _problem(n=4096, v=64000)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    # Room for the results PyTorch allocates (the gradients, the loss), not
    # for xent's buffers (f32 chunk logits of >= 128 rows: 32 MiB; the
    # cuBLASLt workspace: 32 MiB): the refusal must come from xent's call.
    grads = hidden.numel() * hidden.element_size() + weight.numel() * weight.element_size()
    allowed = torch.cuda.memory_reserved() + grads + (16 << 20)
    torch.cuda.set_per_process_memory_fraction(allowed / total)
    try:
        with pytest.raises(torch.OutOfMemoryError, match="linear_cross_entropy"):
            xt.linear_cross_entropy(hidden, weight, target).backward()
            torch.cuda.synchronize()
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    # And the call works again with the memory it needs.
    hidden.grad = weight.grad = None
    loss = xt.linear_cross_entropy(hidden, weight, target)
    loss.backward()
    ref = torch.nn.functional.cross_entropy((hidden.detach().float() @ weight.detach().float().T),
                                            target)
    torch.testing.assert_close(loss.float(), ref, rtol=2e-2, atol=2e-2)

"""xent.linear_cross_entropy_and_grad on the GPU (docs/linear-cross-entropy.md).

The modules of kernel_configs.linear_configs() — compiled by python/tools/make_bundle.py
through ``xent-gpu-pipeline`` (row chunks, cuBLASLt GEMMs of the runtime, the
loss kernel in place over each chunk's logits) — run through
xent.runtime.gpu with CUDA tensors. Loss, d_hidden, d_weight and d_bias are
compared with PyTorch in float64 on the same (rounded) inputs, and xent's
error with PyTorch's own in the same dtype (F.linear + F.cross_entropy and
backward): it must be no worse than twice PyTorch's, up to a floor at the
type's accumulation noise. N is never a multiple of the 128-row chunks
there; targets have ignored rows; mean, sum and none; with and without a
bias; bf16, f32 and (one configuration) f16 with int32 targets.

Runs where PyTorch sees a GPU; the libraries come from ``$XENT_CACHE_DIR``
or are compiled on first use where LLVM is at hand.
"""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import torch.nn.functional as F  # noqa: E402

from xent.runtime import gpu, linear  # noqa: E402

import kernel_configs  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
# Relative errors below these are accumulation noise of the type, whatever
# PyTorch's own error (which may be smaller by luck of its GEMM's order).
FLOOR = {"bf16": 2e-4, "f16": 5e-5, "f32": 2e-6}
# (N, H, V): N = 2·128 + 44 and 7·128 + 104 rows; V = 1000 (rows of the
# rounded dlogits not a multiple of 16 bytes: padded), 32000.
SHAPES = [(300, 64, 1000), (1000, 256, 32000)]


def function(config):
    try:
        return linear.linear_library(config)
    except gpu.DriverError as e:
        pytest.skip(f"no compiled linear module: {e}")


def run(config, grad, hidden, weight, bias, target, **attrs):
    """The entry of `config` through xent.runtime.linear's call, which passes
    the run-time scalars the entry takes after the tensors (and leaves out
    the z-loss result it always has when none was asked for)."""
    function(config)
    return linear.linear_cross_entropy_and_grad(
        hidden, weight, target, bias, grad_output=grad, reduction=config["reduction"],
        chunk_rows=config["chunk_rows"], ignore_index=config["ignore_index"], **attrs)


def inputs(config, n, h, v, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed + n * 7 + v)
    dtype = DTYPES[config["dtype"]]
    hidden = torch.randn(n, h, device="cuda", generator=gen).to(dtype)
    weight = (torch.randn(v, h, device="cuda", generator=gen) * h ** -0.5 * 2).to(dtype)
    bias = (torch.randn(v, device="cuda", generator=gen) * 0.5).to(dtype) if config["bias"] \
        else None
    index_type = torch.int32 if config["target"] == "i32" else torch.int64
    target = torch.randint(0, v, (n,), device="cuda", generator=gen)
    target[::7] = config["ignore_index"]
    target = target.to(index_type)
    if config["reduction"] == "none":
        grad = torch.randn(n, device="cuda", generator=gen)
    else:
        grad = torch.tensor(0.75, device="cuda")
    return hidden, weight, bias, target, grad


def torch_grads(config, hidden, weight, bias, target, grad, dtype):
    """Loss and gradients of F.linear + F.cross_entropy in `dtype`."""
    h = hidden.to(dtype).requires_grad_()
    w = weight.to(dtype).requires_grad_()
    b = bias.to(dtype).requires_grad_() if bias is not None else None
    loss = F.cross_entropy(F.linear(h, w, b), target.long(), reduction=config["reduction"],
                           ignore_index=config["ignore_index"])
    params = [h, w] + ([b] if b is not None else [])
    grads = torch.autograd.grad(loss, params, grad.to(loss.dtype))
    return [loss.detach()] + list(grads)


def rel(x, ref):
    x, ref = x.double(), ref.double()
    norm = ref.norm()
    return ((x - ref).norm() / (norm if norm > 0 else 1)).item()


def check(config, outputs, hidden, weight, bias, target, grad):
    ref = torch_grads(config, hidden, weight, bias, target, grad, torch.float64)
    same = torch_grads(config, hidden, weight, bias, target, grad, DTYPES[config["dtype"]])
    names = ["loss", "d_hidden", "d_weight"] + (["d_bias"] if bias is not None else [])
    assert len(outputs) == len(names)
    for name, out, r, s in zip(names, outputs, ref, same):
        assert out.shape == r.shape, (name, out.shape, r.shape)
        assert torch.isfinite(out).all(), name
        err, torch_err = rel(out, r), rel(s, r)
        assert err <= max(2 * torch_err, FLOOR[config["dtype"]]), (name, err, torch_err)


CHUNKED = [c for c in kernel_configs.linear_configs()
           if c["chunk_rows"] == kernel_configs.LINEAR_CHUNK_ROWS and not c["destinations"]
           and c["rank"] == 2]
ATTRIBUTES = [c for c in kernel_configs.linear_configs() if c["rank"] == 3 and c["class_weight"]]
DESTINATIONS = [c for c in kernel_configs.linear_configs() if c["destinations"]]


@pytest.mark.parametrize("config", CHUNKED, ids=lambda c: "{dtype}-{reduction}-{b}-{target}".format(
    b="bias" if c["bias"] else "nobias", **c))
@pytest.mark.parametrize("n,h,v", SHAPES)
def test_against_float64_and_torch(config, n, h, v):
    hidden, weight, bias, target, grad = inputs(config, n, h, v)
    outputs = run(config, grad, hidden, weight, bias, target)
    torch.cuda.synchronize()
    check(config, outputs, hidden, weight, bias, target, grad)
    # The results are fresh memory, the inputs untouched.
    assert outputs[1].data_ptr() != hidden.data_ptr()


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_automatic_chunks(dtype, with_bias):
    """The pipeline's own chunk size (one chunk here) through the package's call."""
    config = linear.linear_config(dtype=dtype, reduction="mean", bias=with_bias)
    function(config)
    hidden, weight, bias, target, grad = inputs(config, 777, 128, 4096, seed=3)
    outputs = linear.linear_cross_entropy_and_grad(hidden, weight, target, bias,
                                                   grad_output=grad, reduction="mean")
    torch.cuda.synchronize()
    check(config, outputs, hidden, weight, bias, target, grad)


def test_all_rows_ignored():
    """A mean over no row: NaN loss (0/0, as PyTorch), gradients exactly 0."""
    config = next(c for c in CHUNKED if c["dtype"] == "bf16" and c["reduction"] == "mean"
                  and c["bias"])
    hidden, weight, bias, target, grad = inputs(config, 300, 64, 1000)
    target.fill_(config["ignore_index"])
    loss, dh, dw, db = run(config, grad, hidden, weight, bias, target)
    torch.cuda.synchronize()
    assert torch.isnan(loss)
    for g in (dh, dw, db):
        assert torch.count_nonzero(g) == 0


def test_no_rows():
    """N = 0: the loss of a sum is 0 and the weight's and bias's gradients
    are zeros (the one chunk's products have K = 0)."""
    config = next(c for c in CHUNKED if c["dtype"] == "f32" and c["reduction"] == "sum"
                  and c["bias"])
    hidden, weight, bias, target, grad = inputs(config, 0, 64, 1000)
    loss, dh, dw, db = run(config, grad, hidden, weight, bias, target)
    torch.cuda.synchronize()
    assert loss.item() == 0.0 and dh.shape == (0, 64)
    assert dw.shape == (1000, 64) and db.shape == (1000,)
    assert torch.count_nonzero(dw) == 0 and torch.count_nonzero(db) == 0


def test_no_host_synchronization():
    """After a first call (which creates the cuBLASLt handle and workspace),
    a call only enqueues work on PyTorch's stream: it returns while a long
    kernel queued before it still runs, and the results are right after."""
    config = next(c for c in CHUNKED if c["dtype"] == "bf16" and c["reduction"] == "mean"
                  and not c["bias"])
    hidden, weight, _, target, grad = inputs(config, 1000, 256, 32000)
    run(config, grad, hidden, weight, None, target)
    torch.cuda.synchronize()
    done = torch.cuda.Event()
    torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time
    outputs = run(config, grad, hidden, weight, None, target)
    done.record()
    assert not done.query(), "the call waited for the stream"
    torch.cuda.synchronize()
    check(config, outputs, hidden, weight, None, target, grad)


def test_runtime_has_cublaslt():
    """The runtime the compiled modules use was built with cuBLASLt and
    opens it (else every GEMM reports why)."""
    config = CHUNKED[0]
    runtime = function(config).library.runtime
    assert runtime.xentHasCublasLt() == 1, runtime.xentGetErrorLog()


def _outputs(config, n, h, v, fill=float("nan")):
    """Result buffers, poisoned: f32 loss, gradients in the hidden's dtype."""
    dtype = DTYPES[config["dtype"]]
    loss = torch.full((n,) if config["reduction"] == "none" else (), fill, device="cuda")
    out = [loss, torch.full((n, h), fill, device="cuda", dtype=dtype),
           torch.full((v, h), fill, device="cuda", dtype=dtype)]
    if config["bias"]:
        out.append(torch.full((v,), fill, device="cuda", dtype=dtype))
    return out


@pytest.mark.parametrize("config", DESTINATIONS, ids=lambda c: f"{c['dtype']}-{c['reduction']}")
def test_results_into_destinations(config):
    """Every result lands in the caller's buffer (all of it: the buffers
    start as NaN), with the values of the allocating form."""
    n, h, v = 1000, 256, 32000
    hidden, weight, bias, target, grad = inputs(config, n, h, v)
    out = _outputs(config, n, h, v)
    returned = linear.linear_cross_entropy_and_grad(
        hidden, weight, target, bias, grad_output=grad, reduction=config["reduction"],
        chunk_rows=config["chunk_rows"], out=out)
    torch.cuda.synchronize()
    assert all(r is o for r, o in zip(returned, out))
    check(config, out, hidden, weight, bias, target, grad)


@pytest.mark.parametrize("config", DESTINATIONS, ids=lambda c: f"{c['dtype']}-{c['reduction']}")
def test_cuda_graph(config):
    """Forward + backward captured into a CUDA graph (after a first call on
    the capturing stream: the cuBLASLt handle, workspace and algorithms) and
    replayed on new inputs: the same results as a direct call."""
    n, h, v = 1000, 256, 32000
    hidden, weight, bias, target, grad = inputs(config, n, h, v)
    out = _outputs(config, n, h, v)
    call = lambda: linear.linear_cross_entropy_and_grad(  # noqa: E731
        hidden, weight, target, bias, grad_output=grad, reduction=config["reduction"],
        chunk_rows=config["chunk_rows"], out=out)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        call()
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        call()
    new = inputs(config, n, h, v, seed=11)
    for dst, src in zip((hidden, weight, bias, target, grad), new):
        if dst is not None:
            dst.copy_(src)
    for o in out:
        o.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    replayed = [o.clone() for o in out]
    direct = _outputs(config, n, h, v)
    linear.linear_cross_entropy_and_grad(
        hidden, weight, target, bias, grad_output=grad, reduction=config["reduction"],
        chunk_rows=config["chunk_rows"], out=direct)
    torch.cuda.synchronize()
    # The gradients bit for bit; the reduced loss up to the order of its
    # atomic adds.
    torch.testing.assert_close(replayed[0], direct[0], rtol=1e-6, atol=0)
    for r, d in zip(replayed[1:], direct[1:]):
        assert torch.equal(r, d)
    check(config, replayed, hidden, weight, bias, target, grad)


@pytest.mark.parametrize("config", ATTRIBUTES, ids=lambda c: f"{c['dtype']}-{c['reduction']}")
def test_every_attribute(config):
    """Class weights, label smoothing, z-loss and softcap at once on [B, T, H]
    rows (T = 150: chunks across the batch dim), against the float64
    reference of xent.testing (loss including the z-loss, z-loss alone,
    gradients)."""
    import numpy as np
    from xent.testing import reference

    b, t, h, v = 2, 150, 64, 1000
    gen = torch.Generator(device="cuda").manual_seed(21)
    dtype = DTYPES[config["dtype"]]
    hidden = torch.randn(b, t, h, device="cuda", generator=gen).to(dtype)
    weight = (torch.randn(v, h, device="cuda", generator=gen) * 0.5).to(dtype)
    bias = torch.randn(v, device="cuda", generator=gen).to(dtype)
    target = torch.randint(0, v, (b, t), device="cuda", generator=gen)
    # The configuration's entry takes the attributes as run-time values
    # (kernel_configs' linear configurations), their values the suite's.
    attrs = {k: kernel_configs.LINEAR_ATTRIBUTES[k]
             for k in ("label_smoothing", "z_loss_scale", "softcap", "ignore_index")}
    target[:, ::9] = attrs["ignore_index"]
    class_weight = torch.rand(v, device="cuda", generator=gen) + 0.5
    per_row = config["reduction"] == "none"
    grad = torch.randn(b, t, device="cuda", generator=gen) if per_row \
        else torch.tensor(1.25, device="cuda")
    function(config)
    loss, z, dh, dw, db = linear.linear_cross_entropy_and_grad(
        hidden, weight, target, bias, grad_output=grad, reduction=config["reduction"],
        class_weight=class_weight, chunk_rows=config["chunk_rows"], **attrs)
    torch.cuda.synchronize()
    np_args = [x.double().cpu().numpy() for x in (hidden, weight)]
    kwargs = dict(bias=bias.double().cpu().numpy(), class_weight=class_weight.cpu().numpy(),
                  reduction=config["reduction"], **attrs)
    ref_loss, ref_z = reference.linear_cross_entropy(np_args[0], np_args[1],
                                                     target.cpu().numpy(), **kwargs)
    ref_dh, ref_dw, ref_db = reference.linear_cross_entropy_grad(
        grad.double().cpu().numpy(), np_args[0], np_args[1], target.cpu().numpy(), **kwargs)
    tol = {"bf16": 4e-3, "f32": 5e-5}[config["dtype"]]
    for name, got, ref in (("loss", loss, ref_loss), ("z_loss", z, ref_z), ("d_hidden", dh, ref_dh),
                           ("d_weight", dw, ref_dw), ("d_bias", db, ref_db)):
        ref = torch.from_numpy(np.asarray(ref, dtype=np.float64))
        assert tuple(got.shape) == tuple(ref.shape), name
        err = rel(got.cpu(), ref)
        # The losses are f32 from f32 logits: tight in every dtype.
        assert err <= (1e-4 if name in ("loss", "z_loss") else tol), (name, err)

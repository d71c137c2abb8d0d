"""Bad input gets a clear answer, never a silent wrong one,
for the three loss families of xent.torch (cross_entropy, linear_cross_entropy,
vocab_parallel_cross_entropy) and their modules:

- a label smoothing outside [0, 1], a negative or non-finite z-loss scale and
  a softcap <= 0 or non-finite (NaN in each) raise ValueError naming the
  argument and the value: from the functions (before the CUDA-device check,
  so CPU tensors get the same answer), from the modules' constructors, and
  from the operators (eager and fake);
- validate=True and XENT_VALIDATE=1 raise ValueError naming the first
  out-of-range class index in row-major order (its index and value), for
  1-D, 2-D and 3-D targets, int32 and int64, with one device-to-host read;
  with good targets (ignored elements included) the loss is the one without
  validation; probability targets are not checked; tracing (fake tensors,
  torch.compile with fullgraph=True) and CUDA-graph capture skip it;
- without validation an out-of-range target still gives a NaN loss and no
  exception (no host synchronization in the hot path).

The kernel calls use configurations the bundle of python/tools/make_bundle.py /
python/tools/make_xent_bundle.py holds (xent_torch_configs, kernel_configs.linear_dropin_configs);
the calls that raise stop before any kernel is looked up. Runs on the GPU
machine; never in CI.
"""

import math
import re
import warnings

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from xent import torch as xt

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CLASSES = 50
HIDDEN = 32

# (argument, bad value)
BAD_SCALARS = [("label_smoothing", -0.5), ("label_smoothing", 1.5),
               ("label_smoothing", math.nan), ("z_loss_scale", -1e-4),
               ("z_loss_scale", math.nan), ("z_loss_scale", math.inf), ("softcap", 0.0),
               ("softcap", -30.0), ("softcap", math.nan), ("softcap", math.inf)]
BAD_IDS = [f"{name}={value}" for name, value in BAD_SCALARS]
FAMILIES = ["cross_entropy", "linear_cross_entropy", "vocab_parallel_cross_entropy"]


@pytest.fixture(autouse=True)
def _validate_environment_unset(monkeypatch):
    """Each test starts without XENT_VALIDATE (those about it set it)."""
    monkeypatch.delenv("XENT_VALIDATE", raising=False)


def scalar_message(name, value):
    return rf"^xent: {name} must .*, got {re.escape(str(value))}$"


def family_inputs(family, target_shape, device="cuda", target_dtype=torch.int64, seed=0):
    """(args, target) of a call of `family` whose targets have `target_shape`:
    logits (N, C, d...) for cross_entropy and vocab_parallel_cross_entropy,
    hidden (..., H) and weight (C, H) for linear_cross_entropy. Every third
    element (row-major) of the target is ignore_index -100."""
    gen = torch.Generator(device=device).manual_seed(seed)
    target = torch.randint(0, CLASSES, target_shape, device=device, generator=gen)
    target.view(-1)[::3] = -100
    target = target.to(target_dtype)
    if family == "linear_cross_entropy":
        hidden = torch.randn(*target_shape, HIDDEN, device=device, generator=gen).bfloat16()
        weight = (torch.randn(CLASSES, HIDDEN, device=device, generator=gen)
                  * HIDDEN ** -0.5).bfloat16()
        return (hidden, weight), target
    shape = target_shape[:1] + (CLASSES,) + target_shape[1:]
    dtype = torch.bfloat16 if family == "cross_entropy" else torch.float32
    logits = (torch.randn(shape, device=device, generator=gen) * 3).to(dtype)
    return (logits,), target


def call(family, args, target, **kw):
    if family == "cross_entropy":
        return xt.cross_entropy(args[0], target, **kw)
    if family == "linear_cross_entropy":
        return xt.linear_cross_entropy(args[0], args[1], target, **kw)
    return xt.vocab_parallel_cross_entropy(args[0], target, **kw)


def module(family, **kw):
    return {"cross_entropy": xt.CrossEntropyLoss,
            "linear_cross_entropy": xt.LinearCrossEntropyLoss,
            "vocab_parallel_cross_entropy": xt.VocabParallelCrossEntropyLoss}[family](**kw)


def call_module(family, loss_fn, args, target):
    if family == "linear_cross_entropy":
        return loss_fn(args[0], args[1], target)
    return loss_fn(args[0], target)


# --- the loss's scalars ---------------------------------------------------

@pytest.mark.parametrize("name,value", BAD_SCALARS, ids=BAD_IDS)
@pytest.mark.parametrize("family", FAMILIES)
def test_bad_scalar_raises(family, name, value):
    args, target = family_inputs(family, (8,))
    with pytest.raises(ValueError, match=scalar_message(name, value)):
        call(family, args, target, **{name: value})


@pytest.mark.parametrize("name,value", BAD_SCALARS, ids=BAD_IDS)
@pytest.mark.parametrize("family", FAMILIES)
def test_bad_scalar_raises_at_module_construction(family, name, value):
    with pytest.raises(ValueError, match=scalar_message(name, value)):
        module(family, **{name: value})


@pytest.mark.parametrize("family", FAMILIES)
def test_bad_scalar_raises_before_the_device_check(family):
    """CPU tensors: the scalar's error, not 'runs on CUDA tensors'."""
    args, target = family_inputs(family, (8,), device="cpu")
    with pytest.raises(ValueError, match=scalar_message("label_smoothing", 2.0)):
        call(family, args, target, label_smoothing=2.0)


@pytest.mark.parametrize("family", FAMILIES)
def test_bad_scalar_set_on_a_module_raises_in_forward(family):
    args, target = family_inputs(family, (8,))
    loss_fn = module(family)
    loss_fn.softcap = -1.0
    with pytest.raises(ValueError, match=scalar_message("softcap", -1.0)):
        call_module(family, loss_fn, args, target)


def test_bad_scalar_raises_from_the_operators():
    """torch.ops.xent.* called directly (xent.torch.ops.config_for), on real
    tensors and on fake ones (the fake implementations, as torch.compile
    runs them)."""
    (x,), t = family_inputs("cross_entropy", (8,))
    with pytest.raises(ValueError, match=scalar_message("label_smoothing", -0.5)):
        torch.ops.xent.cross_entropy(x, t, None, "mean", -100, -0.5, 0.0, None)
    with pytest.raises(ValueError, match=scalar_message("z_loss_scale", -1.0)):
        torch.ops.xent.cross_entropy_with_grad(x, t, None, "mean", -100, 0.0, -1.0, None)
    with FakeTensorMode():
        fx = torch.empty(8, CLASSES, device="cuda", dtype=torch.bfloat16)
        ft = torch.zeros(8, device="cuda", dtype=torch.int64)
        with pytest.raises(ValueError, match=scalar_message("softcap", 0.0)):
            torch.ops.xent.cross_entropy(fx, ft, None, "mean", -100, 0.0, 0.0, 0.0)
        with pytest.raises(ValueError, match=scalar_message("label_smoothing", 1.5)):
            torch.ops.xent.cross_entropy_rows(fx, ft, None, "mean", -100, 1.5, 0.0, None,
                                              False, True, False, False, False)


# --- out-of-range class indices -------------------------------------------

# name: (target shape, {index: bad value}, what the message says of the first
# one in row-major order). Ignored elements (-100, every third) come before.
TARGET_CASES = {
    "1d": ((12,), {(5,): CLASSES, (9,): -3}, f"target[5] = {CLASSES}"),
    "2d": ((4, 3), {(1, 2): -1, (3, 0): CLASSES + 1000}, "target[1, 2] = -1"),
    "3d": ((2, 3, 4), {(0, 2, 1): 70000, (1, 0, 0): -5}, "target[0, 2, 1] = 70000"),
}
# linear_cross_entropy takes [N, H] and [B, T, H] hidden states: 1-D and 2-D targets.
TARGET_PARAMS = [(family, case) for family in FAMILIES for case in TARGET_CASES
                 if not (family == "linear_cross_entropy" and case == "3d")]
TARGET_DTYPES = {"i32": torch.int32, "i64": torch.int64}


def bad_inputs(family, case, target_dtype):
    shape, bad, first = TARGET_CASES[case]
    args, target = family_inputs(family, shape, target_dtype=target_dtype)
    for index, value in bad.items():
        target[index] = value
    message = (rf"^{re.escape(f'xent: {first} is out of range for {CLASSES} classes')} "
               rf"\(ignore_index -100\)$")
    return args, target, message


@pytest.mark.parametrize("tdtype", TARGET_DTYPES)
@pytest.mark.parametrize("family,case", TARGET_PARAMS)
def test_validate_names_the_first_bad_element(family, case, tdtype):
    args, target, message = bad_inputs(family, case, TARGET_DTYPES[tdtype])
    with pytest.raises(ValueError, match=message):
        call(family, args, target, validate=True)


@pytest.mark.parametrize("tdtype", TARGET_DTYPES)
@pytest.mark.parametrize("family,case", TARGET_PARAMS)
def test_xent_validate_environment(monkeypatch, family, case, tdtype):
    args, target, message = bad_inputs(family, case, TARGET_DTYPES[tdtype])
    monkeypatch.setenv("XENT_VALIDATE", "1")
    with pytest.raises(ValueError, match=message):
        call(family, args, target)


@pytest.mark.parametrize("family", FAMILIES)
def test_validate_module(family):
    args, target, message = bad_inputs(family, "2d", torch.int64)
    with pytest.raises(ValueError, match=message):
        call_module(family, module(family, validate=True), args, target)


def test_validate_unbatched_logits():
    """Rank-1 logits, a 0-d target: no index in the message."""
    x = torch.randn(CLASSES, device="cuda", dtype=torch.bfloat16)
    t = torch.tensor(CLASSES + 3, device="cuda")
    with pytest.raises(ValueError, match=re.escape(
            f"xent: target = {CLASSES + 3} is out of range for {CLASSES} classes "
            f"(ignore_index -100)")):
        xt.cross_entropy(x, t, validate=True)


@pytest.mark.parametrize("family", FAMILIES)
def test_validate_with_another_ignore_index(family):
    """-100 is out of range when ignore_index is 3; 3 is then fine."""
    args, target = family_inputs(family, (8,))
    target.fill_(1)
    target[0] = 3
    target[4] = -100
    target[6] = -100
    with pytest.raises(ValueError, match=re.escape(
            f"xent: target[4] = -100 is out of range for {CLASSES} classes (ignore_index 3)")):
        call(family, args, target, ignore_index=3, validate=True)


def test_validate_vocab_parallel_uses_the_global_class_range():
    """A slice holding classes [50, 100) of 150: 120 is a class of another
    rank's slice (fine), 150 is none."""
    x = torch.randn(6, CLASSES, device="cuda")
    t = torch.tensor([0, 120, 149, -100, 150, 3], device="cuda")
    with pytest.raises(ValueError, match=re.escape(
            "xent: target[4] = 150 is out of range for 150 classes (ignore_index -100)")):
        xt.vocab_parallel_cross_entropy(x, t, class_offset=CLASSES, num_classes=3 * CLASSES,
                                        validate=True)


# Calls that run a kernel with good targets (ignored elements included):
# (name, dtype, logits shape, target dtype, ignore_index, attributes). Their
# configurations are in the bundle: xent_torch_configs.specials() (bf16
# rank 2), matrix() (bf16 i32 rank 2 index 0, f32 i32 rank 4 with label
# smoothing and softcap index 10, f32 probabilities rank 2 index 1), native()
# (f32 rank 3 none).
GOOD_CASES = [
    ("bf16-i64-mean", torch.bfloat16, (32, 1000), torch.int64, -100, {}),
    ("bf16-i32-mean", torch.bfloat16, (64, 4096), torch.int32, 0, {}),
    ("f32-rank3-none", torch.float32, (4, 300, 5), torch.int64, -100, {"reduction": "none"}),
    ("f32-i32-rank4-smoothing-softcap", torch.float32, (3, 33, 2, 2), torch.int32, 0,
     {"label_smoothing": 0.1, "softcap": 30.0}),
]


def _loss_and_grad(x, t, **kw):
    xs = x.detach().clone().requires_grad_()
    loss = xt.cross_entropy(xs, t, **kw)
    loss.float().sum().backward()
    return loss.detach(), xs.grad


@pytest.mark.parametrize("name,dtype,shape,tdtype,ignore_index,attrs", GOOD_CASES,
                         ids=[c[0] for c in GOOD_CASES])
def test_validate_good_targets_same_loss(name, dtype, shape, tdtype, ignore_index, attrs):
    gen = torch.Generator(device="cuda").manual_seed(sum(shape))
    x = (torch.randn(shape, device="cuda", generator=gen) * 3).to(dtype)
    tshape = shape[:1] + shape[2:]
    t = torch.randint(0, shape[1], tshape, device="cuda", generator=gen)
    t.view(-1)[::4] = ignore_index
    t.view(-1)[1] = shape[1] - 1  # the largest class
    t = t.to(tdtype)
    loss, grad = _loss_and_grad(x, t, ignore_index=ignore_index, **attrs)
    assert torch.isfinite(loss).all()
    checked, checked_grad = _loss_and_grad(x, t, ignore_index=ignore_index, validate=True,
                                           **attrs)
    torch.testing.assert_close(checked, loss)
    torch.testing.assert_close(checked_grad, grad)


def test_validate_leaves_probability_targets_alone():
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(64, 4096, device="cuda", generator=gen) * 3
    q = torch.softmax(torch.randn(64, 4096, device="cuda", generator=gen), dim=1)
    loss, grad = _loss_and_grad(x, q)
    checked, checked_grad = _loss_and_grad(x, q, validate=True)
    torch.testing.assert_close(checked, loss)
    torch.testing.assert_close(checked_grad, grad)
    p = torch.softmax(torch.randn(16, 64, device="cuda", generator=gen), dim=1)
    logits = torch.randn(16, 64, device="cuda", generator=gen)
    torch.testing.assert_close(xt.vocab_parallel_cross_entropy(logits, p, validate=True),
                               xt.vocab_parallel_cross_entropy(logits, p))


@pytest.mark.parametrize("target_shape", [(300,), (2, 150)], ids=["rank2", "rank3"])
def test_validate_good_targets_same_loss_linear(target_shape):
    """bf16, mean, no bias (kernel_configs.linear_dropin_configs)."""
    gen = torch.Generator(device="cuda").manual_seed(7)
    v, h = 1000, 64
    hidden = torch.randn(*target_shape, h, device="cuda", generator=gen).bfloat16()
    weight = (torch.randn(v, h, device="cuda", generator=gen) * h ** -0.5 * 2).bfloat16()
    target = torch.randint(0, v, target_shape, device="cuda", generator=gen)
    target.view(-1)[::7] = -100

    def run(**kw):
        hs, ws = hidden.clone().requires_grad_(), weight.clone().requires_grad_()
        loss = xt.linear_cross_entropy(hs, ws, target, **kw)
        loss.backward()
        return loss.detach(), hs.grad, ws.grad

    plain, checked = run(), run(validate=True)
    assert torch.isfinite(plain[0])
    for a, b in zip(checked, plain):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("shape,tdtype", [((16, 64), torch.int64), ((4, 64, 5), torch.int32)],
                         ids=["rank2-i64", "rank3-i32"])
def test_validate_good_targets_same_loss_vocab_parallel(shape, tdtype):
    gen = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(shape, device="cuda", generator=gen) * 3
    t = torch.randint(0, shape[1], shape[:1] + shape[2:], device="cuda", generator=gen)
    t.view(-1)[::4] = -100
    t = t.to(tdtype)

    def run(**kw):
        xs = x.clone().requires_grad_()
        loss = xt.vocab_parallel_cross_entropy(xs, t, label_smoothing=0.1, **kw)
        loss.backward()
        return loss.detach(), xs.grad

    plain, checked = run(), run(validate=True)
    assert torch.isfinite(plain[0])
    torch.testing.assert_close(checked[0], plain[0])
    torch.testing.assert_close(checked[1], plain[1])


def _synchronizing_calls(fn):
    """How many synchronizing CUDA operations `fn` makes (PyTorch's sync
    debug mode in "warn")."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    # (not the notice that the debug mode is a prototype, which the first
    # use prints)
    return sum(str(w.message).startswith("called a synchronizing CUDA operation")
               for w in caught)


def test_validate_reads_back_once():
    x = torch.randn(32, 1000, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    t = torch.randint(0, 1000, (32,), device="cuda")
    t[::5] = -100
    xt.cross_entropy(x, t, validate=True).backward()  # loads the kernels first
    x.grad = None
    torch.cuda.synchronize()
    assert _synchronizing_calls(lambda: xt.cross_entropy(x, t, validate=True).backward()) == 1
    x.grad = None
    assert _synchronizing_calls(lambda: xt.cross_entropy(x, t).backward()) == 0


def test_validate_skipped_on_fake_tensors():
    """No value to read: the call traces as without validation."""
    with FakeTensorMode():
        x = torch.empty(8, 1000, device="cuda", dtype=torch.bfloat16)
        t = torch.full((8,), 5000, device="cuda", dtype=torch.int64)
        loss = xt.cross_entropy(x, t, validate=True)
    assert loss.shape == () and loss.dtype == torch.bfloat16


class Head(torch.nn.Module):
    """A projection and the validated loss (test_torch_library.Head's shape)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(64, 1000, device="cuda", dtype=torch.bfloat16)

    def forward(self, h, t):
        return xt.cross_entropy(self.proj(h), t, validate=True)


def test_validate_skipped_under_compile(monkeypatch):
    """torch.compile(fullgraph=True) traces a validated call (and
    XENT_VALIDATE=1) without a graph break; the compiled call does not
    validate: an out-of-range target gives a NaN loss."""
    monkeypatch.setenv("XENT_VALIDATE", "1")
    torch.manual_seed(1)
    model = torch.compile(Head(), fullgraph=True)
    h = torch.randn(48, 64, device="cuda", dtype=torch.bfloat16)
    t = torch.randint(0, 1000, (48,), device="cuda")
    t[::5] = -100
    good = model(h, t)
    assert torch.isfinite(good).item()
    t[3] = 1000
    assert torch.isnan(model(h, t)).item()


def test_validate_skipped_during_cuda_graph_capture():
    x = torch.randn(128, 4096, device="cuda", dtype=torch.bfloat16)
    t = torch.randint(0, 4096, (128,), device="cuda")
    xt.cross_entropy(x, t, validate=True)  # warm-up
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        xt.cross_entropy(x, t, validate=True)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = xt.cross_entropy(x, t, validate=True)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, xt.cross_entropy(x, t))


# --- without validation: NaN, no exception --------------------------------

@pytest.mark.parametrize("bad", [1000, -5], ids=["too-large", "negative"])
def test_default_out_of_range_gives_nan(bad):
    x = torch.randn(32, 1000, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    t = torch.randint(0, 1000, (32,), device="cuda")
    t[::5] = -100
    t[3] = bad
    loss = xt.cross_entropy(x, t)
    assert torch.isnan(loss).item()
    per_element = xt.cross_entropy(x, t, reduction="none")
    assert torch.isnan(per_element[3]).item()
    keep = torch.arange(32, device="cuda") != 3
    assert torch.isfinite(per_element[keep]).all().item()


def test_default_out_of_range_gives_nan_with_validate_off_in_the_environment(monkeypatch):
    monkeypatch.setenv("XENT_VALIDATE", "0")
    x = torch.randn(32, 1000, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    t = torch.randint(0, 1000, (32,), device="cuda")
    t[7] = 1000
    assert torch.isnan(xt.cross_entropy(x, t)).item()


def test_default_out_of_range_gives_nan_linear():
    gen = torch.Generator(device="cuda").manual_seed(9)
    hidden = torch.randn(300, 64, device="cuda", generator=gen).bfloat16().requires_grad_()
    weight = (torch.randn(1000, 64, device="cuda", generator=gen) * 0.25).bfloat16()
    target = torch.randint(0, 1000, (300,), device="cuda", generator=gen)
    target[11] = 1000
    assert torch.isnan(xt.linear_cross_entropy(hidden, weight, target)).item()


def test_default_out_of_range_gives_nan_vocab_parallel():
    x = torch.randn(16, 64, device="cuda")
    t = torch.randint(0, 64, (16,), device="cuda")
    t[2] = 64
    assert torch.isnan(xt.vocab_parallel_cross_entropy(x, t)).item()

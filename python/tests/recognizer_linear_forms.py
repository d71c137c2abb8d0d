"""Frontend forms of a projection feeding a cross entropy, forward and
backward, as MLIR text for test_cpu_recognize_linear.py.

Each form is one function with ``llvm.emit_c_interface``: the projection
``hidden · weightᵀ (+ bias)`` written as a frontend writes it (linalg batched
products with a broadcast weight, reshapes around a batch of one, TOSA's
rank-3 matmul), then the loss (an ``xent.cross_entropy`` family op, or a
recognizer corpus chain spliced onto the projection), then the backward
products (``d_hidden = dlogits · W``, ``d_weight = dlogitsᵀ · hidden``,
``d_bias = Σ_rows dlogits``) for the gradient forms. ``xent-recognize``
must raise each to the linear op named by ``Form.op``.
"""

import os
import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from xent.testing.codegen import loss_attributes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INPUTS_DIR = os.path.join(ROOT, "test", "Dialect", "Xent", "Recognize", "Inputs")

# TOSA to linalg/tensor/arith before the CPU pipeline (as test_recognize).
TOSA_LOWERING = "tosa-to-linalg-pipeline,tosa-to-tensor,tosa-to-arith"

H, V = 16, 37


@dataclass
class Form:
    name: str
    op: str                         # the linear op the recognizer must create
    rows: Tuple[int, ...]           # hidden's leading shape
    classes: int = V
    reduction: str = "mean"
    bias: bool = False
    ignore_index: Optional[int] = 3
    label_smoothing: float = 0.0
    z_loss_scale: float = 0.0
    tosa: bool = False
    seed_grad: bool = False         # the gradient is seeded with 1.0 (no grad_output)
    args: List[Tuple[str, str]] = field(default_factory=list)     # (role, type)
    results: List[Tuple[str, str]] = field(default_factory=list)  # (role, type)
    text: str = ""

    @property
    def kwargs(self) -> dict:
        return dict(reduction=self.reduction, label_smoothing=self.label_smoothing,
                    z_loss_scale=self.z_loss_scale,
                    ignore_index=-100 if self.ignore_index is None else self.ignore_index)


def tensor(shape, dtype="f32") -> str:
    return "tensor<" + "x".join([str(d) for d in shape] + [dtype]) + ">"


def _attrs(f: Form, rank: int) -> str:
    attrs = loss_attributes(f.ignore_index, f.label_smoothing, f.z_loss_scale)
    if rank == 3:
        attrs.append("axis = 2 : i64")
    return " {" + ", ".join(attrs) + "}" if attrs else ""


def _zero_fill(name: str, shape) -> List[str]:
    return [f"%{name}_e = tensor.empty() : {tensor(shape)}",
            f"%{name} = linalg.fill ins(%zero : f32) outs(%{name}_e : {tensor(shape)}) -> {tensor(shape)}"]


def _transpose(name: str, src: str, shape) -> List[str]:
    out = [shape[1], shape[0]]
    return [f"%{name}_e = tensor.empty() : {tensor(out)}",
            f"%{name} = linalg.transpose ins({src} : {tensor(shape)}) outs(%{name}_e : {tensor(out)}) permutation = [1, 0]"]


def _tosa_reshape(name: str, src: str, src_shape, shape) -> List[str]:
    r = len(shape)
    return [f"%{name}_s = tosa.const_shape {{values = dense<[{', '.join(map(str, shape))}]> : tensor<{r}xindex>}} : () -> !tosa.shape<{r}>",
            f"%{name} = tosa.reshape {src}, %{name}_s : ({tensor(src_shape)}, !tosa.shape<{r}>) -> {tensor(shape)}"]


def _tosa_matmul(name: str, a: str, a_shape, b: str, b_shape) -> List[str]:
    out = [a_shape[0], a_shape[1], b_shape[2]]
    return [f"%{name} = tosa.matmul {a}, {b}, %zp, %zp : ({tensor(a_shape)}, {tensor(b_shape)}, "
            f"tensor<1xf32>, tensor<1xf32>) -> {tensor(out)}"]


MAPS_T = ("indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, "
          "affine_map<(m, n, k) -> (m, n)>]")


# ----------------------------------------------------------------- projections
# Each returns the lines computing %logits (shaped rows + [V]) from %h, %w, %b.

def proj_bmm_broadcast(f: Form) -> List[str]:
    """torch-mlir's aten.matmul of [B, T, H]: the transposed weight broadcast
    to [B, H, V], linalg.batch_matmul."""
    B, T = f.rows
    lines = _transpose("wt", "%w", [f.classes, H])
    lines += [f"%wb_e = tensor.empty() : {tensor([B, H, f.classes])}",
              f"%wb = linalg.broadcast ins(%wt : {tensor([H, f.classes])}) outs(%wb_e : {tensor([B, H, f.classes])}) dimensions = [0]"]
    lines += _zero_fill("acc", [B, T, f.classes])
    lines.append(f"%logits = linalg.batch_matmul ins(%h, %wb : {tensor([B, T, H])}, {tensor([B, H, f.classes])}) "
                 f"outs(%acc : {tensor([B, T, f.classes])}) -> {tensor([B, T, f.classes])}")
    return lines


def proj_bmm_map_bias(f: Form) -> List[str]:
    """The transposed weight broadcast by the batch_matmul's map; the bias
    added by torch-mlir's broadcasting generic."""
    B, T = f.rows
    out = tensor([B, T, f.classes])
    lines = _transpose("wt", "%w", [f.classes, H]) + _zero_fill("acc", [B, T, f.classes])
    lines += [f"%p = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, "
              f"affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>] "
              f"ins(%h, %wt : {tensor([B, T, H])}, {tensor([H, f.classes])}) outs(%acc : {out}) -> {out}",
              f"%logits = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, "
              f"affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], "
              f"iterator_types = [\"parallel\", \"parallel\", \"parallel\"]}} ins(%p, %b : {out}, {tensor([f.classes])}) "
              f"outs(%acc_e : {out}) {{",
              "^bb0(%x: f32, %y: f32, %o: f32):",
              "  %s = arith.addf %x, %y : f32",
              "  linalg.yield %s : f32",
              f"}} -> {out}"]
    return lines


def proj_batch_of_one(f: Form) -> List[str]:
    """[N, H] expanded to [1, N, H], a batch_matmul with the [1, H, V]
    broadcast transpose, the bias broadcast into the accumulator, the
    product collapsed to [N, V]."""
    (N,) = f.rows
    C = f.classes
    lines = [f"%h1 = tensor.expand_shape %h [[0, 1], [2]] output_shape [1, {N}, {H}] : {tensor([N, H])} into {tensor([1, N, H])}"]
    lines += _transpose("wt", "%w", [C, H])
    lines += [f"%wb_e = tensor.empty() : {tensor([1, H, C])}",
              f"%wb = linalg.broadcast ins(%wt : {tensor([H, C])}) outs(%wb_e : {tensor([1, H, C])}) dimensions = [0]",
              f"%acc_e = tensor.empty() : {tensor([1, N, C])}",
              f"%acc = linalg.broadcast ins(%b : {tensor([C])}) outs(%acc_e : {tensor([1, N, C])}) dimensions = [0, 1]",
              f"%p = linalg.batch_matmul ins(%h1, %wb : {tensor([1, N, H])}, {tensor([1, H, C])}) outs(%acc : {tensor([1, N, C])}) -> {tensor([1, N, C])}",
              f"%logits = tensor.collapse_shape %p [[0, 1], [2]] : {tensor([1, N, C])} into {tensor([N, C])}"]
    return lines


def proj_tosa(f: Form) -> List[str]:
    """tosa.matmul of the rows as a batch of one ([1, N·.., H]) by the
    transposed weight reshaped to [1, H, V], the bias by tosa.add of a
    [1, 1, V] reshape, the product reshaped to the logits."""
    N = 1
    for d in f.rows:
        N *= d
    C = f.classes
    lines = ['%zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>']
    lines += _tosa_reshape("h1", "%h", list(f.rows) + [H], [1, N, H])
    if len(f.rows) == 1:
        lines += [f"%wt = tosa.transpose %w {{perms = array<i32: 1, 0>}} : ({tensor([C, H])}) -> {tensor([H, C])}"]
        lines += _tosa_reshape("w1", "%wt", [H, C], [1, H, C])
    else:
        lines += _tosa_reshape("wr", "%w", [C, H], [1, C, H])
        lines += [f"%w1 = tosa.transpose %wr {{perms = array<i32: 0, 2, 1>}} : ({tensor([1, C, H])}) -> {tensor([1, H, C])}"]
    lines += _tosa_matmul("p", "%h1", [1, N, H], "%w1", [1, H, C])
    p = "%p"
    if f.bias:
        lines += _tosa_reshape("b1", "%b", [C], [1, 1, C])
        lines.append(f"%pb = tosa.add %p, %b1 : ({tensor([1, N, C])}, {tensor([1, 1, C])}) -> {tensor([1, N, C])}")
        p = "%pb"
    lines += _tosa_reshape("logits", p, [1, N, C], list(f.rows) + [C])
    return lines


def proj_linalg_rows(f: Form) -> List[str]:
    """linalg.matmul of the (collapsed) rows by the transposed weight, the
    bias broadcast into the accumulator; [B, T, V] expanded back."""
    N = 1
    for d in f.rows:
        N *= d
    C = f.classes
    lines = []
    rows = "%h"
    if len(f.rows) == 2:
        lines.append(f"%hrows = tensor.collapse_shape %h [[0, 1], [2]] : {tensor(list(f.rows) + [H])} into {tensor([N, H])}")
        rows = "%hrows"
    lines += _transpose("wt", "%w", [C, H])
    if f.bias:
        lines += [f"%acc_e = tensor.empty() : {tensor([N, C])}",
                  f"%acc = linalg.broadcast ins(%b : {tensor([C])}) outs(%acc_e : {tensor([N, C])}) dimensions = [0]"]
    else:
        lines += _zero_fill("acc", [N, C])
    out = "%logits" if len(f.rows) == 1 else "%p"
    lines.append(f"{out} = linalg.matmul ins({rows}, %wt : {tensor([N, H])}, {tensor([H, C])}) "
                 f"outs(%acc : {tensor([N, C])}) -> {tensor([N, C])}")
    if len(f.rows) == 2:
        B, T = f.rows
        lines.append(f"%logits = tensor.expand_shape %p [[0, 1], [2]] output_shape [{B}, {T}, {C}] : "
                     f"{tensor([N, C])} into {tensor([B, T, C])}")
    return lines


# ------------------------------------------------------------------- backward
# Each reads %d (shaped like the logits) and computes %dh, %dw (and %db).

def bwd_autograd(f: Form) -> List[str]:
    """Autograd's mm backward on the rows: d_hidden by the transpose of the
    transposed weight, d_weight the transpose of hiddenᵀ · dlogits, d_bias a
    keepdim sum reshaped to [V]."""
    N = 1
    for d in f.rows:
        N *= d
    C = f.classes
    lines = []
    d, rows = "%d", "%h"
    if len(f.rows) == 2:
        lines += [f"%d2 = tensor.collapse_shape %d [[0, 1], [2]] : {tensor(list(f.rows) + [C])} into {tensor([N, C])}",
                  f"%bh = tensor.collapse_shape %h [[0, 1], [2]] : {tensor(list(f.rows) + [H])} into {tensor([N, H])}"]
        d, rows = "%d2", "%bh"
    lines += _transpose("bwt", "%w", [C, H]) + _transpose("bwtt", "%bwt", [H, C])
    lines += _zero_fill("dacc", [N, H])
    dh = "%dh" if len(f.rows) == 1 else "%dh2"
    lines.append(f"{dh} = linalg.matmul ins({d}, %bwtt : {tensor([N, C])}, {tensor([C, H])}) "
                 f"outs(%dacc : {tensor([N, H])}) -> {tensor([N, H])}")
    if len(f.rows) == 2:
        B, T = f.rows
        lines.append(f"%dh = tensor.expand_shape %dh2 [[0, 1], [2]] output_shape [{B}, {T}, {H}] : "
                     f"{tensor([N, H])} into {tensor([B, T, H])}")
    lines += _transpose("ht", rows, [N, H]) + _zero_fill("wacc", [H, C])
    lines.append(f"%dwt = linalg.matmul ins(%ht, {d} : {tensor([H, N])}, {tensor([N, C])}) "
                 f"outs(%wacc : {tensor([H, C])}) -> {tensor([H, C])}")
    lines += _transpose("dw", "%dwt", [H, C])
    if f.bias:
        lines += _zero_fill("bacc", [1, C])
        lines += [f"%db1 = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, "
                  f"affine_map<(d0, d1) -> (0, d1)>], iterator_types = [\"reduction\", \"parallel\"]}} "
                  f"ins({d} : {tensor([N, C])}) outs(%bacc : {tensor([1, C])}) {{",
                  "^bb0(%x: f32, %acc_in: f32):",
                  "  %s = arith.addf %x, %acc_in : f32",
                  "  linalg.yield %s : f32",
                  f"}} -> {tensor([1, C])}",
                  f"%db = tensor.collapse_shape %db1 [[0, 1]] : {tensor([1, C])} into {tensor([C])}"]
    return lines


def bwd_batched(f: Form) -> List[str]:
    """d_hidden by batch_matmul with the broadcast weight, d_weight on the
    collapsed rows through a transposed dlogits, d_bias by linalg.reduce
    over both leading dimensions."""
    B, T = f.rows
    N, C = B * T, f.classes
    lines = [f"%wb2_e = tensor.empty() : {tensor([B, C, H])}",
             f"%wb2 = linalg.broadcast ins(%w : {tensor([C, H])}) outs(%wb2_e : {tensor([B, C, H])}) dimensions = [0]"]
    lines += _zero_fill("dacc", [B, T, H])
    lines.append(f"%dh = linalg.batch_matmul ins(%d, %wb2 : {tensor([B, T, C])}, {tensor([B, C, H])}) "
                 f"outs(%dacc : {tensor([B, T, H])}) -> {tensor([B, T, H])}")
    lines += [f"%d2 = tensor.collapse_shape %d [[0, 1], [2]] : {tensor([B, T, C])} into {tensor([N, C])}",
              f"%bh = tensor.collapse_shape %h [[0, 1], [2]] : {tensor([B, T, H])} into {tensor([N, H])}"]
    lines += _transpose("dt", "%d2", [N, C]) + _zero_fill("wacc", [C, H])
    lines.append(f"%dw = linalg.matmul ins(%dt, %bh : {tensor([C, N])}, {tensor([N, H])}) "
                 f"outs(%wacc : {tensor([C, H])}) -> {tensor([C, H])}")
    if f.bias:
        lines += _zero_fill("bacc", [C])
        lines += [f"%db = linalg.reduce ins(%d : {tensor([B, T, C])}) outs(%bacc : {tensor([C])}) dimensions = [0, 1]",
                  "  (%x: f32, %acc_in: f32) {",
                  "    %s = arith.addf %x, %acc_in : f32",
                  "    linalg.yield %s : f32",
                  "  }"]
    return lines


def bwd_tosa(f: Form) -> List[str]:
    """TOSA: the products on batches of one, d_weight from the transposed
    [1, V, N] dlogits, d_bias by reduce_sum along the rows."""
    (N,) = f.rows
    C = f.classes
    lines = _tosa_reshape("d1", "%d", [N, C], [1, N, C]) + _tosa_reshape("wr2", "%w", [C, H], [1, C, H])
    lines += _tosa_matmul("dh1", "%d1", [1, N, C], "%wr2", [1, C, H])
    lines += _tosa_reshape("dh", "%dh1", [1, N, H], [N, H])
    lines.append(f"%dt = tosa.transpose %d1 {{perms = array<i32: 0, 2, 1>}} : ({tensor([1, N, C])}) -> {tensor([1, C, N])}")
    lines += _tosa_matmul("dw1", "%dt", [1, C, N], "%h1", [1, N, H])
    lines += _tosa_reshape("dw", "%dw1", [1, C, H], [C, H])
    if f.bias:
        lines.append(f"%db1 = tosa.reduce_sum %d {{axis = 0 : i32}} : ({tensor([N, C])}) -> {tensor([1, C])}")
        lines += _tosa_reshape("db", "%db1", [1, C], [C])
    return lines


# ---------------------------------------------------------------- functions

def _signature(f: Form, grad: bool) -> None:
    red = tensor(f.rows) if f.reduction == "none" else "tensor<f32>"
    f.args = []
    if grad and not f.seed_grad:
        f.args.append(("grad_output", red))
    f.args += [("hidden", tensor(list(f.rows) + [H])), ("weight", tensor([f.classes, H]))]
    if f.bias:
        f.args.append(("bias", tensor([f.classes])))
    f.args.append(("target", tensor(f.rows, "i64")))


def _function(f: Form, body: List[str], returns: List[Tuple[str, str, str]]) -> str:
    """`returns`: (role, SSA name, type)."""
    f.results = [(role, ty) for role, _, ty in returns]
    names = {"grad_output": "%g", "hidden": "%h", "weight": "%w", "bias": "%b", "target": "%t"}
    args = ", ".join(f"{names[r]}: {ty}" for r, ty in f.args)
    types = ", ".join(ty for _, _, ty in returns)
    lines = [f"func.func @{f.name}({args}) -> ({types}) attributes {{llvm.emit_c_interface}} {{",
             "  %zero = arith.constant 0.0 : f32"]
    lines += ["  " + line for line in body]
    lines.append(f"  return {', '.join(n for _, n, _ in returns)} : {types}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def loss_form(f: Form, project) -> Form:
    """The projection, then xent.cross_entropy on it."""
    _signature(f, grad=False)
    rank = len(f.rows) + 1
    red = tensor(f.rows) if f.reduction == "none" else "tensor<f32>"
    logits = tensor(list(f.rows) + [f.classes])
    body = project(f)
    results = [("loss", "%loss", red)]
    names = "%loss"
    types = red
    if f.z_loss_scale:
        results.append(("z_loss", "%z", red))
        names, types = "%loss, %z", f"{red}, {red}"
    body.append(f"{names} = xent.cross_entropy {f.reduction} %logits, %t{_attrs(f, rank)} : "
                f"({logits}, {tensor(f.rows, 'i64')}) -> ({types})")
    f.text = _function(f, body, results)
    return f


def grad_form(f: Form, project, backward, style: str) -> Form:
    """The projection, the loss ops (`style`: "grad" the gradient alone,
    "pair" the loss and the gradient, "joint" cross_entropy_and_grad), then
    the backward products."""
    _signature(f, grad=True)
    rank = len(f.rows) + 1
    red = tensor(f.rows) if f.reduction == "none" else "tensor<f32>"
    logits = tensor(list(f.rows) + [f.classes])
    target = tensor(f.rows, "i64")
    attrs = _attrs(f, rank)
    body = project(f)
    g = "%g"
    if f.seed_grad:
        body.append("%g = arith.constant dense<1.0> : tensor<f32>")
        red = "tensor<f32>"
    results = []
    loss_types = [red] + ([red] if f.z_loss_scale else [])
    loss_names = ["%loss"] + (["%z"] if f.z_loss_scale else [])
    if style == "pair":
        body.append(f"{', '.join(loss_names)} = xent.cross_entropy {f.reduction} %logits, %t{attrs} : "
                    f"({logits}, {target}) -> ({', '.join(loss_types)})")
    if style in ("pair", "grad"):
        body.append(f"%d = xent.cross_entropy_grad {f.reduction} {g}, %logits, %t{attrs} : "
                    f"({red}, {logits}, {target}) -> {logits}")
    else:
        body.append(f"{', '.join(loss_names + ['%d'])} = xent.cross_entropy_and_grad {f.reduction} {g}, "
                    f"%logits, %t{attrs} : ({red}, {logits}, {target}) -> "
                    f"({', '.join(loss_types + [logits])})")
    if style != "grad":
        results += [("loss", "%loss", red)] + ([("z_loss", "%z", red)] if f.z_loss_scale else [])
    body += backward(f)
    results += [("d_hidden", "%dh", tensor(list(f.rows) + [H])), ("d_weight", "%dw", tensor([f.classes, H]))]
    if f.bias:
        results.append(("d_bias", "%db", tensor([f.classes])))
    f.text = _function(f, body, results)
    return f


# ---------------------------------------------------- corpus chains, spliced

def _corpus_function(file: str, name: str) -> Tuple[List[str], List[str]]:
    """The alias lines of a corpus file and the body lines of one function."""
    with open(os.path.join(INPUTS_DIR, file)) as fh:
        lines = fh.read().split("\n")
    aliases = [l for l in lines if l.startswith("#")]
    start = next(i for i, l in enumerate(lines) if l.strip().startswith(f"func.func @{name}("))
    end = next(i for i in range(start, len(lines)) if lines[i] == "  }")
    return aliases, lines[start + 1:end]


def chain_form(f: Form, file: str, function: str, logits_arg: str, target_arg: str,
               project, backward=None) -> Form:
    """A corpus chain (its logits argument computed by `project` instead) and,
    for a joint chain that returns (loss, dlogits), the backward products."""
    aliases, body = _corpus_function(file, function)
    ret = body[-1].strip()
    assert ret.startswith("return "), ret
    values = [v.strip() for v in ret[len("return "):].split(":")[0].split(",")]
    body = body[:-1]
    grad = backward is not None
    _signature(f, grad=False)
    rename = {logits_arg: "%logits", target_arg: "%t"}
    body = [re.sub(r"%arg\d+\b", lambda m: rename.get(m.group(0), m.group(0)), l) for l in body]
    lines = project(f) + [l.strip() for l in body]
    red = tensor(f.rows) if f.reduction == "none" else "tensor<f32>"
    results = [("loss", values[0], red)]
    if grad:
        # The backward reads the chain's dlogits.
        lines += [re.sub(r"%d\b", values[1], l) for l in backward(f)]
        results += [("d_hidden", "%dh", tensor(list(f.rows) + [H])),
                    ("d_weight", "%dw", tensor([f.classes, H]))]
        if f.bias:
            results.append(("d_bias", "%db", tensor([f.classes])))
    f.text = "\n".join(aliases) + "\n" + _function(f, lines, results)
    return f


def forms() -> List[Form]:
    return [
        loss_form(Form("fwd_bmm_broadcast", "linear_cross_entropy", (2, 5)), proj_bmm_broadcast),
        loss_form(Form("fwd_bmm_map_bias", "linear_cross_entropy", (2, 5), reduction="sum",
                       bias=True, label_smoothing=0.1), proj_bmm_map_bias),
        loss_form(Form("fwd_batch_of_one", "linear_cross_entropy", (11,), reduction="none",
                       bias=True), proj_batch_of_one),
        loss_form(Form("fwd_tosa", "linear_cross_entropy", (11,), tosa=True), proj_tosa),
        loss_form(Form("fwd_tosa_bias_rank3", "linear_cross_entropy", (2, 5), reduction="sum",
                       bias=True, z_loss_scale=1e-2, tosa=True), proj_tosa),
        grad_form(Form("grad_autograd", "linear_cross_entropy_grad", (11,)),
                  proj_linalg_rows, bwd_autograd, "grad"),
        grad_form(Form("pair_rank3_bias", "linear_cross_entropy_and_grad", (2, 5), bias=True,
                       label_smoothing=0.1, seed_grad=True), proj_linalg_rows, bwd_autograd, "pair"),
        grad_form(Form("joint_batched_bias", "linear_cross_entropy_and_grad", (2, 5),
                       reduction="sum", bias=True, z_loss_scale=1e-2),
                  proj_bmm_broadcast_bias, bwd_batched, "joint"),
        grad_form(Form("grad_tosa_bias", "linear_cross_entropy_grad", (11,), reduction="none",
                       bias=True, tosa=True), proj_tosa, bwd_tosa, "grad"),
        chain_form(Form("chain_tosa_projection", "linear_cross_entropy", (8,), classes=10,
                        ignore_index=-100, tosa=True),
                   "torch_linalg.mlir", "torch_linalg_mean_static_f32", "%arg0", "%arg1", proj_tosa),
        chain_form(Form("chain_joint_bias", "linear_cross_entropy_and_grad", (8,), classes=10,
                        ignore_index=-100, bias=True, seed_grad=True),
                   "torch_backward.mlir", "torch_joint_mean_seed", "%arg0", "%arg1",
                   proj_linalg_rows, bwd_autograd),
    ]


def proj_bmm_broadcast_bias(f: Form) -> List[str]:
    """proj_bmm_broadcast with the bias broadcast along B and T into the
    accumulator."""
    lines = proj_bmm_broadcast(f)
    B, T = f.rows
    out = tensor([B, T, f.classes])
    fill = next(i for i, l in enumerate(lines) if l.startswith("%acc = linalg.fill"))
    lines[fill] = (f"%acc = linalg.broadcast ins(%b : {tensor([f.classes])}) outs(%acc_e : {out}) "
                   f"dimensions = [0, 1]")
    return lines

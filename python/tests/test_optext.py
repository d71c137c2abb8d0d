"""xent.runtime.optext, the printer of the xent ops behind every Python
emitter: its spelling, and that xent-opt reads what it prints back unchanged
in meaning (its round trip prints the same ops)."""

import os
import subprocess

import pytest

from xent.runtime import optext

XENT_OPT = os.environ.get("XENT_OPT")


def test_tensor_type():
    assert optext.tensor_type([], "f32") == "tensor<f32>"
    assert optext.tensor_type(["?", 4], "bf16") == "tensor<?x4xbf16>"


def test_loss_attributes_leave_defaults_out():
    assert optext.loss_attributes() == []
    assert optext.loss_attributes(-100, 0.1, 0.0, None, axis=0, row_outputs=["return_lse"]) == [
        "ignore_index = -100 : i64", "label_smoothing = 0.1 : f32", "axis = 0 : i64",
        "return_lse"]
    assert optext.attr_dict([]) == ""
    assert optext.attr_dict(["a", "b"]) == "{a, b}"


def test_cross_entropy_op_line():
    text = optext.cross_entropy_op(
        "cross_entropy_grad", "mean", results=["%d"], grad_output="%g", logits="%x",
        target="%t", weight="%w", scalars={"softcap": "%sc", "ignore_index": "%ii"},
        attributes=["return_lse"], operand_types=["a", "b", "c", "d", "i64", "f32"],
        result_types="b")
    # Scalars in the assembly format's order, whatever the mapping's.
    assert text == ("%d = xent.cross_entropy_grad mean %g, %x, %t weight %w ignore_index %ii "
                    "softcap %sc {return_lse} : (a, b, c, d, i64, f32) -> b")


def test_cross_entropy_op_slice_operands():
    """A gradient of a class slice: weight, row_stats, class_offset and a
    run-time num_classes in the assembly format's order, before the
    scalars."""
    text = optext.cross_entropy_op(
        "cross_entropy_grad", "sum", results=["%d"], grad_output="%g", logits="%x",
        target="%t", weight="%w", row_stats="%s", class_offset="%o", num_classes="%n",
        scalars={"ignore_index": "%ii"},
        operand_types=["tensor<f32>", "tensor<?x?xf32>", "tensor<?xi64>", "tensor<?xf32>",
                       "tensor<?x4xf32>", "i64", "i64", "i64"],
        result_types="tensor<?x?xf32>")
    assert text == ("%d = xent.cross_entropy_grad sum %g, %x, %t weight %w row_stats %s "
                    "class_offset %o num_classes %n ignore_index %ii : (tensor<f32>, "
                    "tensor<?x?xf32>, tensor<?xi64>, tensor<?xf32>, tensor<?x4xf32>, i64, i64, "
                    "i64) -> tensor<?x?xf32>")


def test_linear_op_block():
    text = optext.linear_cross_entropy_op(
        "linear_cross_entropy", "sum", results=["%l"], hidden="%h", weight="%w", bias="%b",
        target="%t", class_weight="%cw", operand_types=["h", "w", "b", "t", "cw"],
        result_types=["l"], layout="block")
    assert text == ("%l = xent.linear_cross_entropy sum %h, %w bias %b, %t class_weight %cw\n"
                    "      \n      : (h, w, b, t, cw) -> (l)")


def test_unknown_scalar_or_layout():
    with pytest.raises(ValueError):
        optext.cross_entropy_op("cross_entropy", "mean", results=["%l"], logits="%x",
                                target="%t", scalars={"temperature": "%s"}, operand_types=[],
                                result_types=[])
    with pytest.raises(ValueError):
        optext.cross_entropy_op("cross_entropy", "mean", results=["%l"], logits="%x",
                                target="%t", operand_types=[], result_types=[], layout="wide")


@pytest.mark.skipif(not XENT_OPT or not os.access(XENT_OPT, os.X_OK), reason="XENT_OPT not set")
def test_xent_opt_reads_both_families():
    x, t, g, f = "tensor<?x?xf32>", "tensor<?xi64>", "tensor<f32>", "f32"
    h, w = "tensor<?x?xbf16>", "tensor<?x?xbf16>"
    ce = optext.cross_entropy_op(
        "cross_entropy_and_grad", "mean", results=["%l", "%d"], grad_output="%g", logits="%x",
        target="%t", scalars={"label_smoothing": "%ls"},
        attributes=optext.loss_attributes(3, softcap=30.0), operand_types=[g, x, t, f],
        result_types=[g, x])
    lin = optext.linear_cross_entropy_op(
        "linear_cross_entropy", "none", results=["%ll"], hidden="%h", weight="%w", target="%t",
        attributes=optext.loss_attributes(-100), operand_types=[h, w, t],
        result_types=["tensor<?xf32>"], layout="block")
    text = (f"func.func @f(%g: {g}, %x: {x}, %t: {t}, %ls: {f}, %h: {h}, %w: {w}) {{\n"
            f"  {ce}\n  {lin}\n  return\n}}\n")
    out = subprocess.run([XENT_OPT], input=text, capture_output=True, text=True, check=True)
    assert "xent.cross_entropy_and_grad mean" in out.stdout
    assert "label_smoothing %" in out.stdout and "softcap = 3.000000e+01" in out.stdout
    assert "xent.linear_cross_entropy none" in out.stdout

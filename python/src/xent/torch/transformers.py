"""Hugging Face Transformers causal language models with xent's linear
cross-entropy: in training the loss comes from the hidden states and the
output embedding's weight through :func:`xent.torch.linear_cross_entropy`,
so the ``[B, T, V]`` logits are never formed.

    import xent.torch.transformers as xtt
    model = transformers.AutoModelForCausalLM.from_config(config)
    xtt.apply(model)                  # this instance; or apply_to_llama() etc.
    loss = model(input_ids=ids, labels=labels).loss

What :func:`apply` changes is the model's ``forward``: when ``labels`` are
given and a gradient is wanted (``torch.is_grad_enabled()`` and the model in
training mode), it runs the decoder (``model.model``) with the call's other
arguments and computes ``ForCausalLMLoss``'s loss itself — labels shifted
left by one and padded with -100 (or the caller's ``shift_labels``), a
``sum`` divided by ``num_items_in_batch`` when given, else the mean over the
kept tokens, in float32 — with the final-logit softcap of Gemma 2 / 3
(``config.final_logit_softcapping``). The output is the model's own output
class with ``logits=None``, as Liger-Kernel's patched models return in
training. Every other call (no labels, evaluation, ``no_grad``, generation)
is the original forward. Under autocast the projection runs in the autocast
dtype, as ``lm_head`` would.

The architectures whose forward has this shape — Llama, Mistral, Qwen2,
Qwen3, Phi-3, Gemma 2 and Gemma 3 (text) — have ``apply_to_<name>()``
functions that patch the class instead, so models built afterwards are
patched too, in the style of Liger's ``apply_liger_kernel_to_*``.
Transformers is an optional dependency: this module imports it only when
a class is patched.
"""

from __future__ import annotations

import functools
from typing import Optional

import torch
import torch.nn.functional as F

from .linear import linear_cross_entropy

__all__ = ["apply", "apply_to_llama", "apply_to_mistral", "apply_to_qwen2", "apply_to_qwen3",
           "apply_to_phi3", "apply_to_gemma2", "apply_to_gemma3", "causal_lm_loss"]

IGNORE_INDEX = -100
# Loss-only keyword arguments of a causal LM's forward, which the decoder
# does not take.
_LOSS_KWARGS = ("num_items_in_batch", "shift_labels", "ignore_index")


def _softcap(config) -> Optional[float]:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    cap = getattr(text, "final_logit_softcapping", None)
    return float(cap) if cap else None


def causal_lm_loss(hidden: torch.Tensor, weight: torch.Tensor, labels: Optional[torch.Tensor],
                   bias: Optional[torch.Tensor] = None, *, softcap: Optional[float] = None,
                   num_items_in_batch=None, shift_labels: Optional[torch.Tensor] = None,
                   ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """Transformers' ``ForCausalLMLoss`` of ``lm_head(hidden)`` without the
    logits: the target of position t is ``labels[t + 1]`` (the last position
    ignored) unless `shift_labels` are given; ``sum / num_items_in_batch``
    when that is given, else the mean; float32."""
    if shift_labels is None:
        shift_labels = F.pad(labels, (0, 1), value=ignore_index)[..., 1:]
    if torch.is_autocast_enabled("cuda"):
        dtype = torch.get_autocast_dtype("cuda")
        hidden, weight = hidden.to(dtype), weight.to(dtype)
        bias = bias.to(dtype) if bias is not None else None
    else:
        hidden = hidden.to(weight.dtype)
    reduction = "sum" if num_items_in_batch is not None else "mean"
    loss = linear_cross_entropy(hidden, weight, shift_labels.to(hidden.device), bias,
                                ignore_index=ignore_index, reduction=reduction,
                                softcap=softcap, loss_dtype=torch.float32)
    if num_items_in_batch is not None:
        if torch.is_tensor(num_items_in_batch):
            num_items_in_batch = num_items_in_batch.to(loss.device)
        loss = loss / num_items_in_batch
    return loss


def _patched_forward(original):
    @functools.wraps(original)
    def forward(self, *args, labels=None, **kwargs):
        if (labels is None or len(args) > 1 or "input_ids" in kwargs and args
                or not self.training or not torch.is_grad_enabled()):
            return original(self, *args, labels=labels, **kwargs)
        if args:  # input_ids, the one positional argument callers pass
            kwargs["input_ids"] = args[0]
        loss_kwargs = {k: kwargs.pop(k) for k in _LOSS_KWARGS if k in kwargs}
        kwargs.pop("logits_to_keep", None)
        kwargs.pop("return_dict", None)
        outputs = self.model(**kwargs)
        hidden = outputs[0] if isinstance(outputs, tuple) else outputs.last_hidden_state
        head = self.get_output_embeddings()
        loss = causal_lm_loss(hidden, head.weight, labels, getattr(head, "bias", None),
                              softcap=_softcap(self.config), **loss_kwargs)
        output_type = forward.__xent_output_type__
        return output_type(loss=loss, logits=None,
                           past_key_values=getattr(outputs, "past_key_values", None),
                           hidden_states=getattr(outputs, "hidden_states", None),
                           attentions=getattr(outputs, "attentions", None))
    forward.__xent_original__ = original
    return forward


def _output_type():
    from transformers.modeling_outputs import CausalLMOutputWithPast
    return CausalLMOutputWithPast


def _patch_class(cls) -> None:
    if getattr(cls.forward, "__xent_original__", None) is not None:
        return
    forward = _patched_forward(cls.forward)
    forward.__xent_output_type__ = _output_type()
    cls.forward = forward


def apply(model: torch.nn.Module) -> torch.nn.Module:
    """Patches this model instance (a ``*ForCausalLM`` with a decoder at
    ``model.model`` and an output embedding); returns it."""
    if not hasattr(model, "model") or model.get_output_embeddings() is None:
        raise TypeError(f"xent: {type(model).__name__} is not a causal LM with a decoder at "
                        ".model and an output embedding")
    original = type(model).forward
    original = getattr(original, "__xent_original__", original)
    forward = _patched_forward(original)
    forward.__xent_output_type__ = _output_type()
    model.forward = forward.__get__(model, type(model))
    return model


def _apply_to(module: str, cls: str) -> None:
    import importlib
    _patch_class(getattr(importlib.import_module(f"transformers.models.{module}"), cls))


def apply_to_llama() -> None:
    """Patches ``LlamaForCausalLM`` (models built before and after)."""
    _apply_to("llama.modeling_llama", "LlamaForCausalLM")


def apply_to_mistral() -> None:
    _apply_to("mistral.modeling_mistral", "MistralForCausalLM")


def apply_to_qwen2() -> None:
    _apply_to("qwen2.modeling_qwen2", "Qwen2ForCausalLM")


def apply_to_qwen3() -> None:
    _apply_to("qwen3.modeling_qwen3", "Qwen3ForCausalLM")


def apply_to_phi3() -> None:
    _apply_to("phi3.modeling_phi3", "Phi3ForCausalLM")


def apply_to_gemma2() -> None:
    """Gemma 2, with its final-logit softcap."""
    _apply_to("gemma2.modeling_gemma2", "Gemma2ForCausalLM")


def apply_to_gemma3() -> None:
    """Gemma 3's text model, with its final-logit softcap."""
    _apply_to("gemma3.modeling_gemma3", "Gemma3ForCausalLM")

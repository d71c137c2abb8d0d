"""xent.torch.transformers: causal LMs of Hugging Face Transformers whose
training loss comes from xent's linear cross-entropy (no logits), against
the same model unpatched, for each supported architecture (small random
configurations, no weights). Needs transformers (skipped without it)."""

import pytest
import torch

transformers = pytest.importorskip("transformers")
xtt = pytest.importorskip("xent.torch.transformers")

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

V = 1000
_COMMON = dict(vocab_size=V, hidden_size=128, intermediate_size=256, num_hidden_layers=1,
               num_attention_heads=2, num_key_value_heads=2, pad_token_id=0)
ARCHS = {
    "llama": ("LlamaConfig", {}),
    "mistral": ("MistralConfig", {}),
    "qwen2": ("Qwen2Config", {}),
    "qwen3": ("Qwen3Config", {"head_dim": 64}),
    "phi3": ("Phi3Config", {}),
    "gemma2": ("Gemma2Config", {"head_dim": 64, "final_logit_softcapping": 30.0}),
    "gemma3": ("Gemma3TextConfig", {"head_dim": 64, "final_logit_softcapping": 30.0}),
}


def _model(arch):
    name, extra = ARCHS[arch]
    config = getattr(transformers, name)(**_COMMON, **extra)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config).cuda().train()


def _batch(seed=3):
    g = torch.Generator(device="cuda").manual_seed(seed)
    ids = torch.randint(1, V, (2, 48), device="cuda", generator=g)
    labels = ids.clone()
    labels[:, ::5] = -100
    return ids, labels


def _step(model, ids, labels, **kwargs):
    model.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(input_ids=ids, labels=labels, **kwargs)
    out.loss.backward()
    grads = {n: p.grad.float().clone() for n, p in model.named_parameters() if p.grad is not None}
    return out, grads


def _rel(a, b):
    return ((a - b).norm() / b.norm().clamp(min=1e-30)).item()


@pytest.mark.parametrize("arch", sorted(ARCHS))
@pytest.mark.parametrize("items", [False, True])
def test_patched_model_matches_the_original(arch, items):
    ids, labels = _batch()
    kwargs = {"num_items_in_batch": (labels[:, 1:] != -100).sum()} if items else {}
    want, want_grads = _step(_model(arch), ids, labels, **kwargs)
    model = xtt.apply(_model(arch))
    got, grads = _step(model, ids, labels, **kwargs)
    assert got.logits is None and want.logits is not None
    assert got.loss.dtype == torch.float32
    # The original rounds the logits to bf16 before its float32 loss; xent
    # keeps the GEMM's float32 logits.
    torch.testing.assert_close(got.loss, want.loss.float(), rtol=2e-3, atol=2e-3)
    assert grads.keys() == want_grads.keys()
    for name in grads:
        assert _rel(grads[name], want_grads[name]) < 3e-2, name
    # Evaluation, no labels and no_grad take the original forward.
    model.eval()
    with torch.no_grad():
        assert model(input_ids=ids, labels=labels).logits is not None
    model.train()
    assert model(input_ids=ids).logits is not None


def test_class_patch_and_compile():
    """apply_to_llama patches the class (models built afterwards too); the
    patched model compiles (torch.compile) with the same loss."""
    from transformers.models.llama import modeling_llama
    cls = modeling_llama.LlamaForCausalLM
    ids, labels = _batch(5)
    want, _ = _step(_model("llama"), ids, labels)
    xtt.apply_to_llama()
    try:
        assert hasattr(cls.forward, "__xent_original__")
        model = _model("llama")
        got, _ = _step(model, ids, labels)
        assert got.logits is None
        torch.testing.assert_close(got.loss, want.loss.float(), rtol=2e-3, atol=2e-3)
        compiled = torch.compile(model)
        got_c, _ = _step(compiled, ids, labels)
        torch.testing.assert_close(got_c.loss, got.loss, rtol=1e-4, atol=1e-4)
    finally:
        cls.forward = cls.forward.__xent_original__

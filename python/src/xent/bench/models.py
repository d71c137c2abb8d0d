"""Unmodified Hugging Face models under ``torch.compile``: one training step
of ``LlamaForCausalLM``, or ``Gemma2ForCausalLM`` with its final-logit
softcap (a small random configuration, no weights) in eager
mode, under Inductor alone, under ``backend="xent"`` (which swaps the
model's ``F.cross_entropy`` and absorbs its ``.float()`` upcast,
xent.torch.fx_swap), patched by ``xent.torch.transformers.apply`` (the
loss from the hidden states, no logits) under Inductor and, given a
checkout, patched by Liger-Kernel's fused linear cross-entropy under
Inductor, side by side in one process: tokens/s (wall clock of a
whole step: forward, backward, optimizer) and peak memory, and the loss of
the first step against eager's.

Needs ``transformers`` (an optional dependency) and a CUDA device::

    python3 -m xent.bench.models --vocab 32000 128256
    python3 -m xent.bench.models --modes inductor xent apply liger --liger LIGER/src
    python3 -m xent.bench.models --arch gemma2 --vocab 256000
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Dict, List


#: The architectures measured: Llama, and Gemma 2 with its final-logit
#: softcap (30, as the released models) and attention softcap.
ARCHS = ("llama", "gemma2")


def _model(arch: str, vocab: int, hidden: int, layers: int, seed: int = 0):
    import torch
    torch.manual_seed(seed)
    sizes = dict(vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 4,
                 num_hidden_layers=layers, num_attention_heads=hidden // 64,
                 num_key_value_heads=hidden // 64, max_position_embeddings=4096)
    if arch == "gemma2":
        from transformers import Gemma2Config, Gemma2ForCausalLM
        config = Gemma2Config(**sizes, head_dim=64, query_pre_attn_scalar=64,
                              final_logit_softcapping=30.0, attn_logit_softcapping=50.0)
        return Gemma2ForCausalLM(config).cuda()
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(**sizes)).cuda()


def _liger(arch: str, model) -> None:
    """Liger-Kernel's patched model (from a checkout, --liger): its fused
    linear cross-entropy alone, the rest of the model as it is."""
    import liger_kernel.transformers as lt
    keep = dict(rope=False, rms_norm=False, cross_entropy=False,
                fused_linear_cross_entropy=True, model=model)
    if arch == "gemma2":
        lt.apply_liger_kernel_to_gemma2(geglu=False, **keep)
    else:
        lt.apply_liger_kernel_to_llama(swiglu=False, **keep)


def _step_fn(arch: str, model, mode: str):
    import torch
    import xent.torch as xt
    if mode == "eager":
        forward = model
    elif mode == "inductor":
        forward = torch.compile(model)
    elif mode in ("apply", "apply-eager"):
        # xent.torch.transformers: the loss from the hidden states, no logits.
        from xent.torch import transformers as xtt
        forward = xtt.apply(model)
        forward = forward if mode == "apply-eager" else torch.compile(forward)
    elif mode in ("liger", "liger-eager"):
        _liger(arch, model)
        forward = model if mode == "liger-eager" else torch.compile(model)
    else:
        xt.patch()
        # xent-joint: a backend object of its own, so that Dynamo compiles
        # the model anew rather than reuse the xent mode's graph.
        backend = "xent" if mode == "xent" else (lambda gm, inputs: xt.backend(gm, inputs))
        forward = torch.compile(model, backend=backend)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    # xent-joint: the backend's graph as XENT_GRAPH_JOINT=1 traces it (the
    # joint kernel in the forward, the graph scaling its gradient), for a
    # comparison in one process.
    deferred = mode != "xent-joint"

    def step(ids, labels):
        with xt._graph_deferred(deferred and xt._GRAPH_DEFERRED), \
                torch.autocast("cuda", dtype=torch.bfloat16):
            loss = forward(input_ids=ids, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()
    return step


def _profile(mode: str, step, ids, labels, steps: int = 3, top: int = 12) -> None:
    """Prints the GPU kernels of `steps` steps, most time first."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step(ids, labels)
        torch.cuda.synchronize()
    from torch.autograd import DeviceType
    # The kernels themselves, not the operators that launched them.
    events = [e for e in prof.key_averages()
              if getattr(e, "device_type", None) == DeviceType.CUDA and e.device_time_total > 0]
    events.sort(key=lambda e: -e.device_time_total)
    total = sum(e.device_time_total for e in events) / steps
    print(f"  {mode}: GPU {total / 1e3:.2f} ms per step")
    for e in events[:top]:
        print(f"    {e.device_time_total / steps / 1e3:7.3f} ms x{e.count // steps:<3} "
              f"{e.key[:90]}")


def _timed(step, ids, labels, steps: int) -> float:
    """Seconds per step, wall clock, over `steps` steps."""
    import torch
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step(ids, labels)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps


def measure(arch: str, vocab: int, batch: int, seq: int, hidden: int, layers: int, steps: int,
            modes: List[str], profile: bool = False, rounds: int = 3) -> Dict[str, Dict]:
    """Every mode set up (compiled, three steps) first, then timed in
    `rounds` interleaved rounds of `steps` steps each (the order rotated
    per round, so that no mode always runs first on a cooler or busier
    GPU); tokens/s from the median round. Peak memory per mode: its own
    model, gradients and optimizer state plus the peak of one step."""
    import statistics

    import torch
    out, ready = {}, {}
    g = torch.Generator(device="cuda").manual_seed(1)
    ids = torch.randint(0, vocab, (batch, seq), device="cuda", generator=g)
    labels = ids.clone()
    labels[:, ::11] = -100
    torch._dynamo.reset()
    for mode in modes:
        # What an earlier vocabulary or mode left to the cycle collector
        # goes now, not during this mode's setup (a negative peak).
        gc.collect()
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        model = _model(arch, vocab, hidden, layers)
        try:
            step = _step_fn(arch, model, mode)
            first = step(ids, labels).item()
            for _ in range(2):
                step(ids, labels)
        except Exception as e:  # noqa: BLE001 - a provider that fails is reported
            out[mode] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
            del model
            torch.cuda.empty_cache()
            continue
        torch.cuda.synchronize()
        own = torch.cuda.memory_allocated() - before
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        step(ids, labels)
        torch.cuda.synchronize()
        peak = own + torch.cuda.max_memory_allocated() - base
        report = None
        if mode in ("xent", "xent-joint"):
            import xent.torch as xt
            report = xt.last_report()
        out[mode] = {"first_loss": first, "peak_gib": peak / 2**30, "report": report,
                     "seconds": []}
        ready[mode] = (model, step)
    names = list(ready)
    for r in range(rounds):
        for mode in names[r % len(names):] + names[:r % len(names)] if names else []:
            out[mode]["seconds"].append(_timed(ready[mode][1], ids, labels, steps))
    for mode in names:
        seconds = statistics.median(out[mode]["seconds"])
        out[mode].update(tokens_per_s=batch * seq / seconds, ms=seconds * 1e3)
        if profile:
            _profile(mode, ready[mode][1], ids, labels)
    ready.clear()
    torch.cuda.empty_cache()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m xent.bench.models",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", choices=ARCHS, default="llama")
    parser.add_argument("--vocab", type=int, nargs="+", default=[32000, 128256])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved timing rounds of --steps steps per mode (median)")
    parser.add_argument("--modes", nargs="+", default=["eager", "inductor", "xent", "apply"],
                        help="eager, inductor, xent (the backend), xent-joint (the "
                             "backend with XENT_GRAPH_JOINT=1's graph), apply "
                             "(xent.torch.transformers + Inductor), liger (Liger's fused "
                             "linear cross-entropy + Inductor; needs --liger), apply-eager "
                             "and liger-eager (the same patches without torch.compile)")
    parser.add_argument("--profile", action="store_true",
                        help="also print each mode's GPU kernels, most time first")
    parser.add_argument("--liger", default=None,
                        help="a Liger-Kernel checkout's src/ directory, for mode liger")
    args = parser.parse_args(argv)
    if args.liger:
        import sys
        sys.path.insert(0, args.liger)
    import torch
    import transformers
    name = {"llama": "LlamaForCausalLM", "gemma2": "Gemma2ForCausalLM (softcap 30)"}[args.arch]
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"{torch.cuda.get_device_name()}; {name} hidden {args.hidden}, "
          f"{args.layers} layers, {args.batch}x{args.seq} tokens, bf16 autocast, AdamW")
    print("| vocab | " + " | ".join(args.modes) + " | xent, xent-joint, apply, liger ÷ inductor |")
    print("|---|" + "---|" * (len(args.modes) + 1))
    for vocab in args.vocab:
        r = measure(args.arch, vocab, args.batch, args.seq, args.hidden, args.layers, args.steps,
                    args.modes, args.profile, args.rounds)
        ok = [m for m in args.modes if "error" not in r[m]]
        cells = [f"{r[m]['tokens_per_s'] / 1e3:.0f} k tok/s, {r[m]['peak_gib']:.2f} GiB"
                 if m in ok else "failed" for m in args.modes]
        ratios = " / ".join(f"{r[m]['tokens_per_s'] / r['inductor']['tokens_per_s']:.2f}x"
                            for m in ("xent", "xent-joint", "apply", "liger")
                            if m in ok and "inductor" in ok)
        if "apply-eager" in ok and "liger-eager" in ok:
            ratios += (f"; apply-eager ÷ liger-eager "
                       f"{r['apply-eager']['tokens_per_s'] / r['liger-eager']['tokens_per_s']:.2f}x")
        print(f"| {vocab} | " + " | ".join(cells) + f" | {ratios} |")
        for m in args.modes:
            if m not in ok:
                print(f"  {m} failed: {r[m]['error']}")
        losses = ", ".join(f"{m} {r[m]['first_loss']:.6f}" for m in ok)
        print(f"  first-step loss: {losses}")
        rounds = "; ".join(f"{m} " + " ".join(f"{1e3 * t:.2f}" for t in r[m]["seconds"])
                           for m in ok)
        print(f"  ms per step, each round: {rounds}")
        if r.get("xent", {}).get("report"):
            print(f"  backend report: {r['xent']['report']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

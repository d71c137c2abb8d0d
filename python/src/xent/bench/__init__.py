"""Benchmarks of xent on a CUDA GPU (they need PyTorch: the ``torch`` extra).

``python -m xent.bench`` runs :mod:`xent.bench.cross_entropy`, the
side-by-side timing of softmax cross-entropy against torch eager,
torch.compile and, given a checkout, Liger (docs/performance.md).
"""

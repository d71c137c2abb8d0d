"""Benchmarks of xent on a CUDA GPU (they need PyTorch: the ``torch`` extra).

``python -m xent.bench`` runs :mod:`xent.bench.cross_entropy`, the
side-by-side timing of softmax cross-entropy against torch eager,
torch.compile and, given a checkout, Liger (docs/performance.md);
``python -m xent.bench.linear_cross_entropy`` runs
:mod:`xent.bench.linear_cross_entropy`, linear + cross-entropy (the LM
head) against F.linear + F.cross_entropy eager and compiled
(docs/linear-cross-entropy.md).
"""

"""``python -m xent.bench [options]``: :func:`xent.bench.cross_entropy.main`."""

from .cross_entropy import main

main()

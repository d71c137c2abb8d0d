"""Which kernel variant a GPU test compiles when it names one explicitly
(a configuration with ``threads`` and ``resident_rows``, to test the
resident and the two-pass kernels side by side). xent.torch itself asks for
one library per call signature and leaves this choice to the host code that
``convert-xent-to-gpu``'s ``runtime-dispatch`` generates; the rule the
per-feature-set libraries were named by lives with the benchmark that
times them against the dispatching ones (xent.bench.dispatch), and the
suite checks it against the kernels' results."""

from xent.bench.dispatch import has_resident_path, threads_for

__all__ = ["has_resident_path", "threads_for"]

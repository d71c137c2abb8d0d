"""Which kernel variant a GPU test compiles when it names one explicitly
(a configuration with ``threads`` and ``resident_rows``, to test the
resident and the two-pass kernels side by side). xent.torch itself asks for
one library per call signature and leaves this choice to the host code that
``convert-xent-to-gpu``'s ``runtime-dispatch`` generates; this is the
tests' own statement of the same rule, checked by the suite against the
kernels' results."""

from typing import Optional

from xent.runtime import kernels


def has_resident_path(*, target: str, rank: int, label_smoothing: float,
                      softcap: Optional[float], with_grad: bool, dtype: str,
                      weighted: bool = False, **_) -> bool:
    """Whether the gradient kernel keeps rows on chip (hasResidentPath for
    the drop-in's modules: class axis last; label smoothing only without
    class weights; a softcap only on bf16 / f16 logits)."""
    return (kernels.RESIDENT_ROWS and with_grad and target != "probs"
            and not (label_smoothing and weighted)
            and (softcap is None or dtype != "f32") and rank <= 2)


def threads_for(dtype: str, classes: int, resident: bool) -> int:
    """256 threads per block on the resident path where two blocks of 256
    hold the row (at most 8192 16-byte vectors), else kernels.THREADS: what
    runtime-dispatch picks."""
    if not resident:
        return kernels.THREADS
    width = 4 if dtype == "f32" else 8
    return 256 if -(-classes // width) <= 8192 else kernels.THREADS

"""torch's C++ meta kernels, for the meta-device forwards the verifier counts.

On import torch registers a Python meta kernel over the C++ one of about 640 aten operators
(torch._meta_registrations.activate_meta: the elementwise ones through torch._refs), so that
fake tensors and symbolic shapes see one implementation. On the meta device each such call
costs about half a millisecond where the C++ kernel it hides costs tens of microseconds, and
transformers' forward of a large default config runs some 14,000 of them: DeepSeek-V3.2's
61 layers at 16 tokens took 3.9 s of dispatch (torch 2.13 CPU, one core), 1.4 s with the C++
kernels, and FlopCounterMode gave the same 1,200,772,513,792 FLOPs both ways. FLOPs come from
the matrix products' shapes, which both kernels compute; tests/test_hf_reference.py checks
every model type's count under this context.

`cpp_meta_kernels()` lets the C++ kernel run where torch has one, keeps the Python kernel of
an operator without one, and gives torch its own registrations back on exit. It reaches into a
private registry of torch (the Library that activate_meta fills); a torch without it runs as
before, only slower.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

_active = False


def _python_meta_kernels() -> dict[Any, Any]:
    """The Python kernel activate_meta registers for each operator, picked as it picks them:
    from the meta, then post-autograd, then pre-autograd decomposition tables."""
    from torch._decomp import global_decomposition_table

    table: dict[Any, Any] = {}
    for kind in ("meta", "post_autograd", "pre_autograd"):
        for op, fn in global_decomposition_table[kind].items():
            if isinstance(op, torch._ops.OpOverload):
                table.setdefault(op, fn)
    return table


def _key(op: Any) -> str:
    """torch.library's registration key of `op`'s meta kernel ("aten/mul.Tensor/Meta")."""
    overload = op._schema.overload_name
    name = op._schema.name.split("::")[-1] + (f".{overload}" if overload else "")
    return f"aten/{name}/Meta"


@contextlib.contextmanager
def cpp_meta_kernels() -> Iterator[None]:
    global _active
    registrations = getattr(torch, "_meta_registrations", None)
    library = getattr(registrations, "_meta_lib_dont_use_me_use_register_meta", None)
    if _active or library is None or getattr(library, "m", None) is None:
        yield
        return
    registered = set(library._op_impls)
    kernels = {op: fn for op, fn in _python_meta_kernels().items() if _key(op) in registered}
    library.m.reset()  # every Python meta kernel off: the C++ ones show again
    fallback = torch.library.Library("aten", "IMPL", "Meta")
    _active = True
    try:
        for op, fn in kernels.items():
            if not torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "Meta"):
                fallback.impl(op, fn)  # no C++ kernel under it: the Python one stays
        yield
    finally:
        fallback._destroy()
        for op, fn in kernels.items():
            library.impl(op, fn)
        _active = False

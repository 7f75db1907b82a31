"""calc.verify.meta_kernels: torch's C++ meta kernels inside, torch's own registrations after."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from calc.verify.meta_kernels import cpp_meta_kernels  # noqa: E402


def _meta_kernel(op: str) -> str:
    """Where the active Meta kernel of `op` was registered (torch's dispatcher dump)."""
    return next(line for line in torch._C._dispatch_dump(op).splitlines()
                if line.startswith("Meta:"))


def test_the_cpp_kernel_runs_inside_and_python_ones_stay_where_there_is_none():
    assert "_meta_registrations.py" in _meta_kernel("aten::mul.Tensor")  # torch's Python kernel
    with cpp_meta_kernels():
        assert "RegisterMeta" in _meta_kernel("aten::mul.Tensor")
        # index_select has no C++ meta kernel: its Python one still gives the shape
        x = torch.empty(5, 3, device="meta")
        picked = torch.index_select(x, 0, torch.zeros(2, dtype=torch.long, device="meta"))
        assert picked.shape == (2, 3)
        assert (x * x.T[:, :1].T).shape == (5, 3)


def test_torch_gets_its_registrations_back_after_an_error():
    before = {op: _meta_kernel(op) for op in ("aten::mul.Tensor", "aten::index_select")}
    library = torch._meta_registrations._meta_lib_dont_use_me_use_register_meta
    registered = set(library._op_impls)
    with pytest.raises(ValueError), cpp_meta_kernels():
        raise ValueError
    assert {op: _meta_kernel(op) for op in before} == before
    assert set(library._op_impls) == registered
    # and nested uses leave the outer one in charge
    with cpp_meta_kernels(), cpp_meta_kernels():
        pass
    assert _meta_kernel("aten::mul.Tensor") == before["aten::mul.Tensor"]

"""Run calc's compiled formulas over numpy arrays: fast, exact, and safe from int64 overflow.

calc._compiled holds plain arithmetic, so it runs on anything that has + − × and `minimum`.
Called once with `Poly` tracers for the symbols that vary (constants stay Python ints), each
formula comes back as a polynomial in those symbols with the constants folded in: a term
multiplied by an absent part's 0 indicator vanishes, and total, active and non-embedding share
their products. `Plan.run` then evaluates the polynomials chunk by chunk (chunks that fit in the
CPU cache), which is many times faster than running the generated code on whole arrays.

Chunked attention's ⌊T/c⌋ is an atom the same way a minimum is: evaluated from its operands.

Integers: a polynomial with integer coefficients is exact in int64 whenever no partial sum can
exceed 2⁶³ − 1. `Plan` bounds every output by Σ|c|·Π max(atom) (all atoms are non-negative)
and evaluates in int64 when that bound is safe, in float64 otherwise (e.g. T² attention terms
at T = 1M), so a column's dtype says whether it is exact.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

Monomial = tuple[int, ...]  # atom ids, sorted, with repetition (T·T = (t, t))
INT64_MAX = (1 << 63) - 1
CHUNK = 16384  # rows per chunk: a few int64 temporaries of this length stay in L2
# Float formulas (forward FLOPs, training cost) keep one temporary per operation: blocks four
# times larger still fit in L2 and halve the dispatches, which dominate at 16,384 (measured).
FLOAT_CHUNK = 4 * CHUNK
# numpy releases the GIL inside each operation, so chunks run on every core at once.
WORKERS = min(4, os.cpu_count() or 1)


_POOL: list[ThreadPoolExecutor] = []  # one pool per process: starting threads costs more than
_POOL_NAME = "calc-sweep"  # a column's chunks on a busy machine (measured, bench/sweep.py)


def each_chunk(n: int, step: int, job: Callable[[int, int], None]) -> None:
    """job(lo, hi) for every chunk of range(n), on WORKERS threads when there is enough."""
    starts = range(0, n, step)
    inside = threading.current_thread().name.startswith(_POOL_NAME)  # a job's own chunks
    if WORKERS == 1 or len(starts) < 4 or inside:
        for lo in starts:
            job(lo, min(n, lo + step))
        return
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(WORKERS, thread_name_prefix=_POOL_NAME))
    for future in [_POOL[0].submit(job, lo, min(n, lo + step)) for lo in starts]:
        future.result()  # re-raise a chunk's error here


# Operations whose results are atoms of their own: min(a, b) and ⌊a/b⌋ (chunked attention).
OPERATIONS: dict[str, Callable[[Any, Any], Any]] = {"min": np.minimum,
                                                   "floordiv": np.floor_divide}


class Space:
    """The atoms polynomials are built from: varying symbols, and minima and floor quotients
    of polynomials."""

    def __init__(self) -> None:
        self.names: list[str | None] = []  # input symbol per atom; None for an operation
        self.minima: dict[int, tuple[Poly, Poly]] = {}  # operands of each operation atom
        self.operation: dict[int, str] = {}  # "min" or "floordiv"
        self.binary: set[int] = set()  # atoms whose values are all 0 or 1: x·x = x
        self._min_ids: dict[tuple, int] = {}

    def symbol(self, name: str, binary: bool) -> Poly:
        self.names.append(name)
        atom = len(self.names) - 1
        if binary:
            self.binary.add(atom)
        return Poly(self, {(atom,): 1})

    def minimum(self, a: Poly, b: Poly, operation: str = "min") -> Poly:
        key = (operation, a.key(), b.key())
        if key not in self._min_ids:
            self.names.append(None)
            self._min_ids[key] = len(self.names) - 1
            self.minima[len(self.names) - 1] = (a, b)
            self.operation[len(self.names) - 1] = operation
        return Poly(self, {(self._min_ids[key],): 1})


class Poly:
    """A polynomial with integer coefficients over a Space's atoms (a tracer for +, −, ×)."""

    __slots__ = ("space", "terms")

    def __init__(self, space: Space, terms: dict[Monomial, int]):
        self.space = space
        self.terms = {m: c for m, c in terms.items() if c}

    def key(self) -> tuple:
        return tuple(sorted(self.terms.items()))

    def constant(self) -> int | None:
        if not self.terms:
            return 0
        return self.terms.get(()) if len(self.terms) == 1 and () in self.terms else None

    def _lift(self, other: Any) -> Poly:
        if isinstance(other, Poly):
            return other
        if isinstance(other, int | np.integer) and not isinstance(other, bool):
            return Poly(self.space, {(): int(other)})
        raise TypeError(f"cannot trace {type(other).__name__} {other!r} (integer formulas only)")

    def __add__(self, other: Any) -> Poly:
        terms = dict(self.terms)
        for m, c in self._lift(other).terms.items():
            terms[m] = terms.get(m, 0) + c
        return Poly(self.space, terms)

    __radd__ = __add__

    def __neg__(self) -> Poly:
        return Poly(self.space, {m: -c for m, c in self.terms.items()})

    def __sub__(self, other: Any) -> Poly:
        return self + (-self._lift(other))

    def __rsub__(self, other: Any) -> Poly:
        return self._lift(other) + (-self)

    def __mul__(self, other: Any) -> Poly:
        binary = self.space.binary
        terms: dict[Monomial, int] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in self._lift(other).terms.items():
                atoms = sorted(m1 + m2)
                if binary:  # an indicator squared is itself
                    atoms = [a for i, a in enumerate(atoms)
                             if not (a in binary and i and atoms[i - 1] == a)]
                m = tuple(atoms)
                terms[m] = terms.get(m, 0) + c1 * c2
        return Poly(self.space, terms)

    __rmul__ = __mul__

    def __pow__(self, exponent: int) -> Poly:
        if not isinstance(exponent, int) or exponent < 0:
            raise TypeError(f"cannot trace ** {exponent!r}")
        result = self._lift(1)
        for _ in range(exponent):
            result = result * self
        return result

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Poly:
        """numpy.minimum(a, b) and numpy.floor_divide(a, b), as calc._compiled's `_minimum`
        and `_floordiv` call them for non-numbers."""
        names = {function: name for name, function in OPERATIONS.items()}
        if ufunc not in names or method != "__call__" or kwargs or len(inputs) != 2:
            return NotImplemented
        a, b = (self._lift(x) for x in inputs)
        ca, cb = a.constant(), b.constant()
        if ca is not None and cb is not None:
            return self._lift(int(ufunc(ca, cb)))
        return self.space.minimum(a, b, names[ufunc])


@dataclass
class Plan:
    """Compiled polynomials for some outputs, ready to run on arrays of the varying symbols."""

    space: Space
    outputs: dict[str, Poly]

    @classmethod
    def trace(cls, functions: list[Callable[[Mapping[str, Any]], dict[str, Any]]],
              values: Mapping[str, Any], varying: Mapping[str, bool],
              keep: set[str] | None = None, same: Mapping[str, str] | None = None) -> Plan:
        """Trace `functions` (calc._compiled's) with `varying` symbols as atoms.

        `values` gives every symbol's constant value (used for those that do not vary);
        `varying` maps each varying symbol to whether it only takes the values 0 and 1;
        `same` maps a varying symbol to another whose values it has in every row (one atom:
        L_att = L_dense = L in a uniform model, d_v = d_qk), so their products are shared.
        """
        space = Space()
        traced: dict[str, Any] = dict(values)
        same = same or {}
        for name, binary in varying.items():
            if name not in same:
                traced[name] = space.symbol(name, binary or any(
                    varying[other] for other, to in same.items() if to == name))
        for name, to in same.items():
            traced[name] = traced[to]
        outputs: dict[str, Poly] = {}
        for function in functions:
            for key, value in function(traced).items():
                if keep is None or key in keep:
                    outputs[key] = value if isinstance(value, Poly) else Poly(space, {(): value})
        return cls(space, outputs)

    # ---- bounds and dtypes --------------------------------------------------------------
    def _atom_max(self, arrays: Mapping[str, np.ndarray]) -> list[int]:
        maxima: list[int] = []
        for atom, name in enumerate(self.space.names):
            if name is None:  # min(a, b) <= either side; ⌊a/b⌋ <= a (b >= 1: sizes)
                a, b = self.space.minima[atom]
                low = self.space.operation[atom] == "min"
                maxima.append(min(_bound(a, maxima), _bound(b, maxima)) if low
                              else _bound(a, maxima))
            else:  # sizes and 0/1 indicators: callers pass no negative values
                values = arrays[name]
                maxima.append(int(values.max()) if values.size else 0)
        return maxima

    def dtypes(self, arrays: Mapping[str, np.ndarray]) -> dict[str, type]:
        """int64 where every partial sum provably fits, float64 elsewhere."""
        maxima = self._atom_max(arrays)
        return {key: np.int64 if _bound(poly, maxima) <= INT64_MAX else np.float64
                for key, poly in self.outputs.items()}

    # ---- evaluation ---------------------------------------------------------------------
    def run(self, arrays: Mapping[str, np.ndarray], n: int, keys: Collection[str] | None = None,
            dtypes: Mapping[str, type] | None = None) -> dict[str, np.ndarray]:
        """The outputs `keys` (default all) over `n` rows; `arrays` holds each varying symbol's
        int64 values, `dtypes` the outputs' `self.dtypes(arrays)` when already known. Outputs run
        together share their products."""
        dtypes = self.dtypes(arrays) if dtypes is None else dtypes
        block = self.block(arrays, keys)
        results = {key: np.empty(n, dtype=dtypes[key]) for key in block.keys}

        def chunk(lo: int, hi: int) -> None:
            block(lo, hi, {key: out[lo:hi] for key, out in results.items()})

        each_chunk(n, CHUNK, chunk)
        return results

    def block(self, arrays: Mapping[str, np.ndarray], keys: Collection[str] | None = None
              ) -> Block:
        """The outputs `keys` (default all) of any block of rows, written where the caller
        says: a column made from them (forward FLOPs) need not keep them at full length."""
        wanted = {key: poly for key, poly in self.outputs.items() if keys is None or key in keys}
        order = _atom_order(wanted.values())  # one order: outputs share products
        outputs = {key: _terms(poly, order) for key, poly in wanted.items()}
        needed = {a for poly in wanted.values() for m in poly.terms for a in m}
        for atom in sorted(self.space.minima, reverse=True):  # an operation's operands come
            if atom in needed:  # before it: only the atoms the outputs use are computed
                needed.update(a for side in self.space.minima[atom] for m in side.terms
                              for a in m)
        minima = {atom: [_terms(side, _atom_order([side])) for side in sides]
                  for atom, sides in self.space.minima.items() if atom in needed}
        return Block(self.space, outputs, minima, needed, arrays)


@dataclass
class Block:
    """Some outputs of a Plan over a block of rows (Plan.block)."""

    space: Space
    outputs: dict[str, list[tuple[int, Monomial]]]
    minima: dict[int, list[list[tuple[int, Monomial]]]]
    needed: set[int]
    arrays: Mapping[str, np.ndarray]

    @property
    def keys(self) -> list[str]:
        return list(self.outputs)

    def __call__(self, lo: int, hi: int, out: Mapping[str, np.ndarray]) -> None:
        """out[key][:] = output `key` over rows lo:hi, for every key of `out`."""
        atoms: list[Any] = []
        memo: dict[tuple[type, Monomial], np.ndarray] = {}
        for atom, name in enumerate(self.space.names):
            if atom not in self.needed:
                atoms.append(None)
            elif name is not None:
                atoms.append(self.arrays[name][lo:hi])
            else:
                sides = []  # an operation on sizes such as T and w: int64 is safe
                for terms in self.minima[atom]:
                    side = np.empty(hi - lo, dtype=np.int64)
                    _accumulate(side, terms, atoms, memo)
                    sides.append(side)
                atoms.append(OPERATIONS[self.space.operation[atom]](*sides))
        for key, target in out.items():
            _accumulate(target, self.outputs[key], atoms, memo)


_OPS: dict[str, Callable[..., Any]] = {"+": np.add, "-": np.subtract, "*": np.multiply,
                                       "/": np.true_divide}


class Deferred:
    """Arithmetic on named arrays, recorded when a compiled float formula (calc._compiled's
    `training`) runs on placeholders and evaluated later, chunk by chunk: only the outputs read
    are computed, each operation in the formula's own order, so every float rounds as it does in
    calc.estimate."""

    __slots__ = ("args", "op")

    def __init__(self, op: str, args: tuple[Any, ...]):
        self.op, self.args = op, args

    @classmethod
    def leaf(cls, name: str) -> Deferred:
        return cls("leaf", (name,))

    def __add__(self, other: Any) -> Deferred:
        return Deferred("+", (self, other))

    def __radd__(self, other: Any) -> Deferred:
        return Deferred("+", (other, self))

    def __sub__(self, other: Any) -> Deferred:
        return Deferred("-", (self, other))

    def __rsub__(self, other: Any) -> Deferred:
        return Deferred("-", (other, self))

    def __mul__(self, other: Any) -> Deferred:
        return Deferred("*", (self, other))

    def __rmul__(self, other: Any) -> Deferred:
        return Deferred("*", (other, self))

    def __truediv__(self, other: Any) -> Deferred:
        return Deferred("/", (self, other))

    def __rtruediv__(self, other: Any) -> Deferred:
        return Deferred("/", (other, self))

    def evaluate(self, values: Mapping[str, Any], out: np.ndarray | None = None) -> Any:
        """The value over `values` (name → array or number), written into `out` if given."""
        if self.op == "leaf":
            value = values[self.args[0]]
            if out is None:
                return value
            out[...] = value
            return out
        a, b = (x.evaluate(values) if isinstance(x, Deferred) else x for x in self.args)
        return _OPS[self.op](a, b) if out is None else _OPS[self.op](a, b, out=out)


def _terms(poly: Poly, order: dict[int, tuple[int, int]]) -> list[tuple[int, Monomial]]:
    """(coefficient, monomial) pairs, each monomial's atoms in `order` (shared prefixes)."""
    return [(c, tuple(sorted(m, key=order.__getitem__))) for m, c in poly.terms.items()]


def _bound(poly: Poly, maxima: list[int]) -> int:
    total = 0
    for m, c in poly.terms.items():
        term = abs(c)
        for atom in m:
            term *= maxima[atom]
        total += term
    return total


def _atom_order(polys: Any) -> dict[int, tuple[int, int]]:
    """Sort key for atoms: the most used first, so monomials share their leading products."""
    counts = Counter(a for poly in polys for m in poly.terms for a in set(m))
    return {atom: (-count, atom) for atom, count in counts.items()}


def _product(m: Monomial, atoms: list[np.ndarray], dtype: type,
             memo: dict[tuple[type, Monomial], np.ndarray]) -> np.ndarray:
    """Π atoms[m], reusing the product of every prefix already computed."""
    key = (dtype, m)
    if key not in memo:
        last = atoms[m[-1]] if dtype is np.int64 else atoms[m[-1]].astype(dtype)
        memo[key] = last if len(m) == 1 else _product(m[:-1], atoms, dtype, memo) * last
    return memo[key]


def _accumulate(out: np.ndarray, terms: list[tuple[int, Monomial]], atoms: list[np.ndarray],
                memo: dict[tuple[type, Monomial], np.ndarray]) -> None:
    """out[:] = Σ c·Π atoms[m], in out's dtype."""
    dtype = out.dtype.type
    out[...] = 0
    scratch = np.empty_like(out)
    for c, m in terms:
        if not m:
            out += dtype(c)
            continue
        value = _product(m, atoms, dtype, memo)
        if c == 1:
            out += value
        elif c == -1:
            out -= value
        else:
            np.multiply(value, dtype(c), out=scratch)
            out += scratch

"""calc.sweep's axes: values checked and named the way CalcError names them, and their rows.

An axis is one value or a 1-D sequence. Integers must be whole and in the range ModelSpec
allows; names become codes into their distinct values (numpy arrays of small integers).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calc.errors import CalcError
from calc.numbers import parse
from calc.spec.model import MAX_HEADS, MAX_LAYERS, MAX_TOKENS_CONTEXT, MAX_VOCAB, MAX_WIDTH

# The ranges ModelSpec allows (calc.spec.model), so that every row is a spec it accepts.
LIMITS = {"d_model": MAX_WIDTH, "n_layers": MAX_LAYERS, "n_heads": MAX_HEADS,
           "n_kv_heads": MAX_HEADS, "head_dim": MAX_WIDTH, "d_ff": 16 * MAX_WIDTH,
           "vocab_size": MAX_VOCAB, "seq_len": MAX_TOKENS_CONTEXT, "gpus": 10_000_000}


_BLOCK = 1 << 14  # rows of strings matched at a time: their words stay in the L2 cache


def _array(name: str, value: Any) -> np.ndarray:
    array = np.atleast_1d(np.asarray(list(value) if isinstance(value, range) else value))
    if array.ndim != 1 or array.size == 0:
        raise CalcError(f"sweep {name}: expected one value or a non-empty 1-D sequence")
    return array


def integers(name: str, value: Any) -> np.ndarray:
    array = _array(name, value)
    if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.rint(array)):
        array = array.astype(np.int64)
    limit = LIMITS[name]
    if array.dtype.kind not in "iu" or array.min() < 1 or array.max() > limit:
        raise CalcError(f"sweep {name}: expected whole numbers in [1, {limit:,}], got "
                        f"{array[:5].tolist()}{' ...' if array.size > 5 else ''}")
    return array.astype(np.int64, copy=False)


def numbers(name: str, value: Any, upper: float | None) -> np.ndarray:
    array = _array(name, value)
    if array.dtype.kind in "UO":  # "2T" as calc.estimate and the CLI read it
        try:
            array = np.array([parse(v) for v in array.tolist()], dtype=np.float64)
        except ValueError as error:
            raise CalcError(f"sweep {name}: {error}") from None
    if array.dtype.kind not in "iuf":
        raise CalcError(f"sweep {name}: expected numbers, got {array[:5].tolist()}")
    array = array.astype(np.float64, copy=False)
    low, high = array.min(), array.max()  # NaN and ±inf show in these: no third pass
    if not (np.isfinite(low) and np.isfinite(high)) or low <= 0 or (upper and high > upper):
        allowed = f"in (0, {upper:g}]" if upper else "positive and finite"
        raise CalcError(f"sweep {name}: expected numbers {allowed}, got {array[:5].tolist()}")
    return array


def names_and_codes(name: str, value: Any, allowed: list[str] | None
                    ) -> tuple[list[str], np.ndarray]:
    """Names → (the distinct names, each value's index among them)."""
    array = _array(name, value)
    if array.dtype.kind == "O" and all(isinstance(v, str) for v in array):
        array = array.astype(str)
    if array.dtype.kind != "U":
        raise CalcError(f"sweep {name}: expected a name or a list of names, got {value!r}")
    names, codes = _factorise(array)  # small integers: indices into the names
    if allowed is None:
        return names.tolist(), codes
    for v in names.tolist():
        if v not in allowed:
            raise CalcError(f"sweep {name}={v!r}: expected one of {', '.join(allowed)}")
    return allowed, np.array([allowed.index(v) for v in names])[codes]


def _factorise(array: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct strings and each one's index: sorting millions of strings is slow, so the
    names are taken from a sample and matched by comparison, sorting only if some are missed."""
    names = np.unique(array[:: max(1, len(array) // 4096)])
    if len(names) <= 64:  # small codes summed (a masked assignment costs more than a compare)
        array = np.ascontiguousarray(array)
        size = array.dtype.itemsize  # 4 bytes per character, zero-padded
        one_word = size % 8 == 0 and size <= 32 and array.view(np.uint32).max() < 256
        name_words = _words(names.astype(array.dtype), one_word)
        codes, matched = np.zeros(len(array), dtype=np.uint8), 0
        for lo in range(0, len(array), _BLOCK):  # blocks that stay in the cache
            words, part = _words(array[lo:lo + _BLOCK], one_word), codes[lo:lo + _BLOCK]
            for i, name in enumerate(name_words):
                same = words[:, 0] == name[0]
                for column in range(1, words.shape[1]):
                    same &= words[:, column] == name[column]
                part += same.view(np.uint8) * np.uint8(i)
                matched += np.count_nonzero(same)  # names differ: a row matches one at most
        if matched == len(array):
            return names, codes
    return np.unique(array, return_inverse=True)


def _words(array: np.ndarray, one_word: bool) -> np.ndarray:
    """Fixed-width strings as rows of machine words: comparing a few words is several times
    faster than numpy's character-by-character string comparison, and as exact. `one_word`:
    up to 8 characters below 256 (checked by the caller), each one byte of a single word."""
    size = array.dtype.itemsize
    words = array.view(np.uint64 if size % 8 == 0 else np.uint32).reshape(len(array), -1)
    if not one_word:
        return words
    key = words[:, 0].copy()  # word j holds characters 2j and 2j+1 at bits 0 and 32:
    for j in range(1, words.shape[1]):  # shifted by 8j, each character has its own byte
        key |= words[:, j] << np.uint64(8 * j)
    return key[:, None]


def rows_of(axes: dict[str, np.ndarray], grid: bool, n: int | None = None
          ) -> tuple[int, dict[str, Any]]:
    """Each axis's value in every row: the product (grid) or the zip of the axes.

    An axis with one value stays a scalar (numpy broadcasts it); `n` forces a zip length.
    """
    lengths = {name: len(values) for name, values in axes.items()}
    if grid:
        total = int(np.prod(list(lengths.values()), dtype=np.int64))
        rows: dict[str, Any] = {}
        inner = total
        for name, values in axes.items():
            inner //= lengths[name]
            if lengths[name] == 1:
                rows[name] = values[0]
            else:
                rows[name] = np.tile(np.repeat(values, inner), total // (inner * lengths[name]))
        return total, rows
    sizes = {size for size in lengths.values() if size != 1} | ({n} if n else set())
    if len(sizes) > 1:
        raise CalcError(f"sweep grid=False: every axis needs one value or the same length, "
                        f"got {', '.join(f'{k}: {v}' for k, v in lengths.items() if v != 1)}")
    total = sizes.pop() if sizes else 1
    return total, {name: values if len(values) > 1 else values[0]
                   for name, values in axes.items()}

"""A sweep's columns: named numpy arrays, one row per configuration (calc.sweep builds them;
calc.reports.sweep.Sweep is these columns as a report).

A grid's columns are kept factored — the model part (one row per model shape) and the workload
part (tokens × GPUs × ...) — and expanded to full length only when a column is read, so a
ten-million-row grid costs memory only for what is used. A computed column is computed when it
is first read (`Lazy`), so reading one column costs only that column and what it is made from.
`to_dataframe()` needs pandas (not a dependency of calc); the text columns (model, attention,
gpu) become categoricals there. numpy is imported inside the methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


class Lazy(Mapping[str, Any]):
    """Columns by name, each made on first read and kept; `ready` columns are there from the
    start. A maker gets this mapping (a column can be made from others) and returns the column,
    or a dict of columns made together (its own and others it costs nothing more to keep)."""

    def __init__(self, ready: Mapping[str, Any],
                 make: Mapping[str, Callable[[Lazy], Any]] | None = None):
        self._values = dict(ready)
        self._make = dict(make or {})

    def __getitem__(self, name: str) -> Any:
        if name not in self._values:
            made = self._make[name](self)  # KeyError for an unknown name
            self._values.update(made if isinstance(made, dict) else {name: made})
        return self._values[name]

    def made(self, name: str) -> bool:
        """Whether the column is there already (read, or made with another)."""
        return name in self._values

    def __contains__(self, name: object) -> bool:  # without making the column
        return name in self._values or name in self._make

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self._values), **dict.fromkeys(self._make)})

    def __len__(self) -> int:
        return len(self._values.keys() | self._make.keys())


class Columns:
    """Columns of parameters, FLOPs and training cost: `sweep["gpu_hours"]` is a numpy array.

    Inputs: model, d_model, n_layers, n_heads, n_kv_heads, head_dim, d_ff, vocab_size,
    seq_len, attention, and with tokens: tokens, mfu, gpus, gpu. Outputs: params_total,
    params_embedding, params_non_embedding, params_active, flops_weights (FLOPs per token
    through the weights), flops_attention_seq (QKᵀ and A·V per sequence, all layers),
    flops_forward and flops_train (per token), attention_share, and with tokens
    training_flops, gpu_hours and days.
    """

    def __init__(self, n_model: int, n_work: int, grid: bool, model: Mapping[str, Any],
                 work: dict[str, Any], both: Mapping[str, np.ndarray],
                 labels: dict[str, list[str]], dtypes: dict[str, str], conventions: list[str],
                 columns: list[str], dropped: dict[str, int] | None = None,
                 n_dropped: int = 0):
        self._n_model, self._n_work, self._grid = n_model, n_work, grid
        self.columns = columns  # in display order: inputs, then numbers
        # one row per model shape, one per workload, one per (shape, workload) pair
        self._model, self._work, self._both = model, work, both
        self._labels = labels
        self._cache: dict[str, np.ndarray] = {}
        self.count_dtypes = dtypes  # what the formulas' outputs were evaluated in
        self.conventions = conventions
        # model shapes no spec allows, left out: how many, and how many break each rule (a
        # shape may break several)
        self.n_dropped, self.dropped = n_dropped, dict(dropped or {})

    # ---- columns ------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._n_model * self._n_work if self._grid else self._n_model

    def __contains__(self, name: object) -> bool:
        return name in self.columns

    def __getitem__(self, name: str) -> np.ndarray:
        import numpy as np

        if name not in self._cache:
            codes = self._codes(name)
            self._cache[name] = (np.asarray(self._labels[name])[codes]
                                 if name in self._labels else codes)
        return self._cache[name]

    def _codes(self, name: str) -> np.ndarray:
        """The column at full length (codes for a text column)."""
        import numpy as np

        if name not in self._model and name not in self._work and name in self.columns:
            return self._both[name]
        if name in self._model:
            values, count, repeat = self._model[name], self._n_model, True
        elif name in self._work:
            values, count, repeat = self._work[name], self._n_work, False
        else:
            raise KeyError(f"no column {name!r}; columns: {', '.join(self.columns)}")
        if not isinstance(values, np.ndarray):
            return np.full(len(self), values)
        assert len(values) == count
        other = (self._n_work if repeat else self._n_model) if self._grid else 1
        if other == 1:  # the part already has a row per configuration
            return values
        return np.repeat(values, other) if repeat else np.tile(values, other)

    def labels(self, name: str) -> list[str]:
        """The names a text column (model, attention, gpu) takes."""
        return list(self._labels[name])

    def varies(self, name: str) -> bool:
        """Whether an input column takes more than one value."""
        import numpy as np

        stored = self._model.get(name, self._work.get(name))
        return isinstance(stored, np.ndarray) and stored.size > 0 and stored.min() != stored.max()

    def row(self, index: int) -> dict[str, Any]:
        """One configuration as plain Python values."""
        import numpy as np

        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"row {index} of a sweep of {n:,} rows")
        index %= n
        i_model, i_work = divmod(index, self._n_work) if self._grid else (index, index)
        out: dict[str, Any] = {}
        for name in self.columns:
            if name not in self._model and name not in self._work:
                value = self._both[name][index]
            else:
                part, i = (self._model, i_model) if name in self._model else (self._work, i_work)
                value = part[name][i] if isinstance(part[name], np.ndarray) else part[name]
            out[name] = self._labels[name][value] if name in self._labels else value.item() \
                if isinstance(value, np.generic) else value
        return out

    def head(self, n: int = 10) -> list[dict[str, Any]]:
        return [self.row(i) for i in range(min(n, len(self)))]

    # ---- other forms --------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """{"rows", "columns": {name: list}, "conventions"}: JSON-ready (every row: mind size)."""
        return {"rows": len(self),
                "columns": {name: self[name].tolist() for name in self.columns},
                "conventions": self.conventions}

    def to_dataframe(self) -> Any:
        """A pandas DataFrame of every column (pandas must be installed)."""
        from calc.document import pandas as load_pandas

        pandas = load_pandas()
        data = {name: pandas.Categorical.from_codes(self._codes(name), self._labels[name])
                if name in self._labels else self[name] for name in self.columns}
        return pandas.DataFrame(data)

    def __repr__(self) -> str:
        return f"<calc.Sweep: {len(self):,} configurations × {len(self.columns)} columns>"


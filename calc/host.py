"""How much memory this process may still take, so that a command too big for the machine is
refused with one line before it starts building (issue 12: `bench llama3.1-405b` was killed
after 96 s with no message; `verify llama2-7b --device cpu` under a limit ended in torch's
"DefaultCPUAllocator" error).

The smallest of what the kernel says is available (MemAvailable in /proc/meminfo), what the
process's cgroup still allows (v2 memory.max − memory.current, v1 limit_in_bytes −
usage_in_bytes) and what an address-space limit (`ulimit -v`) leaves. None where none of these
can be read (not Linux): then nothing is refused.
"""

from __future__ import annotations

import resource
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from calc.counting import GIB
from calc.errors import CalcError

_CGROUP_FILES = (  # (limit, usage), cgroup v2 then v1
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)


def _number(path: str) -> int | None:
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):  # absent, "max", unreadable
        return None


def _meminfo(key: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return None


def _address_space_left() -> int | None:
    limit, _ = resource.getrlimit(resource.RLIMIT_AS)
    if limit == resource.RLIM_INFINITY:
        return None
    try:
        status = Path("/proc/self/status").read_text()
        used = next(int(line.split()[1]) * 1024 for line in status.splitlines()
                    if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        used = 0
    return max(0, limit - used)


def available_memory() -> int | None:
    """Bytes this process can still allocate, or None when the system does not say."""
    found = [_meminfo("MemAvailable"), _address_space_left()]
    for limit_file, usage_file in _CGROUP_FILES:
        limit, usage = _number(limit_file), _number(usage_file)
        if limit is not None and usage is not None and limit < 1 << 60:  # 2^63: no limit
            found.append(max(0, limit - usage))
    known = [value for value in found if value is not None]
    return min(known) if known else None


def require_memory(needed: int, what: str, instead: str, available: int | None = None) -> None:
    """Refuse `what` (one line, with `instead`) when it needs more than the memory left."""
    left = available_memory() if available is None else available
    if left is not None and needed > left:
        raise CalcError(f"{what} needs at least {needed / GIB:,.1f} GiB but this machine has "
                        f"{left / GIB:,.1f} GiB free; {instead}")


_OOM_MARKERS = ("out of memory", "DefaultCPUAllocator", "can't allocate memory")


@contextmanager
def memory_errors(what: str, instead: str) -> Iterator[None]:
    """Turn running out of memory anyway (activations the up-front check leaves out, another
    process taking memory) into one CalcError line instead of an internal error."""
    try:
        yield
    except (MemoryError, RuntimeError) as error:
        if isinstance(error, RuntimeError) and not any(m in str(error) for m in _OOM_MARKERS):
            raise
        raise CalcError(f"{what} ran out of memory; {instead}") from None

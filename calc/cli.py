"""`python -m calc`: run a command and map what goes wrong to an exit code. No arithmetic here.

    python -m calc MODEL [--tokens N] [--gpu NAME] ... [--format text|markdown|json|csv|...]
    python -m calc VERB ...      (the verbs are calc/commands/*.py; see calc.commands)

Exit codes: 0 success; 2 bad input (one line on stderr naming the field, the value and what is
allowed); 1 an internal error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from calc.commands import run
from calc.errors import CalcError


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(list(sys.argv[1:] if argv is None else argv))
    except CalcError as error:
        print(f"calc: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `python -m calc ... | head`
        sys.stderr.close()
        return 0
    except Exception as error:  # a bug in calc, not bad input
        if os.environ.get("CALC_DEBUG"):
            raise
        print(f"calc: internal error: {type(error).__name__}: {error} "
              f"(set CALC_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1

"""A Hugging Face Hub model id where a config.json path goes: `python -m calc org/name ...`.

The repo's config.json comes through huggingface_hub (the optional extra `calc[hub]`, imported
only here) into its cache, so later runs work offline: HF_HUB_CACHE and HF_HUB_OFFLINE are read
when calc asks, as huggingface_hub reads them (`--offline` sets the latter). The cache is tried
first; a file not in it is fetched only when the Hub answers within REACH_SECONDS, so an
offline machine gets its one line at once instead of huggingface_hub's retries. (An id whose
config.json a preset already cites never comes here: calc.presets maps it to the preset.)
The Hub's own parameter count, where it has one,
is shown beside calc's: the `total_parameters` transformers writes into
model.safetensors.index.json (save_pretrained, modeling_utils.py), cached like config.json;
online, the safetensors headers' counts (huggingface_hub.get_safetensors_metadata) otherwise.
Either counts every tensor the checkpoint stores: a multimodal model's towers and DeepSeek-V3's
MTP layers too.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from calc.errors import CalcError

# owner/name as the Hub spells repo ids (huggingface_hub.utils.validate_repo_id).
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")
_TRUE = ("1", "on", "yes", "true")  # huggingface_hub.constants._is_true
INSTALL = "pip install 'calc[hub]'"
# How long calc waits for the Hub before calling it unreachable (a TCP connection, name lookup
# included), and for a file's metadata once it answers (huggingface_hub's etag_timeout, whose
# default is 10 s): an offline machine fails in under 2 s.
REACH_SECONDS = 1.5
ETAG_SECONDS = 2.0


def is_hub_id(name: str) -> bool:
    """org/name that is neither a file here nor a spec file's name."""
    return (bool(_REPO_ID.match(name)) and not Path(name).exists()
            and not name.lower().endswith((".json", ".toml")))


@dataclass(frozen=True)
class HubConfig:
    """A repo's config.json as the Hub serves it, and what the Hub says about its size."""

    repo_id: str
    config: dict[str, Any]
    revision: str  # the commit the cached file belongs to
    published_params: int | None
    published_source: str | None

    @property
    def source(self) -> str:
        return f"huggingface.co/{self.repo_id} config.json (revision {self.revision[:12]})"


def _options() -> dict[str, Any]:
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in _TRUE
    return {"cache_dir": os.environ.get("HF_HUB_CACHE") or None, "local_files_only": offline}


def _endpoint() -> tuple[str, int]:
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    return url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)


@cache  # one probe per process
def reachable() -> bool:
    """Whether the Hub accepts a TCP connection within REACH_SECONDS (the name lookup runs in a
    thread, so a resolver that hangs counts as unreachable too)."""
    answered: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection(_endpoint(), timeout=REACH_SECONDS).close()
            answered.append(True)
        except OSError:
            answered.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(REACH_SECONDS)
    return bool(answered and answered[0])


def _not_cached(repo_id: str, filename: str, why: str) -> CalcError:
    where = os.environ.get("HF_HUB_CACHE") or "the default cache"
    return CalcError(f"model {repo_id!r}: {filename} is not in the Hub cache ({where}) and "
                     f"{why}; run once online, or give a preset or a config.json path")


@contextmanager
def _quiet() -> Iterator[None]:
    """huggingface_hub logs each retry of an unreachable Hub as a warning; the CalcError below
    is the one line that says what happened."""
    disabled = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(disabled)


def _download(hub: Any, repo_id: str, filename: str) -> Path:
    """`filename` of `repo_id`: from the cache, else from the Hub when it answers in time."""
    errors = hub.errors
    options = _options()
    if not options["local_files_only"]:
        try:
            with _quiet():
                return Path(hub.hf_hub_download(repo_id, filename,
                                                **{**options, "local_files_only": True}))
        except errors.LocalEntryNotFoundError:
            if not reachable():
                host, _ = _endpoint()
                raise _not_cached(repo_id, filename, f"the Hub ({host}) did not answer within "
                                                     f"{REACH_SECONDS:g} s (offline?)") from None
            options = {**options, "etag_timeout": ETAG_SECONDS}
    try:
        with _quiet():
            return Path(hub.hf_hub_download(repo_id, filename, **options))
    except errors.GatedRepoError:
        raise CalcError(f"model {repo_id!r}: the Hub repo is gated; accept its terms on "
                        f"huggingface.co/{repo_id} and log in (hf auth login, or HF_TOKEN)"
                        ) from None
    except errors.RepositoryNotFoundError:
        raise CalcError(f"model {repo_id!r} is not a preset, a file, or a Hub repo calc can "
                        f"see (it may be private: log in with hf auth login, or set HF_TOKEN)"
                        ) from None
    except errors.LocalEntryNotFoundError:
        raise _not_cached(repo_id, filename, "the Hub cannot be reached (HF_HUB_OFFLINE, "
                                             "--offline, or no network)") from None
    except errors.EntryNotFoundError:
        raise CalcError(f"model {repo_id!r}: the Hub repo has no {filename}") from None
    except (errors.HfHubHTTPError, errors.HFValidationError, OSError) as error:
        raise CalcError(f"model {repo_id!r}: the Hub did not give {filename}: "
                        f"{str(error).splitlines()[0]}") from None


def _published(hub: Any, repo_id: str) -> tuple[int | None, str | None]:
    """The Hub's parameter count of the checkpoint, and where it comes from; None without one.
    Missing metadata is not an error: most repos saved before 2025 have no total_parameters."""
    try:
        index = _download(hub, repo_id, "model.safetensors.index.json")
        total = json.loads(index.read_text(encoding="utf-8")).get("metadata", {}).get(
            "total_parameters")
        if isinstance(total, int) and total > 0:
            return total, (f"Hugging Face Hub, {repo_id} model.safetensors.index.json "
                           f"metadata.total_parameters (every stored tensor)")
    except (CalcError, ValueError, AttributeError):
        pass
    if _options()["local_files_only"] or not reachable():
        return None, None
    try:
        counts = hub.get_safetensors_metadata(repo_id).parameter_count
    except Exception:
        return None, None
    total = sum(counts.values())
    return (total, f"Hugging Face Hub, {repo_id} safetensors headers (every stored tensor)"
            ) if total else (None, None)


def fetch(repo_id: str) -> HubConfig:
    """config.json of a Hub repo, through huggingface_hub's cache; one-line CalcError when
    huggingface_hub is missing or the repo is gated, missing or not cached offline."""
    try:
        import huggingface_hub as hub
        import huggingface_hub.errors
    except ImportError:
        raise CalcError(f"model {repo_id!r} looks like a Hugging Face Hub id; reading it needs "
                        f"huggingface_hub: {INSTALL}") from None
    path = _download(hub, repo_id, "config.json")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CalcError(f"model {repo_id!r}: its config.json cannot be read: {error}") from None
    if not isinstance(config, dict):
        raise CalcError(f"model {repo_id!r}: its config.json is not a JSON object")
    published, source = _published(hub, repo_id)
    return HubConfig(repo_id, config, path.parent.name, published, source)

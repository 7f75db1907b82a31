"""A Hugging Face Hub model id where a config.json path goes (calc.hf.hub), never the network.

The fixture lays out a folder as huggingface_hub's cache (models--org--name/refs/main and
snapshots/<commit>/), HF_HUB_CACHE points at it and HF_HUB_OFFLINE=1 keeps every run offline:
what a user has after one online run. Gated and missing repos are the errors huggingface_hub
raises for them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

hub = pytest.importorskip("huggingface_hub")

import huggingface_hub.errors  # noqa: E402

import calc  # noqa: E402
from calc.errors import CalcError  # noqa: E402
from calc.hf.hub import fetch, is_hub_id  # noqa: E402
from tests.hf_released import CONFIGS  # noqa: E402

COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"  # any 40-hex commit id
# The published count the fixture's index carries, as save_pretrained writes it.
INDEX_TOTAL = 8_030_261_248
FORK = "someone/llama-3.1-8b-fork"  # the Llama 3.1 8B config.json under an id no preset cites


def _cache(root, repo_id: str, files: dict[str, str]):
    repo = root / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    for name, text in files.items():
        (snapshot / name).write_text(text)


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    root = tmp_path / "hub"
    llama = (CONFIGS / "llama-3.1-8b.json").read_text()
    index = json.dumps({"metadata": {"total_parameters": INDEX_TOTAL, "total_size": 16e9},
                        "weight_map": {}})
    # a repo no preset cites (meta-llama/Llama-3.1-8B itself maps to the preset llama3.1-8b)
    _cache(root, FORK, {"config.json": llama, "model.safetensors.index.json": index})
    _cache(root, "Qwen/Qwen3-4B", {"config.json": (CONFIGS / "qwen3-4b.json").read_text()})
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root


@pytest.mark.parametrize("name, hub_id", [
    ("meta-llama/Llama-3.1-8B", True), ("Qwen/Qwen3-4B", True), ("llama3-8b", False),
    ("configs/model.json", False), ("a/b/c", False), ("spec.toml", False),
])
def test_what_looks_like_a_hub_id(name, hub_id):
    assert is_hub_id(name) is hub_id


def test_a_hub_id_works_where_a_config_path_does(cli, hub_cache):
    result = cli(FORK, "--tokens", "15e12", "--gpu", "h100", "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["model"] == FORK
    # the same file by path: the same model
    by_path = calc.count_params(calc.spec_from_hf_config(CONFIGS / "llama-3.1-8b.json"))
    assert data["params"]["total"] == by_path.total == 8_030_261_248
    assert data["params"]["published"] == INDEX_TOTAL
    assert "model.safetensors.index.json" in data["params"]["published_source"]
    assert COMMIT[:12] in data["source"]


def test_no_published_count_without_index_metadata(hub_cache):
    fetched = fetch("Qwen/Qwen3-4B")
    assert fetched.published_params is None and fetched.config["model_type"] == "qwen3"
    assert calc.load_model("Qwen/Qwen3-4B").published_params is None


def test_an_id_a_preset_cites_is_the_preset_without_the_hub(cli, monkeypatch, tmp_path):
    """Issue 19: meta-llama/Llama-3.1-8B is the preset citing its config.json, read at once,
    with no cache, offline or not, and huggingface_hub never asked."""
    def refuse(*args, **kwargs):
        raise AssertionError("the Hub was asked")

    monkeypatch.setattr(hub, "hf_hub_download", refuse)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    preset = calc.load_model("meta-llama/Llama-3.1-8B")
    assert preset.name == "llama3.1-8b" and any("cites" in note for note in preset.notes)
    result = cli("meta-llama/Llama-3.1-8B", "--offline", "--format", "json")
    assert result.code == 0 and result.json()["model"] == "llama3.1-8b"


def test_an_unreachable_hub_is_one_line_at_once(cli, monkeypatch, tmp_path):
    """Not cached, not offline, and the Hub does not answer: one line, no retries."""
    import time

    import calc.hf.hub as calc_hub

    monkeypatch.setattr(calc_hub, "reachable", lambda: False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    start = time.perf_counter()
    result = cli("Qwen/Qwen3-8B", "--format", "json")
    assert time.perf_counter() - start < 2
    assert result.code == 2 and result.err.count("\n") == 1
    assert "did not answer within 1.5 s" in result.err


def test_offline_and_not_cached_is_one_line(cli, hub_cache):
    result = cli("Qwen/Qwen3-8B", "--format", "json")
    assert result.code == 2 and result.err.count("\n") == 1
    assert "config.json is not in the Hub cache" in result.err
    assert str(hub_cache) in result.err


def _raising(error_class):
    def download(*args, **kwargs):
        error = error_class.__new__(error_class)  # the Hub's own error, without an HTTP reply
        Exception.__init__(error, "401 Client Error")
        raise error
    return download


@pytest.mark.parametrize("error_class, message", [
    (huggingface_hub.errors.GatedRepoError, "the Hub repo is gated; accept its terms"),
    (huggingface_hub.errors.RepositoryNotFoundError, "is not a preset, a file, or a Hub repo"),
    (huggingface_hub.errors.EntryNotFoundError, "the Hub repo has no config.json"),
])
def test_gated_and_missing_repos_are_one_line(cli, monkeypatch, error_class, message):
    monkeypatch.setattr(hub, "hf_hub_download", _raising(error_class))
    result = cli("someone/private-model", "--format", "json")
    assert result.code == 2 and result.err.count("\n") == 1 and message in result.err


def test_without_huggingface_hub_the_line_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails
    with pytest.raises(CalcError, match=r"needs huggingface_hub: pip install 'calc\[hub\]'"):
        calc.load_model("someone/private-model")


def test_the_main_path_does_not_import_huggingface_hub():
    code = ("import sys, calc; calc.load_model('llama3-8b'); "
            "assert 'huggingface_hub' not in sys.modules, 'imported'")
    subprocess.run([sys.executable, "-c", code], check=True)

"""Find, list and load presets (presets/models/*.toml, presets/gpus.toml,
presets/unreproduced.toml, published runs in presets/published/) and spec files.

A model is named by a preset (the file stem, e.g. `llama2-7b`) or by a path to a spec file: TOML
or JSON holding either the spec's fields at top level or a preset's layout (`[spec]` plus
`title`, `source`, `[published.*]`), or a Hugging Face config.json (a JSON object with a
`model_type`, read by calc.hf). Unknown names get a "did you mean".
"""

from __future__ import annotations

import importlib
import os
import tomllib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError

from calc.errors import CalcError, UnknownNameError, one_line
from calc.files import read_mapping
from calc.spec import GPU, Dtype, ModelSpec, StorageDtype, System
from calc.spec.base import per_instance
from calc.spec.model import Frozen
from calc.spec.trusted import trusted

if TYPE_CHECKING:  # the published-run schemas load with the runs, not with every preset
    from calc.spec.finetune_runs import PublishedFinetune
    from calc.spec.serving import PublishedServing
    from calc.spec.throughput import PublishedThroughput

DATA_PACKAGE = "calc.preset_data"  # the top-level presets/ folder, shipped as package data


class PublishedParams(Frozen):
    """A parameter count as published, with where it comes from."""

    value: float = Field(gt=0, description="the published count")
    tolerance: float = Field(
        0, ge=0, lt=1, description="relative tolerance where the source rounds; 0 when exact")
    buffers: int = Field(0, ge=0, description="non-parameter values the published total includes")
    source: str = Field(min_length=1)


# How well a published figure is confirmed, strongest first: read in the primary source, in a
# verbatim transcription of it, in two secondary sources, in one; derived from published
# figures; or not confirmed at all.
Confidence = Literal["confirmed_primary", "confirmed_transcription", "confirmed_secondary",
                     "secondary_single", "derived", "unconfirmed"]


class PublishedRun(Frozen):
    """A published training run of the model: tokens, hardware and its cost."""

    tokens: float = Field(gt=0)
    gpu: str | None = Field(
        None, description="GPU catalogue name whose dense peak prices the run; None when the "
                          "source does not say which accelerator (Chinchilla: 'TPUv3/TPUv4')")
    accelerator: str = Field(
        "", description="the accelerator as the source names it, when that says more than the "
                        "catalogue name (A100-SXM4-40GB, TPU v4 chips)")
    dtype: Dtype = "bf16"
    gpus: int | None = Field(None, ge=1)
    gpu_hours: float | None = Field(None, gt=0)
    flops: float | None = Field(None, gt=0, description="total training FLOPs as reported")
    mfu: float | None = Field(None, gt=0, le=1, description="MFU as reported")
    mfu_convention: str = Field("", description="how the reported MFU was counted")
    scope: str = Field("", description="what the GPU-hours cover")
    confidence: Confidence | None = Field(
        None, description="how well the run's figures are confirmed")
    source: str = Field(min_length=1)


class Preset(Frozen):
    """A model spec with its provenance and published facts."""

    name: str
    title: str
    source: str
    spec: ModelSpec
    published_params: PublishedParams | None = None
    training: PublishedRun | None = None
    hf_config: dict[str, Any] | None = Field(
        None, description="the Hugging Face config.json it was read from, if any")
    notes: tuple[str, ...] = Field(
        (), description="what reports say about the model beyond its counts: how its source was "
                        "read where that is an assumption (a config.json: the context used and "
                        "why, the fields transformers' defaults filled, a multimodal model's "
                        "towers left out, a quantized checkpoint's storage)")
    weights_dtype: StorageDtype | None = Field(
        None, description="how the checkpoint stores its weights (its quantization_config); "
                          "infer's default weight dtype")
    weights_compute_dtype: Dtype | None = Field(
        None, description="the dtype whose peak runs those weights' matmuls (dequantized: bf16)")


@cache
def _data_dir() -> Path:
    """presets/, installed as the package calc.preset_data (a folder of data files: the package
    is its one path; importlib.resources would import zipfile and tempfile to say so); in a
    source checkout that was never installed (`python -m calc` run from the repository root),
    the folder itself."""
    try:
        return Path(next(iter(importlib.import_module(DATA_PACKAGE).__path__)))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[1] / "presets"


@cache  # a listing per process: estimate() by name must not re-list the folder on every call
def _model_files() -> dict[str, Path]:
    folder = _data_dir() / "models"  # listed, not globbed: pathlib's glob costs more (start-up)
    return {name.removesuffix(".toml"): folder / name
            for name in sorted(os.listdir(folder)) if name.endswith(".toml")}


def list_presets() -> list[str]:
    """Preset names, sorted."""
    return list(_model_files())


def _preset_from_mapping(name: str, data: dict[str, Any], where: str,
                         shipped: bool = False) -> Preset:
    """The preset a preset file or a spec file holds; one calc ships (`shipped`, validated by
    the test suite) is built without validating it again (calc.spec.trusted)."""
    if "spec" not in data:  # a bare spec file: its fields at top level
        data = {"title": name, "source": where, "spec": data}
    spec_data = data.get("spec")
    if not isinstance(spec_data, dict):
        raise CalcError(f"{where}: 'spec' must be a table of spec fields")
    published = data.get("published", {})
    try:
        fields = {"name": name, "title": data.get("title", name),
                  "source": data.get("source", where), "spec": {"name": name, **spec_data},
                  "published_params": published.get("params"),
                  "training": published.get("training")}
        if shipped:
            return trusted(Preset, fields)
        return Preset(**{**fields, "spec": ModelSpec.model_validate(fields["spec"])})
    except ValidationError as error:
        raise CalcError(one_line(error, where)) from None
    except AttributeError:
        raise CalcError(f"{where}: 'published' must be a table") from None


def _preset_name(name: str) -> str:
    """The preset `name` means, matched without case like GPU names (Llama2-7B → llama2-7b);
    `name` itself when none matches."""
    files = _model_files()
    if name in files:
        return name
    return {stem.lower(): stem for stem in files}.get(name.lower(), name)


@cache
def load_preset(name: str) -> Preset:
    files = _model_files()
    name = _preset_name(name)
    if name not in files:
        raise UnknownNameError("model", name, files, "python -m calc list")
    return _preset_from_mapping(name, read_mapping(files[name]), f"preset {name}", shipped=True)


@cache
def _sources() -> dict[str, str]:
    """{preset: its model source, lower case}, read from the TOML text alone (no spec built:
    a Hub id maps to its preset at start-up speed)."""
    found = {}
    for name, path in _model_files().items():
        top = tomllib.loads(path.read_text(encoding="utf-8"))
        found[name] = str(top.get("source", "")).lower()
    return found


def preset_for_hub_id(model_id: str) -> str | None:
    """The preset whose source cites the Hugging Face checkpoint `model_id`'s config.json
    ('org/name config.json'), or one citing the same name under another organisation (a
    mirror such as NousResearch's); None when no preset does."""
    wanted = model_id.strip().lower()
    name = wanted.rpartition("/")[2]
    mirror = None
    for preset, source in _sources().items():
        if f"{wanted} config.json" in source:
            return preset
        if mirror is None and f"/{name} config.json" in source:
            mirror = preset
    return mirror


def preset_for_shape(layers: int, d_model: int, heads: int, kv_heads: int | None = None,
                     experts: int | None = None) -> str | None:
    """The one preset with this shape (layers, width, heads, and KV heads and routed experts
    where given), or None when none or several match (a trainer file that names no checkpoint
    is matched by what it builds)."""
    found = []
    for name in list_presets():
        spec = load_preset(name).spec
        if (spec.n_layers, spec.d_model, spec.attention.n_heads) != (layers, d_model, heads):
            continue
        if kv_heads is not None and spec.attention.n_kv_heads != kv_heads:
            continue
        if experts is not None and (spec.moe.n_experts if spec.moe else 0) != experts:
            continue
        found.append(name)
    return found[0] if len(found) == 1 else None


def _is_hf_config(data: dict[str, Any]) -> bool:
    """A Hugging Face config.json: it names a model_type (a spec has no such field)."""
    return "model_type" in data and "spec" not in data


def _storage(config: dict[str, Any]) -> dict[str, Any]:
    """How a config.json's checkpoint stores its weights, as Preset fields."""
    from calc.hf.quantization import quantization

    stored = quantization(config)
    return {"hf_config": config, "weights_dtype": stored and stored.dtype,
            "weights_compute_dtype": stored and stored.dtype and stored.compute}


def _preset_from_hf_config(path: Path, data: dict[str, Any]) -> Preset:
    from calc.hf import default_name  # only when such a file is given

    return preset_from_data(data, default_name(path), f"config file {str(path)!r}", str(path))


def preset_from_data(data: dict[str, Any], name: str, where: str, source: str) -> Preset:
    """The preset of a mapping already read (calc.web's pasted text): a Hugging Face
    config.json's or a spec file's; `where` names it in errors, `source` in the report."""
    if not _is_hf_config(data):
        return _preset_from_mapping(name, data, where)
    from calc.hf import read_hf  # only when a config.json is given

    read = read_hf(data, name=name, where=where)
    title = f"Hugging Face config.json, model_type {data['model_type']}"
    return Preset(name=name, title=title, source=source, spec=read.spec, notes=read.notes,
                  **_storage(data))


def _preset_from_hub(repo_id: str) -> Preset:
    from calc.hf import read_hf
    from calc.hf.hub import fetch  # huggingface_hub only on this path

    hub = fetch(repo_id)
    read = read_hf(hub.config, name=repo_id, where=f"model {repo_id!r} config.json")
    published = hub.published_params and PublishedParams(value=hub.published_params,
                                                         source=hub.published_source)
    title = f"Hugging Face Hub {repo_id}, model_type {hub.config.get('model_type')}"
    return Preset(name=repo_id, title=title, source=hub.source, spec=read.spec,
                  published_params=published, notes=read.notes, **_storage(hub.config))


def resolve(model: str | os.PathLike[str] | ModelSpec | Preset) -> Preset:
    """A Preset for a preset name, spec file path, ModelSpec or Preset."""
    if isinstance(model, Preset):
        return model
    if isinstance(model, ModelSpec):
        return _custom(model)
    return load_model(model)  # which refuses what is not a name or a path


@per_instance
def _custom(spec: ModelSpec) -> Preset:
    """A spec as a Preset, kept with the spec; not validated again (it was when it was built)."""
    return Preset.model_construct(name=spec.name, title=spec.name, source="custom spec",
                                  spec=spec)


def sequence_length(spec: ModelSpec, seq_len: int | None, flag: str = "--seq-len") -> int:
    """`seq_len`, default the model's training context; an error past a learned position table
    (`flag` names the option to change)."""
    t = seq_len or spec.context_length
    if spec.position_table and t > spec.position_table:
        name = flag.removeprefix("--").replace("-", "_")
        raise CalcError(f"{name}={t} exceeds {spec.name}'s learned position table of "
                        f"{spec.position_table} rows; use {flag} <= {spec.position_table}")
    return t


def context_note(spec: ModelSpec, t: int, what: str = "T") -> str | None:
    """A sentence when context `t` is past the context the model was trained for (its
    context_length), else None: the arithmetic holds at any T, the model was not made for it."""
    if t <= spec.context_length:
        return None
    ratio = t / spec.context_length
    times = f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:.2g}"
    return (f"{what} = {t:,} is {times}× the {spec.context_length:,}-"
            f"token context {spec.name} was trained for: calc counts the arithmetic at any T, "
            f"but the model was not trained to work there.")


def load_model(model: str) -> Preset:
    """A preset by name, a spec file (TOML or JSON), a Hugging Face config.json by path, or a
    Hugging Face Hub model id (org/name, calc.hf.hub)."""
    if not isinstance(model, str) and isinstance(model, os.PathLike):
        model = os.fspath(model)
    if not isinstance(model, str) or not model.strip():
        raise CalcError(f"model={model!r}: expected a preset name (python -m calc list), a spec "
                        f"or config.json path, a ModelSpec or a Preset")
    if _preset_name(model) in _model_files() and not os.path.exists(model):
        return load_preset(model)
    path = Path(model)
    looks_like_path = path.suffix.lower() in (".toml", ".json") or "/" in model or "\\" in model
    from calc.hf.hub import is_hub_id  # no huggingface_hub import: a name check

    if is_hub_id(model):
        known = preset_for_hub_id(model)  # a preset holds this checkpoint's config: offline
        if known is None:
            return _preset_from_hub(model)
        preset = load_preset(known)
        return preset.model_copy(update={"notes": (
            *preset.notes, f"{model}: the preset {known} cites this checkpoint's config.json "
                           f"(read without the Hub).")})
    if path.exists() or looks_like_path:
        data = read_mapping(path)
        if _is_hf_config(data):
            return _preset_from_hf_config(path, data)
        return _preset_from_mapping(path.stem, data, f"spec file {str(path)!r}")
    return load_preset(model)  # raises UnknownNameError with suggestions


class UnreproducedRun(Frozen):
    """A published training run calc leaves out of `reproduce`, and why."""

    run: str = Field(min_length=1, description="the run as the literature names it")
    reason: str = Field(min_length=1, description="why calc does not reproduce it")
    source: str = Field(min_length=1, description="where its figures were looked for")


@cache
def load_unreproduced() -> tuple[UnreproducedRun, ...]:
    """presets/unreproduced.toml: published runs without a preset, each with its reason."""
    data = tomllib.loads((_data_dir() / "unreproduced.toml").read_text(encoding="utf-8"))
    return tuple(UnreproducedRun.model_validate(entry) for entry in data.values())


@cache
def _gpu_tables() -> dict[str, str]:
    """presets/gpus.toml cut at its table headers (`[a100]` at the start of a line): {name: the
    TOML text of its table}. A GPU is read from its own table: tomllib takes longer over the
    whole catalogue than the main command takes to draw its tables (bench/startup.py).
    tests/test_hardware.py checks that the tables read one by one are the file read whole."""
    text = (_data_dir() / "gpus.toml").read_text(encoding="utf-8")
    tables = {}
    for chunk in text.split("\n[")[1:]:  # [0]: the comments above the first table
        header, _, body = chunk.partition("\n")
        tables[header.removesuffix("]")] = body
    return tables


@cache
def _catalogue_gpu(name: str) -> GPU:
    """One catalogue entry as a GPU, built once: `get_gpu` builds the one asked for, not the
    whole catalogue (start-up), and `load_gpus` returns the same objects."""
    return trusted(GPU, {"name": name, **tomllib.loads(_gpu_tables()[name])})


@cache
def load_gpus() -> dict[str, GPU]:
    return {name: _catalogue_gpu(name) for name in _gpu_tables()}


def gpu_for_device(device_name: str) -> GPU | None:
    """The catalogue GPU whose `device_name` words all appear in `device_name` (the most
    specific such entry), or None."""
    upper = device_name.upper()
    matches = [gpu for gpu in load_gpus().values()
               if gpu.device_name and all(w.upper() in upper for w in gpu.device_name)]
    return max(matches, key=lambda gpu: (len(gpu.device_name), sum(map(len, gpu.device_name))),
               default=None)


def gpu_from_file(path: str) -> GPU:
    """A user's GPU described in a TOML file in the catalogue's schema (presets/gpus.toml's
    fields, one GPU, no table header); its name is the file's stem. One line naming the file
    and the field otherwise."""
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise CalcError(f"gpu={path}: cannot read the file ({error.strerror})") from None
    except tomllib.TOMLDecodeError as error:
        raise CalcError(f"gpu={path}: not valid TOML ({error})") from None
    try:
        return GPU.model_validate({"name": file.stem, **data})
    except ValidationError as error:
        raise CalcError(one_line(error, f"gpu={path}")) from None


def get_gpu(name: str) -> GPU:
    gpus = _gpu_tables()
    if not isinstance(name, str):
        raise CalcError(f"gpu={name!r}: expected a GPU catalogue name (python -m calc gpus)")
    if name.endswith(".toml"):
        return gpu_from_file(name)
    key = name.lower()
    if key not in gpus:
        raise UnknownNameError("GPU", name, gpus, "python -m calc gpus")
    return _catalogue_gpu(key)


@cache
def load_systems() -> dict[str, System]:
    """presets/systems.toml: named platforms (DGX H100, GB200 NVL72, TPU pods) by key."""
    data = tomllib.loads((_data_dir() / "systems.toml").read_text(encoding="utf-8"))
    return {name: System.model_validate({"name": name, **entry}) for name, entry in data.items()}


def get_system(name: str) -> System:
    systems = load_systems()
    key = name.lower()
    if key not in systems:
        raise UnknownNameError("system", name, systems, "python -m calc gpus")
    return systems[key]


def system_for_gpu(gpu_name: str) -> System:
    """The reference platform a GPU entry names in its `system` field (a100 → dgx-a100)."""
    gpu = get_gpu(gpu_name)
    if gpu.system is None:
        raise CalcError(f"gpu {gpu.name!r} has no reference system in the catalogue; name one "
                        f"with --system (python -m calc gpus lists them)")
    return get_system(gpu.system)


def _load_published(kind: str, schema: type[Frozen], what: str) -> dict[str, Any]:
    """presets/published/<kind>/*.toml, one file per publisher: each table an entry of
    `schema` keyed by its name; a bad entry is one line naming it and the field."""
    runs: dict[str, Any] = {}
    for path in sorted((_data_dir() / "published" / kind).glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for name, entry in data.items():
            if name in runs:
                raise CalcError(f"{what} {name}: defined twice ({path.name})")
            try:
                runs[name] = schema.model_validate({"name": name, **entry})
            except ValidationError as error:
                raise CalcError(one_line(error, f"{what} {name}")) from None
    return runs


@cache
def load_throughput_runs() -> dict[str, PublishedThroughput]:
    """presets/published/step/*.toml: published runs with their layout and measured throughput,
    one file per publisher."""
    from calc.spec.throughput import PublishedThroughput

    return _load_published("step", PublishedThroughput, "throughput run")


@cache
def load_finetune_runs() -> dict[str, PublishedFinetune]:
    """presets/published/finetune/*.toml: published fine-tuning runs with their settings and
    measured peak memory, speed or longest fitting sequence, one file per publisher."""
    from calc.spec.finetune_runs import PublishedFinetune

    return _load_published("finetune", PublishedFinetune, "fine-tuning run")


@cache
def load_serving_runs() -> dict[str, PublishedServing]:
    """presets/published/serving/*.toml: published serving benchmarks with their settings and
    measured figures, one file per publisher."""
    from calc.spec.serving import PublishedServing

    return _load_published("serving", PublishedServing, "serving run")

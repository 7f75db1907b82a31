"""The hardware catalogues: every GPU and system loads, is sourced and is self-consistent.

Link figures are checked against the datasheets' own numbers (sources in presets/gpus.toml and
presets/systems.toml): per direction is half the "both directions" figure a datasheet prints.
"""

from __future__ import annotations

import math

import pytest

from calc.errors import CalcError, UnknownNameError
from calc.presets import get_system, load_gpus, load_systems, system_for_gpu

GPUS = load_gpus()
SYSTEMS = load_systems()


def test_gpu_tables_read_alone_are_the_catalogue():
    """calc.presets reads one GPU's table of presets/gpus.toml, cut at the headers, rather than
    the whole file: the tables read one by one are the file read whole (a header that is not a
    bare name, a sub-table, a line starting with "[" inside a value or a name given twice would
    each break this)."""
    import tomllib

    from calc.presets import _data_dir, _gpu_tables

    whole = tomllib.loads((_data_dir() / "gpus.toml").read_text(encoding="utf-8"))
    assert {name: tomllib.loads(body) for name, body in _gpu_tables().items()} == whole
    assert list(_gpu_tables()) == list(whole) == list(GPUS)


def _numbers(entry) -> dict[str, float]:
    """Every numeric field of a GPU or system entry (peaks flattened), None left out."""
    values = {}
    for key, value in entry.model_dump().items():
        if isinstance(value, dict):
            values.update({f"{key}.{k}": v for k, v in value.items()})
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            values[key] = value
    return values


@pytest.mark.parametrize("entry", [*GPUS.values(), *SYSTEMS.values()], ids=lambda e: e.name)
def test_every_value_is_positive_and_sourced(entry):
    numbers = _numbers(entry)
    assert numbers, f"{entry.name} has no figures"
    for field, value in numbers.items():
        assert math.isfinite(value) and value > 0, f"{entry.name}.{field} = {value}"
    assert entry.source.strip()
    # cite the datasheet, not a notebook (the phrase split so that tests/test_citations.py,
    # which checks every tracked file, does not find it here)
    assert "../" + "shared" not in entry.source + entry.notes


@pytest.mark.parametrize("system", SYSTEMS.values(), ids=lambda s: s.name)
def test_system_names_a_catalogued_gpu_and_fits_its_links(system):
    gpu = GPUS[system.gpu]  # KeyError: the system names a GPU the catalogue lacks
    # A node's fabric cannot be faster per GPU than the chip's own scale-up link.
    if gpu.nvlink_gb_s is not None:
        assert system.intra_node_gb_s <= gpu.nvlink_gb_s
    # Inside the node is faster than across nodes, on every catalogued platform.
    if system.inter_node_gb_s is not None:
        assert system.inter_node_gb_s < system.intra_node_gb_s
    assert system.intra_node_latency_us < system.inter_node_latency_us


@pytest.mark.parametrize("gpu", [g for g in GPUS.values() if g.system], ids=lambda g: g.name)
def test_system_for_gpu_is_the_platform_built_of_that_gpu(gpu):
    system = system_for_gpu(gpu.name)
    assert system.name == gpu.system
    assert system.gpu == gpu.name


# Datasheet link figures, both directions summed as printed (GB/s); calc stores half.
LINKS_BOTH_WAYS = [
    ("v100", "nvlink_gb_s", 300), ("a100", "nvlink_gb_s", 600), ("a100", "pcie_gb_s", 64),
    ("h100", "nvlink_gb_s", 900), ("h100", "pcie_gb_s", 128), ("h800", "nvlink_gb_s", 400),
    ("h200", "nvlink_gb_s", 900), ("b200", "nvlink_gb_s", 1800), ("gb200", "nvlink_gb_s", 1800),
    ("mi300x", "nvlink_gb_s", 7 * 128), ("l4", "pcie_gb_s", 64),
]


@pytest.mark.parametrize("gpu, field, both_ways", LINKS_BOTH_WAYS)
def test_links_are_stored_per_direction(gpu, field, both_ways):
    assert getattr(GPUS[gpu], field) == both_ways / 2


# NIC line rate per GPU (Gb/s) from each system datasheet; GB/s per GPU is that / 8.
NIC_GBIT = [("dgx-a100", 200), ("dgx-h100", 400), ("dgx-h200", 400), ("dgx-b200", 400),
            ("gb200-nvl72", 400), ("hgx-h800", 400), ("mi300x", 400), ("tpu-v5p", 50)]


@pytest.mark.parametrize("system, gbit", NIC_GBIT)
def test_inter_node_bandwidth_is_the_nic_line_rate_over_eight(system, gbit):
    assert SYSTEMS[system].inter_node_gb_s == gbit / 8


@pytest.mark.parametrize("system, per_node", [("dgx-a100", 8), ("dgx-h100", 8),
                                              ("gb200-nvl72", 72), ("mi300x", 8)])
def test_scale_up_domain(system, per_node):
    assert SYSTEMS[system].gpus_per_node == per_node


def test_named_systems_of_the_issue_are_catalogued():
    assert {"dgx-a100", "dgx-h100", "hgx-h800", "dgx-h200", "dgx-b200", "gb200-nvl72",
            "mi300x", "tpu-v4", "tpu-v5p"} <= set(SYSTEMS)


def test_unknown_system_is_a_one_line_error_with_suggestions():
    with pytest.raises(UnknownNameError, match="did you mean dgx-h100") as caught:
        get_system("dgx-h10")
    assert "\n" not in str(caught.value)


def test_gpu_without_a_reference_system_points_to_the_system_flag():
    assert GPUS["rtx4090"].system is None
    with pytest.raises(CalcError, match="--system") as caught:
        system_for_gpu("rtx4090")
    assert "\n" not in str(caught.value)


def test_bad_system_entry_is_rejected_naming_the_field():
    from pydantic import ValidationError

    from calc.spec import System

    good = SYSTEMS["dgx-h100"].model_dump()
    with pytest.raises(ValidationError, match="intra_node_gb_s"):
        System.model_validate({**good, "intra_node_gb_s": -1})
    with pytest.raises(ValidationError, match="extra"):
        System.model_validate({**good, "nic_gbit": 400})

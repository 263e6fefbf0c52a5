"""Every registered component and preset - the core's and every installed plugin's - passes the kit.

This is the project-wide ledger test: for each component, on several
histogram shapes, the ledger never exceeds epsilon, each spending stage is
charged exactly its share (charged = used), and releases are reproducible.
"""
import pytest

from dphist import default_registry, testing

COMPONENT_KINDS = ("initializer", "sorter", "partitioner", "finalizer")
components = [(e.kind, e.name) for e in default_registry.entries() if e.kind in COMPONENT_KINDS]
presets = default_registry.names("algorithm")
unavailable = default_registry.unavailable("algorithm")   # need a plugin that is not installed


def test_no_broken_plugins():
    assert default_registry.check() == []


@pytest.mark.parametrize("kind, name", components, ids=[f"{k}:{n}" for k, n in components])
def test_component_conformance(kind, name):
    testing.check_component(default_registry.get(kind, name))


@pytest.mark.parametrize("name", presets)
def test_preset_conformance(name):
    if name in unavailable:
        pytest.skip(f"{name} {unavailable[name]}")
    testing.check_algorithm(name)

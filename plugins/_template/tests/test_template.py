"""The template's tests: every component passes the conformance kit, every preset the algorithm
kit.  Copy them with the template and add the paper's own claims (each test names the mutation
it kills)."""
from dphist import default_registry, register, testing
from dphist_template.components import FixedWidthPartitioner, equiwidth


def test_conformance():
    """Kills: an unstored parameter, global randomness, reading data outside ctx.data, a broken
    contract on sorted bins (dphist.testing.check_component)."""
    testing.check_component(FixedWidthPartitioner)


def test_preset_conformance():
    """Kills: a preset that leaves budget unspent, over-spends, or is not reproducible for a seed
    (dphist.testing.check_algorithm).  Installed, the entry point registers the preset; the template
    itself is not installed, so it is registered here at runtime."""
    if equiwidth.name not in default_registry.names("algorithm"):
        register(equiwidth)
    testing.check_algorithm(equiwidth.name)

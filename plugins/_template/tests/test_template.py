from dphist import testing
from dphist_template.components import FixedWidthPartitioner


def test_conformance():
    testing.check_component(FixedWidthPartitioner)

import pytest

from tests.integration import components


@pytest.fixture(autouse=True)
def clean_record():
    """Every test starts with an empty record and no injected faults (components are shared)."""
    components.reset()
    components.FAULTS.clear()
    yield
    components.reset()
    components.FAULTS.clear()

import pytest

from tests.integration import components


@pytest.fixture(autouse=True)
def clean_record():
    components.reset()
    components.FAULTS.clear()
    yield
    components.reset()
    components.FAULTS.clear()

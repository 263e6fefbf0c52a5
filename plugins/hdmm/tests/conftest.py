"""Shared fixtures of dphist-hdmm's tests."""
import pytest

from dphist_hdmm import clear_memory_cache


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Every test gets an empty cache folder and an empty memory cache."""
    monkeypatch.setenv("DPHIST_CACHE_DIR", str(tmp_path / "cache"))
    clear_memory_cache()
    yield
    clear_memory_cache()

"""Shared pytest setup."""


def pytest_configure(config):
    # Registered here because pyproject.toml belongs to the skeleton; move it there if preferred.
    config.addinivalue_line("markers", "prefect: runs a Prefect flow (starts a temporary Prefect server, 10-30 s)")

"""The one check that the optional `crs` extra is installed, so CRS commands fail with one line, not a traceback."""

from __future__ import annotations

import importlib

from ecombench.errors import SettingError

# What each CRS feature imports from the crs extra (pyproject.toml [project.optional-dependencies] crs).
CRS_MODULES = {"dialoguekit": "dialoguekit.core.dialogue", "choix": "choix"}


def require_crs_extra(needed_by: str, *packages: str) -> None:
    """Check that the crs extra's `packages` (keys of CRS_MODULES) import.

    Args:
        needed_by: what needs them, as the message names it ("ecombench export").
        *packages: the packages to check (every one of the extra's when none is given).

    Raises:
        SettingError: one is missing (one line naming it and the install command).
    """
    missing = []
    for name in packages or tuple(CRS_MODULES):
        try:
            importlib.import_module(CRS_MODULES[name])
        except ImportError:
            missing.append(name)
    if missing:
        raise SettingError(f"{needed_by} needs {', '.join(missing)} from the crs extra: install ecombench[crs] "
                           "(uv pip install 'ecombench[crs]', or pip install 'ecombench[crs]')")

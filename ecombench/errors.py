"""The errors a user can cause and fix: one base class and a few kinds, each a one-line message.

Anything raised under `EcombenchError` is the user's to fix (a setting, an input file, an output
that already exists, a server that cannot be reached): the CLI prints its message as one
`error: ...` line and exits 1. Every other exception is a bug in ecombench and crashes with its
traceback. A message names the file, record or setting it is about, so the line alone says what
to change. This module sits in stages/ so that flows/, stages/, validation/ and sandbox/ can all
raise these without importing upward.
"""

from __future__ import annotations


class EcombenchError(Exception):
    """Something the user caused and can fix; its message is one line naming the file, record or setting.

    Example:
        >>> raise SettingError("--workers must be at least 1, got 0")
        Traceback (most recent call last):
        ...
        ecombench.errors.SettingError: --workers must be at least 1, got 0
    """


class SettingError(EcombenchError):
    """A command-line option, build-config value, environment variable or data-table entry is wrong or missing."""


class InputError(EcombenchError):
    """An input cannot be used: a file, catalog snapshot, split version or record is missing or malformed."""


class OutputError(EcombenchError):
    """An output cannot be written: it already exists (nothing is ever overwritten) or its place is not writable."""


class ServerError(EcombenchError):
    """A server the run needs (the Dask scheduler, an OpenAI-compatible LLM server) cannot be reached."""

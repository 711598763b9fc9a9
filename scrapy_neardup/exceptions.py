"""One root exception; subclasses carry the context a user needs to act."""

from __future__ import annotations


class NearDupError(Exception):
    """Root of every error this package raises on purpose."""


class ConfigError(NearDupError, ValueError):
    """A setting has a value that is not allowed.

    The message names the setting, the value given and what is allowed.
    """

    def __init__(self, setting: str, value: object, allowed: str) -> None:
        self.setting = setting
        self.value = value
        self.allowed = allowed
        super().__init__(f"{setting}={value!r} is not allowed: {allowed}")


class InvalidURL(NearDupError, ValueError):
    """A URL cannot be canonicalised (unparsable, bad port, no scheme, not a string).

    ``url`` is the value given and ``reason`` says what is wrong with it.
    """

    def __init__(self, url: object, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(f"invalid URL {url!r:.300}: {reason}")


class StateError(NearDupError):
    """Saved state cannot be read: wrong format, other version, other parameters or corrupt."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class StorageError(NearDupError):
    """The storage backend (e.g. Redis) failed or went away."""

"""What a validated config builds: the backend and the store factory of a memory state.

Promises: :func:`backend_from_config` builds the configured backend or raises a
:class:`~scrapy_neardup.exceptions.ConfigError` naming ``NEARDUP_BACKEND_PARAMS``;
:func:`stores_from_config` gives the deduplicator its stores. Reading and checking settings is
:mod:`scrapy_neardup.config`'s job, not this module's. Rationale: ``docs/design.md#backends``,
``docs/design.md#memory-store``, ``docs/design.md#lshbloom``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_neardup.exceptions import ConfigError

if TYPE_CHECKING:
    from scrapy_neardup.backends.base import Backend
    from scrapy_neardup.config import NearDupConfig
    from scrapy_neardup.deduplicator import StoreFactory

__all__ = ["backend_from_config", "stores_from_config"]


def backend_from_config(config: NearDupConfig) -> Backend:
    """The configured backend, with ``NEARDUP_BACKEND_PARAMS`` and the settings it takes; a
    ConfigError when the backend refuses them, ``NEARDUP_SIMILARITY`` or ``NEARDUP_INDEX``."""
    from scrapy_neardup.backends import make_backend

    try:
        backend = make_backend(config.backend, **config.backend_kwargs())
    except (TypeError, ValueError) as exc:
        raise ConfigError("NEARDUP_BACKEND_PARAMS", config.backend_params, str(exc)) from None
    if config.similarity is not None:
        try:
            backend.check_similar(config.similarity)
        except ValueError as exc:
            raise ConfigError("NEARDUP_SIMILARITY", config.similarity, str(exc)) from None
    if config.index == "lshbloom" and not backend.lshbloom:
        allowed = f"'buckets' with NEARDUP_BACKEND={config.backend!r} (LSHBloom keeps MinHash's"
        raise ConfigError("NEARDUP_INDEX", "lshbloom", allowed + " bands; use 'minhash')")
    if config.index == "lshbloom" and config.storage == "redis":
        allowed = "'buckets' with NEARDUP_STORAGE='redis' (LSHBloom is a memory index)"
        raise ConfigError("NEARDUP_INDEX", "lshbloom", allowed)
    return backend


def stores_from_config(config: NearDupConfig) -> StoreFactory:
    """The deduplicator's store factory for a memory state: LSHBloom for the backend's index
    when ``NEARDUP_INDEX`` says so, the compact memory store for everything else."""
    from scrapy_neardup.storage.lshbloom import LSHBloomStore
    from scrapy_neardup.storage.memory import MemoryBucketStore

    def make(name: str, codec: Any) -> Any:
        if config.index == "lshbloom" and name != "exact":
            return LSHBloomStore(codec, window=config.lshbloom_window)
        return MemoryBucketStore(codec=codec)

    return make

"""Errors every stage shares the meaning of."""


class ModelUnavailable(RuntimeError):
    """A stage's model (weights, runtime, device) cannot be had here. Permanent for this node:
    the engine dead-letters the shard at once with this message instead of retrying it, and
    ``onsei run`` stops the stage (docs/architecture.md)."""


class ConfigError(ValueError):
    """The configuration cannot be read (e.g. ``ONSEI_CONFIG`` names no file)."""

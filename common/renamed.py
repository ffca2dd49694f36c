"""Settings under their former names: still read, with a warning naming the new one.

Every field of a stage's section carries the section's prefix (``asr_``, ``enhance_``,
``quality_``, ...: ``Settings.prefixes``). Fields that had none were renamed; their old names
stay accepted as ``ONSEI_*`` variables, YAML keys and keyword arguments, so a deployment
written against them keeps its values. Each use warns once per process (``RenamedSetting``, a
``FutureWarning``: shown by default). An old and a new name given together for one field is
an error, whichever source each comes from, since one of them would be ignored silently.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource

from common.errors import ConfigError

ENV_PREFIX = "ONSEI_"


class RenamedSetting(FutureWarning):
    """A setting was given under a former name."""


def renames_of(cls: type) -> dict[str, str]:
    """Old name -> new name, for every section ``cls`` joins (each declares its own)."""
    out: dict[str, str] = {}
    for c in reversed(cls.__mro__):
        out.update(c.__dict__.get("renamed", {}))
    return {old: new for old, new in out.items() if new in getattr(cls, "model_fields", {})}


def _warn(old: str, new: str, where: str) -> None:
    # the warnings filter shows each message once per process
    warnings.warn(f"{where} is a former name of ONSEI_{new.upper()} (YAML key {new}): it is "
                  f"still read, but rename it", RenamedSetting, stacklevel=4)


def _env_name(name: str) -> str:
    return ENV_PREFIX + name.upper()


def translated(data: Mapping[str, Any], renames: Mapping[str, str],
               where: str) -> dict[str, Any]:
    """``data`` with each old key under its new name; ``where`` says what held it ("YAML key",
    "keyword"). Refuses a field given under both names."""
    out = dict(data)
    for old, new in renames.items():
        if old not in out:
            continue
        if new in out:
            raise ConfigError(f"{where} {old} and {new} both set ONSEI_{new.upper()} ({old} is its "
                             f"former name): keep only {new}")
        _warn(old, new, f"{where} {old}")
        out[new] = out.pop(old)
    return out


class FormerNames(PydanticBaseSettingsSource):
    """Another source (keyword arguments, the YAML file) with its old keys renamed."""

    def __init__(self, settings_cls: type[BaseSettings], inner: PydanticBaseSettingsSource,
                 where: str) -> None:
        super().__init__(settings_cls)
        self._inner, self._where = inner, where

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return translated(self._inner(), renames_of(self.settings_cls), self._where)


class FormerEnvNames(PydanticBaseSettingsSource):
    """``ONSEI_<old name>`` variables, handed on under the new field name. Placed after the
    environment's own source, so a new variable given too is caught (both set: an error)."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        self._renames = renames_of(settings_cls)
        # the variables as pydantic-settings reads the current names (their case folded)
        self._env = EnvSettingsSource(settings_cls).env_vars

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for old, new in self._renames.items():
            value = self._env.get(_env_name(old).lower())
            if value is None:
                continue
            if _env_name(new).lower() in self._env:
                raise ConfigError(f"{_env_name(old)} and {_env_name(new)} are both set "
                                 f"({_env_name(old)} is its former name): keep only "
                                 f"{_env_name(new)}")
            _warn(old, new, _env_name(old))
            out[new] = value
        return out

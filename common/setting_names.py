"""Settings that cannot be mistyped silently: every ``ONSEI_*`` environment name and every key of
the ``ONSEI_CONFIG`` file is a setting (or a former name of one, common/renamed.py), or a name
another tool reads (:data:`NOT_SETTINGS`); any other is an error at boot naming the closest
setting. A misspelt ``filter_min_ovlr`` would otherwise leave the real one at its default and
change what is exported.

The config file itself is read here (:func:`read_config`): a list, a scalar, a nesting past
:data:`MAX_DEPTH` or broken YAML is one sentence, not a ``TypeError`` or ``RecursionError``.

An entry point that has every section (a command, ``onsei run``, Flower) judges every name; a
stage's worker knows only its own sections and those before it (services/pipeline.py), so it
judges the names under its sections' prefixes, and any other name as close to one it knows as a
typo is (:data:`TYPO`; no real setting of a later section comes that close, which
tests/common/test_setting_names.py checks over the whole pipeline): the last stage's worker and
every command judge the rest.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from common.errors import ConfigError
from common.renamed import ENV_PREFIX, renames_of

# ``ONSEI_*`` names that are not settings, read by something else:
NOT_SETTINGS: frozenset[str] = frozenset({
    "ONSEI_CONFIG",  # the file of settings itself
    "ONSEI_PIPELINE",  # which stages exist (services/pipeline.py), read before any setting
    # docker-compose.yml's own (interpolated into it, never read by onsei) and the image's
    # entrypoint (deploy/docker/)
    "ONSEI_ENV_FILE", "ONSEI_DATA_DIR", "ONSEI_BUCKET", "ONSEI_IMAGE_PREFIX", "ONSEI_IMAGE_TAG",
    "ONSEI_RESTART", "ONSEI_RESTART_DELAY", "ONSEI_MPS_ACTIVE_THREAD_PERCENTAGE",
    # where the test fixtures find pyannote's sample (fixtures/known_speakers.py)
    "ONSEI_PYANNOTE_SAMPLE",
})
# the test suite's, the benchmarks' and the test stages' own (tests/, bench/)
NOT_SETTINGS_PREFIXES: tuple[str, ...] = ("ONSEI_TEST_", "ONSEI_BENCH_", "ONSEI_SCALE_",
                                          "ONSEI_DUMMY_", "ONSEI_FAULT_")
# docker-compose.yml's per-stage names: ONSEI_<STAGE>_GPU, ...
STAGE_DEPLOY_NAMES: tuple[str, ...] = ("CONCURRENCY", "GPU", "METRICS_HOST_PORT")
TYPO = 0.85  # difflib ratio at or above which an unknown name is a typo of a known one
MAX_DEPTH = 32  # nesting of the config file (a setting's value is a list or mapping at most)
MAX_CONFIG_BYTES = 1024 * 1024


def not_a_setting(name: str, stages: Iterable[str]) -> bool:
    """``name`` (upper case) is read by something other than the settings."""
    if name in NOT_SETTINGS or name.startswith(NOT_SETTINGS_PREFIXES):
        return True
    return any(name == f"{ENV_PREFIX}{s.upper()}_{n}" for s in stages for n in STAGE_DEPLOY_NAMES)


def known_names(classes: Iterable[type]) -> set[str]:
    """Every field and former name of ``classes`` (lower case, as YAML keys)."""
    out: set[str] = set()
    for cls in classes:
        out |= set(getattr(cls, "model_fields", {})) | set(renames_of(cls))
    return out


def _prefixes(classes: Iterable[type]) -> tuple[str, ...]:
    return tuple({p for cls in classes for c in cls.__mro__
                  for p in c.__dict__.get("prefixes", ())})


def _closest(name: str, known: Iterable[str], cutoff: float = 0.6) -> str | None:
    got = difflib.get_close_matches(name, sorted(known), n=1, cutoff=cutoff)
    return got[0] if got else None


def _judged(key: str, known: set[str], prefixes: tuple[str, ...] | None) -> bool:
    """Whether an entry point that knows ``known`` can tell ``key`` is no setting (``prefixes``
    None: it knows every section)."""
    if prefixes is None or key.startswith(prefixes):
        return True
    return _closest(key, known, TYPO) is not None


def unknown(keys: Iterable[str], classes: Sequence[type], stages: Iterable[str],
            every_section: bool, env: bool) -> list[str]:
    """One sentence per key (setting names, lower case) that is no setting of ``classes``."""
    known = known_names(classes)
    prefixes = None if every_section else _prefixes(classes)
    out = []
    for key in keys:
        name = f"{ENV_PREFIX}{key.upper()}"
        if key in known or (env and not_a_setting(name, stages)):
            continue
        if not _judged(key, known, prefixes):
            continue
        near = _closest(key, known)
        shown = name if env else key
        hint = (f"did you mean {ENV_PREFIX + near.upper() if env else near}?" if near
                else "no setting is close")
        out.append(f"{shown} is not a setting ({hint}); README.md lists the settings")
    return out


def env_keys(environ: Mapping[str, str]) -> list[str]:
    """The ``ONSEI_*`` names of ``environ`` as setting names (the settings read them in any
    case)."""
    return sorted(k[len(ENV_PREFIX):].lower() for k in environ
                  if k.upper().startswith(ENV_PREFIX) and len(k) > len(ENV_PREFIX))


def check_names(classes: Sequence[type], stages: Iterable[str], every_section: bool,
                environ: Mapping[str, str] | None = None) -> None:
    """Refuse (:class:`ConfigError`, one line per name) every ``ONSEI_*`` name of ``environ``
    and every key of its ``ONSEI_CONFIG`` file that is no setting of ``classes``."""
    environ = os.environ if environ is None else environ
    stages = tuple(stages)
    problems = unknown(env_keys(environ), classes, stages, every_section, env=True)
    cfg = environ.get("ONSEI_CONFIG")
    if cfg:
        keys = sorted(read_config(cfg))
        problems += [f"{cfg}: {p}" for p in unknown(keys, classes, stages, every_section,
                                                    env=False)]
    if problems:
        raise ConfigError("\n".join(problems))


def _depth(value: Any, limit: int) -> int:
    """How deep ``value`` nests (lists and mappings), counting no further than ``limit`` + 1."""
    stack, deepest = [(value, 1)], 0
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            break
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return deepest


def read_config(path: str | Path) -> dict[str, Any]:
    """The settings in the YAML file ``path``: a mapping of setting names to values. Anything
    else is one sentence (:class:`ConfigError`)."""
    import yaml

    where = f"ONSEI_CONFIG={path}"
    p = Path(path)
    try:
        if not p.is_file():
            raise ConfigError(f"{where}: no such file")
        if p.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{where}: {p.stat().st_size} bytes is too large for a settings "
                              f"file (at most {MAX_CONFIG_BYTES})")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{where}: cannot be read ({type(e).__name__}: {e})") from None
    if _flow_depth(text) > MAX_DEPTH:  # before the parser, which takes seconds to recurse out
        raise ConfigError(f"{where}: nested more than {MAX_DEPTH} deep; a settings file is a "
                          "mapping of setting names to values")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        why = getattr(e, "problem", None) or type(e).__name__
        raise ConfigError(f"{where}: not valid YAML{at} ({why})") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested more than {MAX_DEPTH} deep; a settings file is a "
                          "mapping of setting names to values") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: holds a {type(data).__name__}, not a mapping of setting "
                          "names to values (e.g. `output_url: s3://bucket/out`)")
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise ConfigError(f"{where}: the key {bad[0]!r} is not a setting name")
    if _depth(data, MAX_DEPTH) > MAX_DEPTH:
        raise ConfigError(f"{where}: nested more than {MAX_DEPTH} deep; a settings file is a "
                          "mapping of setting names to values")
    return data



def _flow_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` outside quotes and comments in ``text``."""
    depth = deepest = 0
    quote = ""
    prev = "\n"
    for ch in text:
        if quote:
            if ch == quote and prev != "\\":
                quote = ""
        elif ch in "\"'" and prev in " \t\n:,[{-":
            quote = ch
        elif ch == "#" and prev in " \t\n":
            quote = "\n"  # a comment runs to the end of its line
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
        prev = ch
    return deepest

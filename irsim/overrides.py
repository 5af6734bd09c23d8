"""The command line's overrides, checked before Hydra runs anything.

Hydra reports a bad override in several lines and exits with code 1, after writing
``multirun.yaml`` for a sweep. irsim composes the config of a run (or of enough jobs of a
sweep that every swept value is composed once) first, so that every mistake is one line and
exit code 2 (:func:`precheck`; the command line prints what it raises, :mod:`irsim.cli`).
"""

from __future__ import annotations

from typing import NoReturn

from omegaconf import DictConfig

from irsim.errors import IrsimError

__all__ = ["precheck", "precheck_one", "sweep_jobs", "config_names"]


def _refuse(err: BaseException | str) -> NoReturn:
    """Stop with `err`'s first line (the command line prints it, exit code 2)."""
    if isinstance(err, IrsimError):
        raise err
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()] or [repr(err)]
    raise IrsimError(lines[0])


def config_names(group: str) -> list[str]:
    import importlib.resources as resources

    if group == "engine":  # typed: irsim.engine.config
        from irsim.engine.config import ENGINES

        return sorted(ENGINES)
    root = resources.files("irsim.conf") / group
    names = {e.name[:-5] for e in root.iterdir() if e.name.endswith(".yaml")}
    if group == "experiment":  # experiments are structured configs; presets are YAML
        from irsim.experiments import names as study_names

        names |= set(study_names())
    if group == "collection":  # a reader's kind that has no YAML: collection=<kind>
        from irsim.conf import kind_options

        names |= set(kind_options())
    return sorted(names)


def _stored_group(path: str) -> list[str] | None:
    """The options of the config group `path` that a study stores in Hydra's ConfigStore
    (``experiment/design``: test_errors' designs, :func:`irsim.conf.store`), None when
    `path` is not such a group."""
    from hydra.core.config_store import ConfigStore

    from irsim.conf import register

    if "/" not in path or not path.startswith("experiment/"):
        return None
    register()
    node: object = ConfigStore.instance().repo
    for part in path.split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return None
    return sorted(name.removesuffix(".yaml") for name in node)


def precheck_one(overrides: list[str]) -> DictConfig:
    """Compose the config of one run (a single run, or one job of a sweep) before Hydra
    does, so that a bad override gives one line and exit code 2 (Hydra would print several
    lines and exit 1); interpolations are resolved too (``${oc.env:X}`` of an unset
    variable, an unknown resolver)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from irsim.conf import choice_error
    from irsim.errors import unknown_name

    plain = [a for a in overrides if not a.lstrip("+~").startswith(("hydra.", "hydra/"))]
    hydra_args = [a for a in overrides if a not in plain]
    for arg in plain:
        key, sep, value = arg.partition("=")
        group = key.lstrip("+~")
        if sep and group in ("collection", "experiment", "engine"):
            names = config_names(group)
            if value not in names:
                _refuse(unknown_name(group, value, names))
        options = _stored_group(group.replace(".", "/")) if sep else None
        if options is not None and "/" in group:  # a study's config group: experiment/design
            if value not in options:
                _refuse(unknown_name(group, value, options))
        elif options is not None:  # experiment.design=x: the group's old spelling, a key
            head, _, field = group.rpartition(".")
            _refuse(f"config: {group}={value}: {field} is a config group: select it with "
                  f"{head}/{field}={value} (its own parameters: {group}.<key>)")
    try:
        from irsim.runner import compose_config

        cfg = compose_config(plain)
        if hydra_args:  # Hydra's own keys: checked too (Hydra would print a traceback)
            compose_config([*plain, *hydra_args], hydra=True)
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()] or [str(err)]
        message = lines[0]
        if message.startswith("Could not override") and len(lines) > 1:
            key = message.split("'")[1] if "'" in message else "?"
            _refuse(_unknown_key(plain, key))
        cause = err.__cause__
        if message.startswith("Error parsing override") and any(c in message for c in "()"):
            _, _, bad = message.partition("'")
            key = bad.partition("=")[0] or "key"
            _refuse(f"config: {message}: quote a value with parentheses, e.g. "
                  f"'{key}=\"AP(rel=2)\"' (in a list: '{key}=[\"AP(rel=2)\"]')")
        choice = choice_error(cause)
        if choice is not None:
            _refuse(choice)
        if message.startswith("Error merging override") and cause is not None:
            arg = message.removeprefix("Error merging override").strip()
            first = str(cause).splitlines()[0].strip()
            message = f"{arg.partition('=')[0]}: {first}"
        _refuse(f"config: {message}")
    _check_composed(cfg, plain)
    return cfg


def _check_composed(cfg: DictConfig, plain: list[str]) -> None:
    """The checks of a composed config: the seed, keys added with ``+``, interpolations."""
    from omegaconf.errors import OmegaConfBaseException

    from irsim.runner import check_keys, check_seed

    try:
        check_seed(cfg.get("seed"))
        check_keys(cfg)  # a key added with +: refused by OmegaConf (irsim.conf.check_keys)
    except IrsimError as err:
        _refuse(err)
    except OmegaConfBaseException:
        pass  # an interpolation that does not resolve: said below
    if not any("${hydra:" in a for a in plain):  # Hydra's resolver: set when it runs
        from omegaconf import OmegaConf

        try:
            OmegaConf.to_container(cfg, resolve=True)
        except OmegaConfBaseException as err:
            first = ([ln.strip() for ln in str(err).splitlines() if ln.strip()] or
                     [type(err).__name__])[0]
            key = getattr(err, "full_key", None)
            _refuse(f"config: {key + ': ' if key else ''}cannot resolve an interpolation "
                  f"({first})")


def precheck(overrides: list[str]) -> list[list[str]] | None:
    """Check a command line's overrides before Hydra runs anything (:func:`precheck_one`);
    for a sweep (``-m``), the overrides of its jobs, enough of them that every swept value
    is composed once (a bad value in any job is one line and exit code 2, before Hydra
    writes ``multirun.yaml``). Returns the jobs checked (one for a single run), or None
    when the command line holds other Hydra flags or another sweeper (Hydra checks it)."""
    multirun = any(a in ("-m", "--multirun") for a in overrides)
    args = [a for a in overrides if a not in ("-m", "--multirun")]
    if any(a.startswith("-") for a in args):
        return None  # Hydra flags: Hydra validates the jobs itself
    if not multirun:
        precheck_one(args)
        return [args]
    if any(a.lstrip("+~").startswith(("hydra/sweeper", "hydra/launcher")) for a in args):
        return None  # another sweeper's syntax
    jobs = sweep_jobs(args)
    first = precheck_one(jobs[0])
    for job in jobs[1:]:
        changed = [o for o in job if o not in jobs[0]]
        if not _set_values(first, changed, job):  # a group or a new key: composed
            precheck_one(job)
    return jobs


def _set_values(cfg: DictConfig, changed: list[str], job: list[str]) -> bool:
    """Check a sweep job that differs from the composed `cfg` only in values of existing
    keys, by setting them on a copy of `cfg` (the typed nodes convert or refuse each value,
    as Hydra's compose would, at a fraction of its cost); False when a change is not such a
    value (a config group, ``+``/``~`` keys, ``hydra.*``): the job is composed instead."""
    import copy

    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    parsed = []
    for item in changed:
        if item.startswith(("+", "~")) or item.startswith(("hydra.", "hydra/")):
            return False
        try:
            override = OverridesParser.create().parse_override(item)
        except HydraException:
            return False
        key = override.key_or_group
        if "/" in key or not _is_value(cfg, key):
            return False  # a config group, a mapping or a new key: composed
        parsed.append((key, override.value()))
    copy_ = copy.deepcopy(cfg)
    for key, value in parsed:
        try:
            OmegaConf.update(copy_, key, value, merge=False)
        except OmegaConfBaseException as err:
            first = ([ln.strip() for ln in str(err).splitlines() if ln.strip()] or
                     [type(err).__name__])[0]
            _refuse(f"config: {key}: {first}")
    _check_composed(copy_, [a for a in job if not a.startswith(("hydra.", "hydra/"))])
    return True


def sweep_jobs(args: list[str]) -> list[list[str]]:
    """The jobs of a sweep (Hydra's basic sweeper) that together hold every swept value
    (the first job, then each job with a value not seen yet: at most one job per value);
    a sweep that does not parse is one line (exit code 2).

    Examples
    --------
    >>> sweep_jobs(["experiment.B=100,200", "seed=1,2,3"])  # doctest: +NORMALIZE_WHITESPACE
    [['experiment.B=100', 'seed=1'], ['experiment.B=100', 'seed=2'],
     ['experiment.B=100', 'seed=3'], ['experiment.B=200', 'seed=1']]
    """
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(args)
        batches = BasicSweeper.split_arguments(parsed, None)
    except HydraException as err:
        lines = [ln.strip() for ln in str(err).splitlines()
                 if ln.strip() and not ln.strip().startswith("See https")]
        detail = lines[1] if len(lines) > 1 else ""
        detail = detail.split(": ", 1)[-1] if detail.startswith("ValueError") else detail
        _refuse(f"config: {lines[0] if lines else err}" + (f": {detail}" if detail else ""))
    seen: set[str] = set()
    jobs = []
    for batch in batches:
        for job in batch:
            if not jobs or set(job) - seen:
                jobs.append(list(job))
                seen |= set(job)
    return jobs


def _is_value(cfg: DictConfig, key: str) -> bool:
    """Whether `key` names an existing value (not a mapping) of `cfg`."""
    from omegaconf import OmegaConf

    head, _, last = key.rpartition(".")
    try:
        parent = OmegaConf.select(cfg, head, throw_on_missing=False) if head else cfg
        if not OmegaConf.is_dict(parent) or last not in parent:
            return False
        return not OmegaConf.is_dict(parent._get_node(last))
    except Exception:  # noqa: BLE001 - anything unusual: composed instead
        return False


def _unknown_key(overrides: list[str], key: str) -> str:
    """Hydra refused to set `key`, which its typed node does not declare: the message of
    :func:`irsim.conf.unknown_key` on the config composed without it."""
    from irsim.conf import unknown_key
    from irsim.runner import compose_config

    rest = [a for a in overrides if a.lstrip("+~").partition("=")[0] != key]
    try:
        return str(unknown_key(compose_config(rest), key))
    except Exception:  # noqa: BLE001 - the rest does not compose either: the key alone
        return f"config: unknown config key {key!r}"

"""The plain functions behind the CLI: run a configured study, evaluate runs.

``@hydra.main`` in :mod:`irsim.cli` is a thin shim over these; tests call them with a
config built by Hydra's ``compose``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from omegaconf import DictConfig, OmegaConf

from irsim.api import describe_data, matrix_to_long
from irsim.conf import check_keys
from irsim.data.collection import load_doc_collection
from irsim.engine import write_tables
from irsim.engine.output import write_manifest
from irsim.experiments import load
from irsim.kit.loading import metrics_arg, progress_bar
from irsim.provenance import manifest, table_digests
from irsim.rng import check_seed

__all__ = ["compose_config", "promote_overrides", "run", "evaluate_command", "write_manifest",
           "matrix_to_long", "describe_data", "check_seed", "check_run_dir", "check_keys",
           "check_path_length", "check_ray_address", "auth_message", "completed", "COMPLETE",
           "print_summary"]

log = logging.getLogger(__name__)


def compose_config(overrides: list[str] | None = None, *, hydra: bool = False,
                   promote: bool = True) -> DictConfig:
    """The irsim config with command-line style overrides, without running anything
    (`hydra`: also compose and return Hydra's own node, so ``hydra.*`` overrides are checked;
    `promote`: a scalar given for a list is a list of one, :func:`promote_overrides`, as on
    the command line).

    Examples
    --------
    >>> cfg = compose_config(["experiment.B=200", "collection=synthetic_scores"])
    >>> cfg.experiment.B, cfg.collection.kind
    (200, 'synthetic_scores')
    """
    from hydra import compose, initialize_config_module

    from irsim.conf import register

    register()
    overrides = promote_overrides(list(overrides or [])) if promote else list(overrides or [])
    with initialize_config_module(config_module="irsim.conf", version_base="1.3"):
        return compose(config_name="config", overrides=overrides,
                       return_hydra_config=hydra)


#: Config groups whose selection decides the types of the keys below them.
_GROUPS = ("collection", "experiment", "engine")
#: Sweep functions whose elements are not rewritten (their order or meaning is their own).
_OWN_SWEEPS = ("shuffle(", "tag(", "interval(", "glob(")


def promote_overrides(overrides: list[str]) -> list[str]:
    """The command line's overrides with each scalar given for a list-typed key written as
    a one-element list, as :func:`irsim.params.promote` does for keywords:
    ``experiment.alpha=0.05`` is ``experiment.alpha=[0.05]``, and a sweep's scalars are
    swept as lists (``experiment.alpha=0.01,0.05`` is ``experiment.alpha=[0.01],[0.05]``,
    ``range(2,5)`` too). The types come from the config the group selections compose (each
    experiment of a sweep over experiments: a key is promoted only where it is a list in
    every one). Anything else (flags, ``hydra.*``, deletions, interpolations, sweeps such as
    ``shuffle(...)``, a command line that does not compose) is left as given, for Hydra
    and :func:`irsim.cli` to judge.

    Examples
    --------
    >>> promote_overrides(["experiment.alpha=0.05", "experiment.B=200", "seed=1"])
    ['experiment.alpha=[0.05]', 'experiment.B=200', 'seed=1']
    >>> promote_overrides(["-m", "experiment=compare", "experiment.alpha=0.01,0.05"])
    ['-m', 'experiment=compare', 'experiment.alpha=0.01,0.05']
    >>> promote_overrides(["-m", "experiment.alpha=0.01,[0.05,0.1]", "metrics=AP"])
    ['-m', 'experiment.alpha=[0.01],[0.05,0.1]', 'metrics=[AP]']
    """
    import itertools

    from hydra.core.override_parser.overrides_parser import OverridesParser

    from irsim.conf.schema import IrsimConfig
    from irsim.params import scalar_lists

    def key_of(arg: str) -> str:
        return arg.lstrip("+~").partition("=")[0].strip()

    args = [(i, a) for i, a in enumerate(overrides) if not a.startswith("-") and "=" in a
            and not key_of(a).startswith(("hydra.", "hydra/")) and "@" not in key_of(a)]
    selections = [a for _, a in args if key_of(a) in _GROUPS or "/" in key_of(a)]
    top = scalar_lists(IrsimConfig)
    wanted = {i: key_of(a) for i, a in args if "." in key_of(a) or key_of(a) in top}
    if not wanted:
        return list(overrides)
    parser = OverridesParser.create()
    try:
        choices = []
        for arg in selections:
            parsed = parser.parse_override(arg)
            values = ([str(v) for v in parsed.sweep_string_iterator()]
                      if parsed.is_sweep_override() else [parsed.get_value_element_as_str()])
            choices.append([f"{arg.partition('=')[0]}={v}" for v in values])
        configs = [compose_config(list(combo), promote=False)
                   for combo in itertools.product(*choices)]
    except Exception:  # noqa: BLE001 - it does not compose: Hydra and the precheck say why
        return list(overrides)

    def is_list(key: str) -> bool:
        head, _, leaf = key.rpartition(".")
        for cfg in configs:
            node: Any = cfg
            for part in head.split(".") if head else []:
                node = node.get(part) if isinstance(node, DictConfig) else None
            cls = IrsimConfig if not head else (
                OmegaConf.get_type(node) if isinstance(node, DictConfig) else None)
            if cls is None or leaf not in scalar_lists(cls):
                return False
        return True

    out = list(overrides)
    for i, key in wanted.items():
        if is_list(key):
            out[i] = _promoted(parser, overrides[i])
    return out


def _promoted(parser: Any, arg: str) -> str:
    """One override of a list-typed key with its scalars as one-element lists."""
    from hydra.core.override_parser.types import QuotedString

    from irsim.params import is_scalar

    prefix = arg[:len(arg) - len(arg.lstrip("+~"))]
    key, _, text = arg[len(prefix):].partition("=")
    if "${" in text or text.strip().startswith(_OWN_SWEEPS):
        return arg
    try:
        parsed = parser.parse_override(arg)
        if parsed.is_delete():
            return arg
        if not parsed.is_sweep_override():
            value = parsed.value()
            return f"{prefix}{key}=[{parsed.get_value_element_as_str()}]" \
                if is_scalar(value) else arg
        values = list(parsed.sweep_iterator())
        texts = [str(t) for t in parsed.sweep_string_iterator()]
    except Exception:  # noqa: BLE001 - Hydra reports a bad override itself
        return arg
    if len(values) != len(texts):
        return arg
    return f"{prefix}{key}=" + ",".join(
        f"[{t}]" if is_scalar(v) or isinstance(v, QuotedString) else t
        for v, t in zip(values, texts, strict=True))


def check_run_dir(run_dir: Path) -> None:
    """Refuse a run directory (or its ``results``) that exists as a file or is a dangling
    symlink, before any work (its writability is checked once it exists,
    :func:`irsim.rundir.check_writable`)."""
    from irsim.errors import InputError

    check_path_length(run_dir, "hydra.run.dir")
    try:
        for path in (run_dir, run_dir / "results", run_dir / "checkpoints"):
            if path.is_symlink() and not path.exists():
                raise InputError(f"is a dangling symlink (-> {os.readlink(path)}): irsim "
                                 f"cannot write its results there; fix the link or choose "
                                 f"another run directory (hydra.run.dir)", file=path)
            if path.exists() and not path.is_dir():
                raise InputError("is a file, not a directory", file=path)
    except OSError as err:  # a component that is not a directory, a loop, no permission
        raise InputError(f"cannot be used as a run directory ({err.strerror or err}): choose "
                         f"another run directory (hydra.run.dir)", file=run_dir) from None


def check_path_length(path: str | os.PathLike, key: str) -> None:
    """Refuse a directory name the file system cannot hold: a component longer than its
    ``NAME_MAX`` (255 bytes on Linux) or a path longer than ``PATH_MAX``; `key` is the
    setting that names it (``hydra.run.dir``).

    Examples
    --------
    >>> check_path_length("x" * 300, "hydra.run.dir")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.InputError: xxx...: the name 'xxx...' is 300 bytes long, over the 255 ...
    """
    from irsim.errors import InputError

    path = Path(path)
    base = Path(".")
    for parent in path.parents:  # the nearest existing directory (the file system asked)
        with contextlib.suppress(OSError):
            if parent.is_dir():
                base = parent
                break
    try:
        name_max = os.pathconf(base, "PC_NAME_MAX")
        path_max = os.pathconf(base, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        name_max, path_max = 255, 4096
    shown = str(path) if len(str(path)) <= 80 else str(path)[:60] + "..."
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > name_max:
            part_shown = part if len(part) <= 40 else part[:20] + "..."
            raise InputError(f"the name {part_shown!r} is {size} bytes long, over the "
                             f"{name_max} bytes a file name may have here: choose a shorter "
                             f"{key}", file=shown)
    size = len(os.fsencode(os.path.abspath(path)))
    if size >= path_max:
        raise InputError(f"the path is {size} bytes long, over the {path_max} bytes a path "
                         f"may have here: choose a shorter {key}", file=shown)


#: What a run into a directory that already holds its results reports.
COMPLETE = ("is complete: it holds the finished results of this study (same parameters, "
            "seed, data and irsim version); not recomputed (--force recomputes them)")

def completed(run_dir: str | os.PathLike, fingerprint: str) -> bool:
    """Whether `run_dir` holds the finished results of the study with `fingerprint`: its
    manifest (written last) names that fingerprint (which covers irsim's source: a resume
    after a code change recomputes) and every table it lists is there with the sha256 the
    manifest records for it (a swapped table, or another run's manifest copied in, is not
    complete).

    Examples
    --------
    >>> import tempfile
    >>> completed(tempfile.mkdtemp(), "abc")
    False
    """
    run_dir = Path(run_dir)
    try:
        manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    if not isinstance(manifest, dict) or manifest.get("fingerprint") != fingerprint:
        return False
    names = manifest.get("tables") or {}
    digests = manifest.get("table_sha256")
    if not names or not isinstance(digests, dict):
        return False
    from irsim.provenance import file_sha256

    for t in names:
        path = run_dir / "results" / f"{t}.parquet"
        if not path.is_file() or path.is_symlink() or file_sha256(path) != digests.get(t):
            return False
    return True


def check_ray_address(address: str, timeout: float = 10.0) -> None:
    """Before joining the Ray cluster at `address` (``engine.address``): an address that
    does not answer, a cluster that refuses this client's token (Ray's token
    authentication, ``RAY_AUTH_MODE=token``), or a cluster of which this machine is not a
    node (:func:`irsim.engine.reach.check_on_cluster`: the driver must run on one) is a
    :class:`~irsim.errors.ConfigError` within seconds; Ray itself would retry for minutes
    (a wrong token: forever; a driver off the cluster: join, then hang). ``ray://``
    addresses (Ray Client) are checked for reachability only.

    Examples
    --------
    >>> check_ray_address("127.0.0.1:1", timeout=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: engine.address='127.0.0.1:1': no Ray cluster reachable ...
    """
    from irsim.engine.reach import check_on_cluster, check_reachable
    from irsim.errors import ConfigError

    check_reachable(address, timeout=timeout)
    if address.startswith("ray://"):
        return
    try:
        from ray._private.services import get_ray_address_from_environment
        from ray._raylet import GcsClient
        from ray.exceptions import AuthenticationError
    except ImportError:  # another Ray: its own ray.init decides
        return
    target: str | None = address
    if address == "auto":
        try:
            target = get_ray_address_from_environment("auto", None)
        except Exception:  # noqa: BLE001 - no cluster found: the engine says so in one line
            return
        if not target or target == "local":
            return
    try:
        with _fd2_to_log():  # Ray's C++ client writes a warning per failed RPC
            client = GcsClient(address=target)
            client.internal_kv_get(b"irsim-probe", None, timeout=timeout)
    except AuthenticationError as err:
        raise ConfigError(auth_message(address, err)) from None
    except Exception:  # noqa: BLE001 - anything else: left to ray.init and the engine
        return
    if address != "auto":  # auto: a cluster of this machine
        with _fd2_to_log():
            check_on_cluster(address, client, timeout=timeout)


def auth_message(address: str | None, err: BaseException) -> str:
    """One line for a Ray :class:`ray.exceptions.AuthenticationError`: what failed and how
    to give irsim the cluster's token.

    Examples
    --------
    >>> line = auth_message("auto", RuntimeError("RPC error: Token is missing. Ensure..."))
    >>> line[:78]
    "engine.address='auto': the Ray cluster refused this client's authentication to"
    >>> line[-62:]
    '(on the head node: ray get-auth-token) (Ray: Token is missing)'

    """
    reason = getattr(err, "message", None) or str(err)
    reason = reason.removeprefix("RPC error: ").split(". ")[0].strip().rstrip(".")
    where = f"engine.address={address!r}" if address else "Ray"
    return (f"{where}: the Ray cluster refused this client's authentication token (Ray token "
            f"authentication): set RAY_AUTH_MODE=token and the cluster's token in "
            f"RAY_AUTH_TOKEN or ~/.ray/auth_token (on the head node: ray get-auth-token) "
            f"(Ray: {reason})")


class _fd2_to_log:
    """Send what C++ code writes to file descriptor 2 to this module's log (debug)."""

    def __enter__(self) -> None:
        import tempfile

        sys.stderr.flush()
        self.saved = os.dup(2)
        self.sink = tempfile.TemporaryFile()
        os.dup2(self.sink.fileno(), 2)

    def __exit__(self, *exc: Any) -> None:
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.sink.seek(0)
        text = self.sink.read().decode(errors="replace").strip()
        self.sink.close()
        if text:
            log.debug("ray: %s", text)


def run(cfg: DictConfig, run_dir: str | os.PathLike, *, keep_ray: bool = False,
        report: bool = True, force: bool = False) -> dict[str, pa.Table]:
    """Run the configured study and write its tables, manifest and report into `run_dir`.

    The run holds a lock on `run_dir` (:func:`irsim.engine.checkpoint.run_dir_lock`): a second
    run into the same directory fails at once. Finished shards are checkpointed under
    ``<run_dir>/checkpoints`` and reused by a rerun of the same configuration (anything else
    there is recomputed). When the run finishes, the directory holds exactly this run's
    outputs: an earlier run's tables, report, plots and manifest are replaced or removed.
    Only files irsim wrote are ever removed (:mod:`irsim.rundir`): a directory holding other
    files and no irsim manifest, or a symlinked ``results/`` or ``checkpoints/``, is refused
    before anything is written.

    A directory that already holds the finished results of the same study (same parameters,
    seed, data and irsim version: the fingerprint in its manifest) is complete: it is reported
    (:data:`COMPLETE` in the log, :func:`completed` says so) and its tables are returned
    without recomputing them, unless `force` (``irsim --force``).

    `keep_ray` leaves a Ray instance started for engine=ray running for the next job of a
    sweep. Returns the result tables.
    """
    from irsim import rundir
    from irsim.engine.checkpoint import run_dir_lock

    run_dir = Path(run_dir)
    check_seed(cfg.get("seed"))
    check_run_dir(run_dir)
    with run_dir_lock(run_dir):
        rundir.claim(run_dir)
        rundir.check_writable(run_dir)  # before any computation
        checkpoints = run_dir / "checkpoints"
        try:
            return _run_locked(cfg, run_dir, checkpoints, keep_ray=keep_ray, report=report,
                               force=force)
        except BaseException:
            # a run that fails before saving any shard leaves no empty checkpoints/ behind
            rundir.remove_checkpoints(checkpoints, only_if_empty=True)
            raise


def _run_locked(cfg: DictConfig, run_dir: Path, checkpoints: Path, *, keep_ray: bool,
                report: bool, force: bool) -> dict[str, pa.Table]:
    from tqdm.contrib.logging import logging_redirect_tqdm

    from irsim import rundir
    from irsim.api import eta_of, execute
    from irsim.engine.output import clear_report, read_tables

    t0 = time.perf_counter()
    check_keys(cfg)  # before Ray is reached: a sweep's job is not pre-checked by the CLI
    engine = cfg.engine.get("name", "local")
    engine_options = {k: v for k, v in OmegaConf.to_container(cfg.engine).items()
                      if k not in ("name", "shard_items", "shard_replicates")}
    if engine == "ray" and engine_options.get("address"):
        check_ray_address(str(engine_options["address"]))
    if engine == "ray" and keep_ray:
        engine_options.setdefault("keep_alive", True)
    started: list[Any] = []  # (time, bar, its update, its eta) once the shards start

    def before_run() -> None:
        rundir.make_checkpoints(checkpoints)
        bar, update = progress_bar(cfg, name, unit="shard")
        started.append((time.perf_counter(), bar, update, eta_of(bar)))

    def progress(done: int, total: int) -> None:
        if started and started[0][2] is not None:
            started[0][2](done, total)

    def eta(seconds: float | None) -> None:  # the engine's time left on the bar
        if started and started[0][3] is not None:
            started[0][3](seconds)

    # log lines go above the progress bars instead of through them
    with logging_redirect_tqdm() if not cfg.get("quiet", False) else contextlib.nullcontext():
        name, config, data, shards = load(cfg)
        try:  # the same path as the Python door (api.execute); a complete run_dir is reused
            data, tables, info = execute(
                name, config, data, seed=check_seed(cfg.seed), shards=shards, engine=engine,
                engine_options=engine_options, checkpoint_dir=checkpoints, progress=progress,
                eta=eta, reuse=lambda fingerprint: not force and completed(run_dir, fingerprint),
                before_run=before_run,
                bars=lambda desc: progress_bar(cfg, desc, unit="shard"))
        finally:
            if started and started[0][1] is not None:
                started[0][1].close()
    if tables is None:
        print(f"irsim: {run_dir} {COMPLETE}", file=sys.stderr)
        names = json.loads((run_dir / "manifest.json").read_text())["tables"]
        return {k: t for k, t in read_tables(run_dir).items() if k in names}
    t_load = started[0][0]
    t_study = time.perf_counter()
    # an earlier run's manifest goes first: its outputs are about to be replaced, and a crash
    # in between must not pair it with this run's tables
    (run_dir / "manifest.json").unlink(missing_ok=True)
    paths = write_tables(tables, run_dir)
    record = manifest(experiment=name, command=sys.argv, seed=cfg.seed,
                      config=OmegaConf.to_container(cfg, resolve=True), engine=engine,
                      collection=describe_data(data), info=info, tables=tables,
                      timings={"load_seconds": round(t_load - t0, 4),
                               "study_seconds": round(t_study - t_load, 4)})
    record["table_sha256"] = table_digests(paths)
    clear_report(run_dir)
    if report:
        from irsim.report import write_report

        write_report(run_dir, tables, record)
    record["timings"]["total_seconds"] = round(time.perf_counter() - t0, 4)
    write_manifest(run_dir, record)
    rundir.remove_checkpoints(checkpoints)  # irsim's own (its mark), never a symlink
    log.info("wrote %s", run_dir)
    return tables


def evaluate_command(cfg: DictConfig, run_dir: str | os.PathLike) -> pa.Table:
    """``irsim evaluate``: per-topic scores of every run (``results/per_topic.parquet``).

    Like :func:`run`, it locks `run_dir` and leaves exactly its own outputs there."""
    from irsim import rundir
    from irsim.engine.checkpoint import run_dir_lock

    run_dir = Path(run_dir)
    check_run_dir(run_dir)
    with run_dir_lock(run_dir):
        rundir.claim(run_dir)
        rundir.check_writable(run_dir)  # before any computation
        return _evaluate_locked(cfg, run_dir)


def _evaluate_locked(cfg: DictConfig, run_dir: Path) -> pa.Table:
    from irsim.engine.output import clear_report
    from irsim.metrics import evaluate

    t0 = time.perf_counter()

    docs = load_doc_collection(cfg.collection, data_dir=cfg.get("data_dir"),
                               offline=cfg.get("offline", False))
    metrics = metrics_arg(cfg)
    if metrics is not None and not metrics:
        from irsim.errors import ConfigError

        raise ConfigError("metrics=[] lists no metric (leave it out for the collection's "
                          "default metrics)")
    metrics = metrics or list(cfg.collection.get("default_metrics") or [])
    bar, update = progress_bar(cfg, "evaluate")
    try:
        matrix = evaluate(docs.runs, docs.qrels, metrics, depth=docs.depth,
                          missing=docs.missing, progress=update)
    finally:
        if bar is not None:
            bar.close()
    table = matrix_to_long(matrix)
    (run_dir / "manifest.json").unlink(missing_ok=True)
    paths = write_tables({"per_topic": table}, run_dir)
    clear_report(run_dir)
    record = manifest(experiment="evaluate", command=sys.argv, seed=cfg.get("seed") or 0,
                      config=OmegaConf.to_container(cfg, resolve=True), engine="local",
                      collection=describe_data(matrix), info={},
                      tables={"per_topic": table}, timings={})
    record["table_sha256"] = table_digests(paths)
    from irsim.report import write_report

    write_report(run_dir, {"per_topic": table}, record)
    record["timings"]["total_seconds"] = round(time.perf_counter() - t0, 4)
    write_manifest(run_dir, record)
    print_summary(table)
    return table


def print_summary(per_topic: pa.Table, file: Any = None) -> None:
    """Print the mean over topics of every system and metric of a ``per_topic`` table, as
    trec_eval's summary (``all``) lines give them, one row per system (stdout).

    Examples
    --------
    >>> t = pa.table({"metric": ["AP", "AP", "P@10", "P@10"], "system": ["r1"] * 4,
    ...               "topic": ["1", "2", "1", "2"], "value": [0.5, 0.25, 0.3, 0.1]})
    >>> print_summary(t)
    mean over 2 topics (trec_eval "all"); per topic: results/per_topic.parquet
    system  AP      P@10
    r1      0.3750  0.2000
    """
    from irsim.report import mean_scores

    means = mean_scores(per_topic)
    topics = len(set(per_topic.column("topic").to_pylist()))
    rows = [["system", *means.columns]]
    rows += [[str(system), *(f"{v:.4f}" for v in values)]
             for system, values in zip(means.index, means.to_numpy(), strict=True)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print(f'mean over {topics} topics (trec_eval "all"); per topic: '
          f'results/per_topic.parquet', file=file or sys.stdout)
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(),
              file=file or sys.stdout)
    (file or sys.stdout).flush()  # before the run directory's line on stderr

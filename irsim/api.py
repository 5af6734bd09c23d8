"""The Python front door: one function per study, the same engine as the command line.

``irsim.discpower(scores, B=1000, alpha=[0.01, 0.05])`` runs what
``irsim experiment=discpower experiment.B=1000 ...`` runs, on data given as

- a pandas DataFrame of one metric (rows = topics, columns = systems; Urbano's layout), named
  by ``metric=``;
- a dict ``{metric: DataFrame}``;
- a long DataFrame with columns ``system, topic, metric, value`` (what :func:`evaluate`
  returns);
- a :class:`~irsim.data.ScoreMatrix`;
- several collections: ``{metric: [DataFrame or ScoreMatrix, ...]}`` or ``{metric: {name:
  ...}}`` (the command line's ``collection.paths={METRIC: [file, ...]}``):
  ``irsim.test_errors(design="urbano2019")`` pools them (:func:`as_collection_set`), every
  other study runs on each (:func:`as_collection_list`) and its tables start with a column
  ``collection``;
- or, with ``runs=`` and ``qrels=`` (files, a directory of run files, glob patterns or
  :class:`~irsim.data.Runs` / :class:`~irsim.data.Qrels`), TREC runs and graded qrels:
  document-level studies read them directly, the others evaluate ``metrics`` first
  (trec_eval-exact); runs are named by file name, or by tag with ``run_names="tag"``
  (:func:`irsim.data.trec.name_runs`).

Each study function's keyword-only parameters are the experiment's ``Config`` fields (the
same names, defaults and meanings as the ``experiment.`` keys), plus ``seed``, ``engine``
(``"local"`` or ``"ray"``), ``workers`` (Ray actors), ``address`` (a Ray cluster to join),
``shard_items`` / ``shard_replicates`` and ``progress``. It returns a :class:`Result`. For
the same parameters and seed the tables equal the command line's, bit for bit.

Examples
--------
>>> import numpy as np, pandas as pd, irsim
>>> rng = np.random.default_rng(1)
>>> scores = pd.DataFrame(rng.uniform(size=(25, 4)), columns=["a", "b", "c", "d"])
>>> res = irsim.discpower(scores, metric="AP", B=200, seed=3)
>>> sorted(res.tables)
['asl', 'discpower']
>>> res.to_pandas("discpower")[["test", "alpha", "pairs"]].head(2)
               test  alpha  pairs
0  paired_bootstrap   0.01      6
1  paired_bootstrap   0.05      6
>>> irsim.discpower(scores, metric="AP", B=0)
Traceback (most recent call last):
...
irsim.errors.ConfigError: B must be an integer >= 1, got 0
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from irsim.data.convert import (
    as_collection_list,
    as_collection_set,
    as_doc_collection,
    as_score_matrix,
    matrix_to_long,
)
from irsim.data.matrix import ScoreMatrix
from irsim.data.trec import DEFAULT_RUN_NAMES
from irsim.engine.config import engine_defaults
from irsim.errors import ConfigError, python_parameters, unknown_name
from irsim.rng import check_seed

__all__ = ["Result", "evaluate", "execute", "as_score_matrix", "as_doc_collection",
           "engine_defaults", "study_function", "describe_data",
           "as_collection_set", "as_collection_list",
           "matrix_to_long", "ConfigParameter", "config_parameters"]

#: Keywords every study function takes besides its Config fields and its data kind's
#: keywords (``runs=``, ``qrels=``, ``metric=`` ...: :attr:`irsim.registry.DataKind.keywords`).
_COMMON = {"seed": 0, "engine": "local", "workers": None, "address": None,
           "shard_items": None, "shard_replicates": None, "progress": None}


# ----------------------------------------------------------------------------------- data
def evaluate(runs: Any, qrels: Any, metrics: Any, *, depth: int | None = 1000,
             missing: str = "error", scores: str = "float64",
             run_names: str = DEFAULT_RUN_NAMES) -> pd.DataFrame:
    """Per-topic scores of every run, exactly as trec_eval computes them.

    Parameters
    ----------
    runs, qrels
        Paths (files, a directory of run files, glob patterns or lists of them) or
        :class:`~irsim.data.Runs` / :class:`~irsim.data.Qrels`.
    metrics : str or list of str
        Measures as ir_measures names them (``AP``, ``P@10``, ``nDCG@10``, ``AP(rel=2)``...).
    depth : int or None
        Lists are cut after this many documents: the default 1000 is ``trec_eval -M1000``
        (the same as trec_eval without ``-M`` on runs of at most 1000 documents per
        topic); None is trec_eval without ``-M`` (no cut).
    missing : {"error", "zero", "drop"}
        Topics not shared by runs and qrels.
    scores : {"float64", "float32"}
        How run files' scores rank (ties by docno descending in both): ``float64`` (the
        default) with every digit, as trec_eval 10.0, NIST's current release, reads them;
        ``float32`` at single precision, as trec_eval <= 9.0.8 and pytrec_eval read them
        (scores equal in single precision tie). See :func:`irsim.data.read_run`.
    run_names : {"file", "tag"}
        A run file's system name: its file name without ``.gz`` and a results extension
        (``file``, the default: ``runs/bm25.run.gz`` is ``bm25``) or its tag (``tag``);
        two runs of one name are an error naming both files
        (:func:`irsim.data.trec.name_runs`).

    Returns
    -------
    pandas.DataFrame
        Long format: columns ``system, topic, metric, value`` (one row per score); any study
        function takes it as its data.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "qrels").write_text("1 0 d1 1\\n1 0 d2 0\\n1 0 d3 1\\n")
    >>> _ = (d / "run").write_text("1 Q0 d2 1 3.0 r\\n1 Q0 d1 2 2.0 r\\n1 Q0 d3 3 1.0 r\\n")
    >>> evaluate(d / "run", d / "qrels", ["AP", "P@2"])
      system topic metric     value
    0    run     1     AP  0.583333
    1    run     1    P@2  0.500000
    """
    from irsim.metrics import evaluate as evaluate_matrix
    names = [metrics] if isinstance(metrics, str) else [str(m) for m in metrics]
    docs = as_doc_collection(runs, qrels, depth=depth or 0, missing=missing, scores=scores,
                             run_names=run_names)
    matrix = evaluate_matrix(docs.runs, docs.qrels, names, depth=depth, missing=missing)
    return matrix_to_long(matrix).to_pandas()[["system", "topic", "metric", "value"]]


# ------------------------------------------------------------------------------- manifest
def describe_data(data: Any) -> dict[str, Any]:
    """Summary of a study's data for the manifest and report (a ``describe()`` method of the
    data wins)."""
    from irsim.engine import data_digest
    from irsim.engine.composite import PartData

    if isinstance(data, PartData):  # a study run on each of several collections
        return {"per_collection": True,
                "collections": {n: describe_data(d) for n, d in zip(data.names, data,
                                                                    strict=True)},
                "sha256": data_digest(data)}
    if hasattr(data, "describe"):
        return dict(data.describe())
    if isinstance(data, ScoreMatrix):
        return {
            "metrics": list(data.metrics),
            "systems": len(data.systems),
            "topics": len(data.topics),
            "source": data.source,
            "sha256": data_digest(data),
        }
    described = {"type": type(data).__name__, "sha256": data_digest(data)}
    for attr in ("runs", "qrels"):
        part = getattr(data, attr, None)
        if part is not None:
            described[attr] = len(part)
            src = getattr(part, "sources", None) or getattr(part, "source", None)
            if src:
                described[f"{attr}_source"] = src if isinstance(src, str) else list(src)
    return described


# --------------------------------------------------------------------------------- engine
def execute(name: str, config: Any, data: Any, *, seed: int, shards: Any,
            engine: str = "local", engine_options: Mapping[str, Any] | None = None,
            checkpoint_dir: str | os.PathLike | None = None,
            progress: Callable[[int, int], Any] | None = None,
            reuse: Callable[[str], bool] | None = None,
            before_run: Callable[[], Any] | None = None,
            bars: Callable[[str], tuple[Any, Any]] | None = None,
            eta: Callable[[float | None], Any] | None = None
            ) -> tuple[Any, dict[str, pa.Table] | None, dict[str, Any]]:
    """Make the study `name` from its ``Config`` and run it: ``(data, tables, run info)``.

    Both doors end here: the command line (:func:`irsim.runner.run`) and the study
    functions of this module.

    Parameters
    ----------
    reuse : callable, optional
        ``reuse(fingerprint) -> bool``, asked once the study is made: True when the caller
        holds this run's results already (a complete run directory); the study is then not
        run and the tables returned are None (the info holds the ``fingerprint``).
    before_run : callable, optional
        Called just before the shards run (after `reuse` said no): the command line makes
        its checkpoint directory and progress bar there.
    bars : callable, optional
        ``bars(desc) -> (bar, update)``: progress bars of the steps before the study (its
        data preparation on the engine: ``copula_fits``); see
        :class:`irsim.engine.session.Engine`.
    eta : callable, optional
        ``eta(seconds or None)``: the time left of the study's shards
        (:mod:`irsim.engine.progress`), shown on the caller's bar (:func:`eta_of`).
    """
    from irsim.engine import data_digest
    from irsim.engine.checkpoint import fingerprint_of
    from irsim.engine.session import Engine
    from irsim.experiments import make_study

    # one engine session: the data preparation (test_errors' copula fitting) and the study
    # run on the same engine, and a Ray instance started for the first is reused by the second
    with Engine(engine, engine_options, bars=bars) as session:
        study, data = make_study(name, config, data, seed=seed, shards=shards, engine=session)
        if reuse is not None:
            fingerprint = fingerprint_of({"study": study.name, **study.fingerprint()},
                                         data_digest(data))
            if reuse(fingerprint):
                return data, None, {"fingerprint": fingerprint}
        if before_run is not None:
            before_run()
        tables, info = session.run(study, data, checkpoint_dir=checkpoint_dir,
                                   progress=progress, eta=eta)
    return data, tables, dict(info)


def eta_of(bar: Any) -> Callable[[float | None], Any] | None:
    """The ``eta`` callback of :func:`execute` for a door's progress `bar`: the engine's
    time left on a tqdm bar (:func:`irsim.engine.progress.show_eta`); None without a bar
    or for a bar of another kind."""
    if bar is None or not hasattr(bar, "set_postfix_str"):
        return None
    from irsim.engine.progress import show_eta

    return show_eta(bar)


# --------------------------------------------------------------------------------- result
@dataclasses.dataclass
class Result:
    """The tables of a study run, with its manifest.

    Attributes
    ----------
    name : str
        The experiment.
    tables : dict of str to pyarrow.Table
        Result tables (columns: :mod:`irsim.tables`).
    manifest : dict
        Parameters, seed, engine, data description, versions and timings (as the CLI's
        ``manifest.json``).
    """

    name: str
    tables: dict[str, pa.Table]
    manifest: dict[str, Any]

    def to_pandas(self, name: str | None = None) -> pd.DataFrame:
        """One table as a DataFrame (default: the study's first table)."""
        if name is None:
            name = next(iter(self.tables))
        if name not in self.tables:
            raise unknown_name("table", str(name), self.tables)
        return self.tables[name].to_pandas()

    def report(self, directory: str | os.PathLike) -> Path:
        """Write a run directory: ``results/*.parquet``, ``manifest.json``, ``report.md``
        and its PNG plots (``irsim report`` can rebuild it later). Returns report.md.

        `directory` must be new, empty or an irsim run directory; one holding other files
        is refused (:class:`~irsim.errors.InputError`), as on the command line."""
        from irsim import rundir
        from irsim.engine.checkpoint import run_dir_lock
        from irsim.engine.output import clear_report, write_manifest, write_tables
        from irsim.provenance import table_digests
        from irsim.report import write_report

        directory = Path(directory)
        with run_dir_lock(directory):  # as the command line: one writer, nothing stale
            rundir.claim(directory)  # and never into a directory holding others' files
            (directory / "manifest.json").unlink(missing_ok=True)
            paths = write_tables(self.tables, directory)
            clear_report(directory)
            record = {**self.manifest, "table_sha256": table_digests(paths)}
            path = write_report(directory, self.tables, record)
            write_manifest(directory, record)
        return path

    def headline(self) -> str:
        """The run's answer in a few lines: each summary table of the study (what the
        command line prints at the end of a run, :func:`irsim.report.headline_text`)."""
        from irsim.report import headline_text

        return headline_text(self.name, self.tables)

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}: {t.num_rows} rows" for k, t in self.tables.items())
        return f"<irsim {self.name} result: {parts}>"

    def _repr_markdown_(self) -> str:  # notebooks
        from irsim.report import markdown_table

        out = [f"**irsim {self.name}**", ""]
        for k, t in self.tables.items():
            out += [f"`{k}` ({t.num_rows} rows)", "", markdown_table(t, max_rows=8), ""]
        return "\n".join(out)


# ------------------------------------------------------------------------ study functions
def _config_fields(name: str) -> list[dataclasses.Field]:
    from irsim.experiments import get
    from irsim.params import ordered_fields

    config = get(name).config
    return [f for f in ordered_fields(config) if f.name != "name"]


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return inspect.Parameter.empty


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python values (OmegaConf takes only those), inside lists,
    tuples and dicts too.

    Examples
    --------
    >>> _plain({"B": np.int64(3), "alpha": [np.float64(0.05)], "x": np.array([1, 2])})
    {'B': 3, 'alpha': [0.05], 'x': [1, 2]}
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _build_config(name: str, params: Mapping[str, Any]) -> Any:
    """The study's Config from keyword arguments (numpy scalars accepted as Python ones),
    typed and checked by OmegaConf (messages name the keyword)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from irsim.conf import choice_error
    from irsim.experiments import get
    from irsim.params import promote

    config_cls = get(name).config
    base = OmegaConf.structured(config_cls)
    params = dict(params)
    for field, options in getattr(config_cls, "GROUPS", {}).items():  # a config group
        if field not in params:
            continue
        value = params.pop(field)
        if isinstance(value, Mapping):  # as a manifest records it: {"name": ..., keys}
            value = dict(value)
            name_ = value.pop("name", None)
            if not isinstance(name_, str) or name_ not in options:
                raise unknown_name(f"{field} name", str(name_), tuple(options))
            try:
                value = options[name_](**_plain(value))
            except TypeError:
                bad = sorted(set(value) - {f.name for f in dataclasses.fields(options[name_])})
                raise unknown_name(f"parameter of {field} {name_!r}", bad[0] if bad else "?",
                                   [f.name for f in dataclasses.fields(options[name_])
                                    if f.name != "name"]) from None
        if isinstance(value, str):  # an option's name: its defaults
            if value not in options:
                raise unknown_name(field, value, tuple(options))
            value = options[value]()
        if not isinstance(value, tuple(options.values())):
            raise ConfigError(f"{field} must be one of {', '.join(options)} or an object of "
                              f"{', '.join(c.__name__ for c in options.values())}, got "
                              f"{type(value).__name__}")
        base[field] = OmegaConf.structured(value)  # the option, typed: its own keys only
    try:
        merged = OmegaConf.merge(base, OmegaConf.create(promote(config_cls, _plain(params))))
        return OmegaConf.to_object(merged)
    except OmegaConfBaseException as err:
        choice = choice_error(err)
        if choice is not None:
            raise choice from None
        key = getattr(err, "full_key", None) or "?"
        first = str(err).splitlines()[0]
        raise ConfigError(f"{key}: {first}") from None


def _keywords(name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Split the keywords of ``irsim.<name>``: the Config's stay in `kwargs`, the others
    (the data kind's and :data:`_COMMON`) are returned; an unknown one is refused, one of a
    config group's options says how to pass it."""
    from irsim.experiments import get

    entry = get(name)
    fields = {f.name for f in _config_fields(name)}
    extra = set(_COMMON) | set(entry.kind.keywords)
    unknown = [k for k in kwargs if k not in fields and k not in extra]
    for group, options in getattr(entry.config, "GROUPS", {}).items():
        for key in unknown:  # a parameter of a config group's option, given at the top
            owner = [o for o, c in options.items() if key in {f.name for f in
                                                               dataclasses.fields(c)}]
            if owner:
                cls = options[owner[0]].__name__
                raise ConfigError(f"{key} is a parameter of {group} {owner[0]!r}: pass "
                                  f"{group}={cls}({key}=...) (irsim.experiments."
                                  f"{name}.{cls})")
    if unknown:
        raise unknown_name(f"parameter of irsim.{name}", unknown[0], sorted(fields | extra))
    common = {k: kwargs.pop(k) for k in list(kwargs) if k in extra and k not in fields}
    for k in set(fields) & set(entry.kind.keywords):  # a Config field the kind reads too
        if k in kwargs:
            common[k] = kwargs[k]
    return common


def _engine_options(engine: str, workers: Any, address: Any = None) -> dict[str, Any]:
    """The engine's options of the Python door (its defaults; ``workers`` and ``address``
    for Ray: an existing cluster is joined after the checks of
    :func:`irsim.engine.reach.check_driver`)."""
    options = engine_defaults(engine)
    for key in ("name", "shard_items", "shard_replicates"):
        options.pop(key, None)
    for key, value in (("workers", workers), ("address", address)):
        if value is not None:
            if engine != "ray":
                raise ConfigError(f"{key} needs engine='ray'")
            options[key] = int(value) if key == "workers" else value
    return options


def _run(name: str, data: Any, kwargs: dict[str, Any]) -> Result:
    from irsim.experiments import Shards, get

    entry = get(name)
    common = _keywords(name, kwargs)
    engine = common.get("engine", "local")
    t0 = time.perf_counter()
    with python_parameters():
        seed = check_seed(common.get("seed", 0))
        _check_progress(common.get("progress"))
        config = _build_config(name, kwargs)
        options = _engine_options(engine, common.get("workers"), common.get("address"))
        shards = Shards(common.get("shard_items"), common.get("shard_replicates"))
        keywords = {k: common.get(k, v) for k, v in entry.kind.keywords.items()}
        data = entry.kind.from_python(data, keywords, config)
        bar, update = _progress(name, common.get("progress"))
        try:
            data, tables, info = execute(
                name, config, data, seed=int(seed), shards=shards, engine=engine,
                engine_options=options, progress=update, eta=eta_of(bar),
                bars=lambda desc: _progress(desc, common.get("progress")))
        finally:
            if bar is not None:
                bar.close()
    from irsim.provenance import manifest

    record = manifest(experiment=name, command=f"irsim.{name}", seed=seed,
                      config={"experiment": {"name": name, **dataclasses.asdict(config)},
                              "seed": int(seed), "engine": {"name": engine, **options}},
                      engine=engine, collection=describe_data(data), info=info,
                      tables=tables,
                      timings={"total_seconds": round(time.perf_counter() - t0, 4)})
    return Result(name, tables, record)


def interactive() -> bool:
    """Whether a person is watching: standard error is a terminal, or the code runs in a
    Jupyter/IPython kernel (the progress bar's default).

    Examples
    --------
    >>> interactive()  # under pytest: neither a terminal nor a notebook
    False
    """
    import sys

    ipython = sys.modules.get("IPython")  # a running kernel, not a module merely imported
    shell = ipython.get_ipython() if hasattr(ipython, "get_ipython") else None
    if shell is not None and "IPKernelApp" in getattr(shell, "config", {}):
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _check_progress(on: Any) -> None:
    """``progress`` is True, False or None (a bar when a person is watching); anything else
    (``'no'``, which is truthy) is refused."""
    if on is not None and not isinstance(on, bool | np.bool_):
        raise ConfigError(f"progress must be True, False or None (a bar when a person is "
                          f"watching), got {on!r}")


def _progress(name: str, on: bool | None):
    if on is None:
        on = interactive()
    if not on:
        return None, None
    import sys

    from tqdm.auto import tqdm

    bar = tqdm(total=None, desc=name, unit="shard", file=sys.stderr, leave=False)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return bar, update


def study_function(name: str) -> Callable[..., Result]:
    """The Python function of experiment `name` (signature from its ``Config``)."""

    def study(data: Any = None, /, **kwargs: Any) -> Result:
        return _run(name, data, dict(kwargs))

    study.__name__ = study.__qualname__ = name
    study.__module__ = "irsim"
    study.__test__ = False  # `test_errors` is a study, not a pytest test
    P = inspect.Parameter
    params = [P("data", P.POSITIONAL_ONLY, default=None)]
    fields = _config_fields(name)
    names = {f.name for f in fields}
    for f in fields:
        params.append(P(f.name, P.KEYWORD_ONLY, default=_default(f)))
    from irsim.experiments import get

    extra = {**get(name).kind.keywords, **_COMMON}
    for key, default in extra.items():
        if key not in names:
            params.append(P(key, P.KEYWORD_ONLY, default=default))
    study.__signature__ = inspect.Signature(params, return_annotation=Result)
    entry = get(name)
    study.__doc__ = (
        f"{entry.description[:1].upper()}{entry.description[1:]}.\n\n"
        f"The Python door of ``irsim experiment={name}``: same parameters (keyword-only, "
        f"named as the ``experiment.`` keys), same tables for the same seed.\n\n"
        f"Parameters\n----------\n"
        f"data : DataFrame, dict of DataFrame, ScoreMatrix or long DataFrame\n"
        f"    Per-topic scores (see :mod:`irsim.api`); or give ``runs=`` and ``qrels=``.\n"
        f"{_config_doc(entry.config)}"
        f"seed : int\n    Seed of every random draw.\n"
        f"engine : {{'local', 'ray'}}\n    Where shards run; tables are identical.\n"
        f"workers : int, optional\n    Ray actors (engine='ray').\n"
        f"address : str, optional\n    An existing Ray cluster to join (engine='ray'; "
        f"``auto``, ``host:port`` or ``ray://host:port``; default: a local instance).\n"
        f"progress : bool, optional\n    Show a progress bar (default: when a person is "
        f"watching, a terminal or a notebook).\n\n"
        f"Returns\n-------\nResult\n    ``.tables``, ``.to_pandas(name)``, "
        f"``.report(directory)``, ``.manifest``.\n")
    return study


def _config_doc(config: type) -> str:
    """The 'Parameters' entries of a Config, from its fields' help
    (:func:`irsim.params.parameters`), the experiment's own ``name`` left out."""
    from irsim.params import section

    return section(config, skip=("name",))


@dataclasses.dataclass(frozen=True)
class ConfigParameter:
    """One parameter of an experiment's ``Config``, as ``irsim show`` lists it.

    Attributes
    ----------
    name : str
        Field name (the ``experiment.<name>`` key, the Python keyword); a config group's own
        parameter is ``<group>.<field>`` (``design.power_trials``).
    default : object
        Default of the dataclass field.
    type : str
        Type as users read it (``int``, ``float or list of float``, ...): the field's
        ``kind`` metadata, else from its annotation.
    meaning : str
        First sentence of the field's help text.
    description : str
        The whole help text (what the documentation site's parameter lists show).
    """

    name: str
    default: Any
    type: str
    meaning: str
    description: str = dataclasses.field(default="", repr=False)
    #: For a config group's own parameter (``design.power_trials``): the option it belongs to.
    option: str | None = dataclasses.field(default=None, repr=False)
    #: Whether this parameter is a config group (``experiment/design=<option>``; its default
    #: is the default option's name).
    group: bool = dataclasses.field(default=False, repr=False)

    @property
    def key(self) -> str:
        """The command line's key: ``experiment.<name>``, ``experiment/<name>`` for a
        config group."""
        return f"experiment/{self.name}" if self.group else f"experiment.{self.name}"


def _first_sentence(text: str) -> str:
    """The first sentence of `text` (periods inside parentheses or backquotes ignored)."""
    depth, quoted = 0, False
    for i, ch in enumerate(text):
        if ch == "`":
            quoted = not quoted
        elif ch in "([{" and not quoted:
            depth += 1
        elif ch in ")]}" and not quoted:
            depth = max(0, depth - 1)
        elif (ch == "." and not quoted and depth == 0 and text[i - 1:i] != "."
              and (i + 1 == len(text) or text[i + 1] == " ")):
            if i >= 1 and text[max(0, i - 3):i + 1] in ("e.g.", "i.e.") or (
                    text[max(0, i - 2):i + 1] in ("vs.",)):
                continue
            return text[:i + 1]
    return text


def config_parameters(config: type) -> list[ConfigParameter]:
    """Every parameter of a ``Config`` dataclass (``name`` excluded) with its default, and
    its type and one-line meaning from its field's metadata (:func:`irsim.params.option`).

    Examples
    --------
    >>> from irsim.experiments import get
    >>> p = config_parameters(get("coverage").config)
    >>> [x.name for x in p][:3]
    ['metrics', 'methods', 'sizes']
    >>> p[3]  # doctest: +NORMALIZE_WHITESPACE
    ConfigParameter(name='samples', default=1000, type='int, >= 1',
                    meaning='Topic samples per size.')
    """
    from irsim.params import parameters

    groups = getattr(config, "GROUPS", {})
    out = []
    for p in parameters(config):
        if p.name == "name":
            continue
        if p.name not in groups:
            out.append(ConfigParameter(p.name, p.default, p.kind, _first_sentence(p.help),
                                       p.help))
            continue
        options = groups[p.name]  # a config group: the choice, then each option's own keys
        default = next(o for o, c in options.items() if type(p.default) is c)
        out.append(ConfigParameter(p.name, default, p.kind, _first_sentence(p.help), p.help,
                                   group=True))
        for option, cls in options.items():
            for q in parameters(cls):
                if q.name != "name":
                    text = f"``{option}``: {q.help}"
                    out.append(ConfigParameter(f"{p.name}.{q.name}", q.default, q.kind,
                                               _first_sentence(text), text, option=option))
    return out

"""Every output table irsim writes: its name, the studies that write it, its columns.

One registry, :data:`TABLES`, holds the Arrow schema (column names, order and types) and the
meaning of every column of every table a study or command writes to
``<run dir>/results/<name>.parquet``. Each study declares its tables in its own module (its
registration's ``tables=``, :func:`irsim.registry.study`, built with :func:`table_spec` and
:func:`column`); tables two studies write live in :mod:`irsim.kit.tables`; this module holds
the building blocks, the columns several studies share and ``per_topic`` (``irsim
evaluate``). :func:`irsim.engine.write_tables` checks each table
against it before writing; :func:`table` builds a table with the declared schema;
:func:`markdown` renders the registry for the documentation site (page "Output tables" and each
study's page; written into ``docs/`` by ``python -m irsim.docs docs``).

A table several studies write is declared once, in :mod:`irsim.kit.tables`, with no writers
(``studies=()``): each study that writes it *claims* it in its own registration
(:func:`claim`: the columns it fills among those only some writers fill, and what the table and
its columns mean for it), and the registered spec is the merge of its claims. A column may so
be filled by only some of the studies that write its table (:attr:`Column.filled_by`): rows of
the other studies hold null there (``swap_summary``: the bootstrap swap method of
``discpower`` and the topic-sampling study ``swap``). The kit thus names no study, and a new
writer of a shared table touches its own package only.

A schema mismatch is a programming error, not bad input: :func:`check` and :func:`table`
raise :class:`ValueError` (names: missing, unexpected or out-of-order columns) or
:class:`TypeError` (a column's Arrow type), naming the table and the column.

Examples
--------
>>> schema("per_topic").names
['metric', 'system', 'topic', 'value']
>>> spec("swap_summary").studies
('discpower', 'swap')
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from irsim.registry import on_register, studies

__all__ = ["Column", "TableSpec", "TABLES", "PER_COLLECTION", "PER_TOPIC", "STR", "INT", "FLOAT",
           "METRIC", "SAMPLING", "SUBSET", "ERRORS", "BAYES_TEST", "BAYES_RULE", "column",
           "table_spec", "bin_columns", "registered", "spec", "schema", "table", "check",
           "table_markdown", "markdown", "add_tables", "Claim", "claim"]

#: Arrow types of the columns.
STR, INT, FLOAT = pa.string(), pa.int64(), pa.float64()


@dataclass(frozen=True)
class Column:
    """One column of an output table.

    Parameters
    ----------
    name : str
        Column name.
    type : pyarrow.DataType
        Its Arrow type.
    meaning : str
        What a value means, in a sentence or two.
    filled_by : tuple of str
        The studies that fill the column, when not every study of its table does; the rows
        of the other studies hold null. Empty (default): every study fills it.
    partial : bool
        A column of a shared table (:func:`claim`) that only the writers whose claim names it
        fill (its registered spec lists them in `filled_by`).

    Examples
    --------
    >>> Column("asl", pa.float64(), "achieved significance level").optional
    False
    """

    name: str
    type: pa.DataType
    meaning: str
    filled_by: tuple[str, ...] = ()
    partial: bool = False

    @property
    def optional(self) -> bool:
        """Whether some study of the table leaves this column null."""
        return bool(self.filled_by) or self.partial


@dataclass(frozen=True)
class TableSpec:
    """An output table: name, writers, contents and columns.

    Parameters
    ----------
    name : str
        Table name (``results/<name>.parquet``).
    studies : tuple of str
        Experiments that write it (``experiment=<name>``; ``evaluate`` is ``irsim evaluate``).
    description : str
        What one row holds.
    columns : tuple of Column
        In table order.
    when : str
        A clause saying under which options it is written, e.g. ``only with
        `experiment.stability=true` `` (empty: by every run of its studies).

    Examples
    --------
    >>> TABLES["asl"].names[:2]
    ('metric', 'test')
    """

    name: str
    studies: tuple[str, ...]
    description: str
    columns: tuple[Column, ...]
    when: str = ""

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"table {self.name!r}: duplicate column names in {names}")
        for c in self.columns:
            if not set(c.filled_by) <= set(self.studies):
                raise ValueError(f"table {self.name!r}, column {c.name!r}: filled_by "
                                 f"{c.filled_by} names a study not in {self.studies}")

    @property
    def names(self) -> tuple[str, ...]:
        """Column names in order."""
        return tuple(c.name for c in self.columns)

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema (no metadata)."""
        return pa.schema([(c.name, c.type) for c in self.columns])


#: The first column of every table of a study run on each of several collections
#: (``collection.paths={METRIC: [file, ...]}``, :mod:`irsim.engine.composite`); not part of
#: the tables' declared columns.
PER_COLLECTION = Column("collection", STR, "the collection the row belongs to")


# ---------------------------------------------------------------- building blocks
def column(name: str, type_: pa.DataType, meaning: str, *filled_by: str,
           partial: bool = False) -> Column:
    """A column of a table spec; `filled_by`: the studies that fill it when not all do;
    `partial`: a shared table's column that only the writers claiming it fill
    (:func:`claim`)."""
    return Column(name, type_, meaning, tuple(filled_by), partial)


def table_spec(name: str, studies: tuple[str, ...], description: str,
               columns: Sequence[Column], when: str = "") -> TableSpec:
    """A table spec (what a study declares in its registration's ``tables=``)."""
    return TableSpec(name, studies, description, tuple(columns), when)


@dataclass(frozen=True)
class Claim:
    """A study's part in a table several studies write (:func:`claim`).

    Attributes
    ----------
    spec : TableSpec
        The shared table as the kit declares it (no writers).
    fills : tuple of str
        The partial columns (:attr:`Column.partial`) this study fills.
    notes : dict of str to str
        What the table (key ``""``) and some of its columns mean for this study.
    when : str
        Under which of the study's options it writes the table (empty: every run).
    """

    spec: TableSpec
    fills: tuple[str, ...] = ()
    notes: Mapping[str, str] = field(default_factory=dict)
    when: str = ""

    def __post_init__(self) -> None:
        s = self.spec
        if s.studies:
            raise ValueError(f"table {s.name!r} names its writers {s.studies}: only a shared "
                             "table (declared with no writers) is claimed")
        partial = {c.name for c in s.columns if c.partial}
        if not set(self.fills) <= partial:
            raise ValueError(f"table {s.name!r}: fills {sorted(set(self.fills) - partial)} "
                             f"are not among its partial columns {sorted(partial)}")
        unknown = set(self.notes) - {"", *s.names}
        if unknown:
            raise ValueError(f"table {s.name!r}: notes on unknown column(s) {sorted(unknown)}")

    @property
    def name(self) -> str:
        """The shared table's name."""
        return self.spec.name


def claim(spec: TableSpec, *, fills: Sequence[str] = (), notes: Mapping[str, str] | None = None,
          when: str = "") -> Claim:
    """A study's claim on a shared table (what it lists in its registration's ``tables=``
    instead of a spec of its own).

    Parameters
    ----------
    spec : TableSpec
        A table declared with no writers (in :mod:`irsim.kit.tables`).
    fills : sequence of str
        The partial columns the study fills (the others hold null in its rows).
    notes : dict, optional
        ``{"": sentence on the table, column: what it holds for this study}``, appended to
        the shared text in the registered spec and the docs.
    when : str
        A clause such as ``only with `experiment.swap=true` ``.

    Examples
    --------
    >>> shared = table_spec("toy_shared", (), "Counts.", [column("n", INT, "count"),
    ...                     column("extra", FLOAT, "a ratio", partial=True)])
    >>> claim(shared, fills=["extra"], notes={"n": "pairs"}).fills
    ('extra',)
    """
    return Claim(spec, tuple(fills), dict(notes or {}), when)


def _merged(base: TableSpec, ranked: Mapping[str, tuple[Any, Claim]]) -> TableSpec:
    """The registered spec of a shared table: its writers in listing order (`ranked`: study
    -> (its rank, its claim)) with their notes, fills and clauses."""
    claims = {st: c for st, (_, c) in sorted(ranked.items(), key=lambda kv: kv[1][0])}

    def noted(text: str, key: str) -> str:
        return text + "".join(f"; {st}: {c.notes[key]}" for st, c in claims.items()
                              if key in c.notes)

    columns = tuple(Column(c.name, c.type, noted(c.meaning, c.name),
                           tuple(st for st, cl in claims.items() if c.name in cl.fills)
                           if c.partial else (), c.partial) for c in base.columns)
    description = base.description + "".join(f" {st}: {c.notes['']}"
                                              for st, c in claims.items() if "" in c.notes)
    when = "; ".join(f"by {st} {c.when}" for st, c in claims.items() if c.when)
    return TableSpec(base.name, tuple(claims), description, columns, when)


def bin_columns(what: str = "the difference on the first topic set") -> tuple[Column, ...]:
    """The difference-bin columns (:mod:`irsim.kit.bins`) of the swap and error-rate tables."""
    return (
        column("bin_kind", STR, "`absolute`: bins 0.01 wide of |d|, the last >= 0.20; "
               f"`relative`: bins 5% wide of |d| / the smaller mean, the last open (d: {what})"),
        column("bin_lo", FLOAT, "lower edge of the bin (inclusive)"),
        column("bin_hi", FLOAT, "upper edge of the bin (exclusive; inf for the last, open bin)"),
    )


def rate_columns(rate: str, meaning: str, *, stem: str | None = None,
                   level: str = "`experiment.ci_level`", count: str = "",
                   kind: str = "Wilson") -> tuple[Column, Column, Column]:
    """A rate and the limits of its interval (:func:`irsim.stats.binomial.wilson` or
    Clopper-Pearson): ``rate``, ``<stem>_lo``, ``<stem>_hi`` (`stem`: `rate` without a
    ``_rate`` suffix). `level` names where the level comes from; `count` says what the
    interval counts when it is not plain successes over trials.

    Examples
    --------
    >>> [c.name for c in rate_columns("error_rate", "errors / trials")]
    ['error_rate', 'error_lo', 'error_hi']
    >>> rate_columns("fwer", "FWER", count="trials are the unit")[1].meaning
    'Wilson lower limit of fwer (`experiment.ci_level`; trials are the unit)'
    """
    stem = rate.removesuffix("_rate") if stem is None else stem
    how = f"{level}; {count}" if count else level
    return (column(rate, FLOAT, meaning),
            column(f"{stem}_lo", FLOAT, f"{kind} lower limit of {rate} ({how})"),
            column(f"{stem}_hi", FLOAT, f"{kind} upper limit of {rate}"))


# ------------------------------------------------------------- columns several studies use
METRIC = column("metric", STR, "metric, as ir_measures spells it (`AP`, `P@10`, `nDCG@10`)")
SAMPLING = column("sampling", STR, "how the two topic sets of a trial are drawn: `disjoint`, "
                  "`independent`, `replacement` or `bootstrap`")
SUBSET = column("subset_size", INT, "topics per set: c; n (all topics) for `bootstrap`")
ERRORS = (
    column("comparisons", INT, "pair x trial comparisons in the bin"),
    column("errors", INT, "comparisons whose order differs on the second set (opposite signs, "
           "or exactly one difference 0)"),
    column("error_rate", FLOAT, "errors / comparisons (NaN for an empty bin)"),
)
BAYES_TEST = column("test", STR, "`jzs_bf` (JZS Bayes factor), `t_posterior` (t posterior, "
                    "HDI+ROPE) or `bayesian_bootstrap` (posterior probability)")
BAYES_RULE = column("rule", STR, "the decision rule and its parameters, e.g. `BF10 >= 3 "
                    "(r=0.7071)`, `95% HDI vs ROPE +-0.01`, `P >= 0.95 (ROPE +-0.01, B=1000)`")

# ------------------------------------------------------------------------------ registry
#: ``per_topic``: the table of ``irsim evaluate`` (not a study); the studies' tables are
#: declared in their own modules and added when they register (:func:`add_tables`).
PER_TOPIC = table_spec("per_topic", ("evaluate",), "Per-topic score of every run, like "
                       "`trec_eval -q`.", [
                           METRIC,
                           column("system", STR, "run"),
                           column("topic", STR, "topic"),
                           column("value", FLOAT, "score of the run on the topic"),
                       ])

#: Every output table registered so far by name (``per_topic``, then each study's tables as
#: it registers; :func:`registered` has them all, in the order the documentation lists them).
TABLES: dict[str, TableSpec] = {PER_TOPIC.name: PER_TOPIC}
#: The claims on each shared table so far: table -> study -> (its listing rank, its
#: :class:`Claim`).
_CLAIMS: dict[str, dict[str, tuple[Any, Claim]]] = {}


def registered() -> dict[str, TableSpec]:
    """Every output table by name: ``per_topic``, then the tables of every study in the
    studies' listing order (loading the study registry, :func:`irsim.registry.studies`).

    Examples
    --------
    >>> list(registered())[:3]
    ['per_topic', 'asl', 'discpower']
    """
    out = {PER_TOPIC.name: PER_TOPIC}
    for st in studies():
        for s in st.tables:
            out.setdefault(s.name, TABLES[s.name])
    out.update((name, s) for name, s in TABLES.items() if name not in out)
    return out


def add_tables(specs: Sequence[TableSpec | Claim], *, study: str, rank: Any = None) -> None:
    """Register the tables a study declares in its own package (its registration's
    ``tables=``, :func:`irsim.registry.study`), so that they are checked before
    they are written and documented like the tables above.

    Parameters
    ----------
    specs : sequence of TableSpec or Claim
        Each spec names `study` among its writers; a :class:`Claim` (:func:`claim`) adds
        `study` to a shared table's writers (a shared spec given as is: a claim without
        fills or notes).
    study : str
        The registering study.
    rank : optional
        Where the study stands in the listing (``(order, name)`` of its registration; default
        ``(1000, study)``): a shared table lists its writers in this order.

    Raises
    ------
    ValueError
        A spec that does not name `study`, or a name another table already holds with other
        contents (programming errors).
    """
    for s in specs:
        if isinstance(s, TableSpec) and not s.studies:
            s = Claim(s)
        if isinstance(s, Claim):
            claims = _CLAIMS.setdefault(s.spec.name, {})
            base = next(iter(claims.values()))[1].spec if claims else None
            if (base is None and s.spec.name in TABLES) or (base is not None
                                                            and base != s.spec):
                raise ValueError(f"table {s.spec.name!r} is registered already with other "
                                 "contents")
            claims[study] = ((1000, study) if rank is None else rank, s)
            TABLES[s.spec.name] = _merged(s.spec, claims)
            continue
        if study not in s.studies:
            raise ValueError(f"table {s.name!r} registered by study {study!r} does not name "
                             f"it among its studies {s.studies}")
        old = TABLES.get(s.name)
        if old is not None and old != s:
            raise ValueError(f"table {s.name!r} is registered already with other contents")
        TABLES[s.name] = s


def _add_study_tables(entry: Any) -> None:
    """The registry's listener (:func:`irsim.registry.on_register`): a registering study's
    ``tables=``."""
    if entry.tables:
        add_tables(entry.tables, study=entry.name, rank=(entry.order, entry.name))


on_register(_add_study_tables)


# ------------------------------------------------------------------------------- access
def spec(name: str) -> TableSpec:
    """The registered table `name`.

    Raises
    ------
    KeyError
        For a name that is not registered.

    Examples
    --------
    >>> spec("coverage").studies
    ('coverage',)
    """
    if name not in TABLES:  # a study's table: registered when its study is imported
        every = registered()
        if name not in every:
            raise KeyError(f"table {name!r} is not registered in irsim.tables; registered: "
                           f"{', '.join(every)}")
    return TABLES[name]


def schema(name: str) -> pa.Schema:
    """The Arrow schema of table `name`: column names, order and types.

    Examples
    --------
    >>> print(schema("per_topic"))
    metric: string
    system: string
    topic: string
    value: double
    """
    return spec(name).schema


def _is_dataframe(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "pandas" and hasattr(obj, "columns")


def _check_names(name: str, got: Sequence[str], want: Sequence[str], what: str) -> None:
    missing = [c for c in want if c not in got]
    extra = [c for c in got if c not in want]
    if missing:
        raise ValueError(f"table {name!r}: {what} lacks column(s) {missing}")
    if extra:
        raise ValueError(f"table {name!r}: {what} has undeclared column(s) {extra}")


def table(name: str, data: Mapping[str, Any] | Sequence[Mapping[str, Any]] | Any
          ) -> pa.Table:
    """Build table `name` with its declared schema.

    Parameters
    ----------
    name : str
        A registered table.
    data : mapping, sequence of mappings or pandas.DataFrame
        Columns by name (lists, numpy arrays or Arrow arrays of the declared type), or one
        dict per row, or a DataFrame. Every declared column must be given, optional ones too
        (null values for a study that does not fill them); undeclared ones raise.

    Returns
    -------
    pyarrow.Table
        With exactly ``schema(name)`` (no metadata).

    Raises
    ------
    ValueError
        A missing or undeclared column.
    TypeError
        An Arrow array of another type, or values that do not convert to the declared type.

    Examples
    --------
    >>> t = table("per_topic", {"metric": ["AP"], "system": ["run1"], "topic": ["401"],
    ...                         "value": [0.25]})
    >>> t.to_pylist()
    [{'metric': 'AP', 'system': 'run1', 'topic': '401', 'value': 0.25}]
    >>> table("per_topic", [{"metric": "AP", "system": "run1", "topic": "401"}])
    Traceback (most recent call last):
    ...
    ValueError: table 'per_topic': row 0 lacks column(s) ['value']
    """
    s = spec(name)
    target = s.schema
    if _is_dataframe(data):
        _check_names(name, [str(c) for c in data.columns], s.names, "the DataFrame")
        out = pa.Table.from_pandas(data[list(s.names)], schema=target, preserve_index=False)
        return out.replace_schema_metadata(None)
    if isinstance(data, Mapping):
        _check_names(name, list(data), s.names, "the data")
        arrays = []
        for c in s.columns:
            values = data[c.name]
            if isinstance(values, (pa.Array, pa.ChunkedArray)):
                if values.type != c.type:
                    raise TypeError(f"table {name!r}, column {c.name!r}: Arrow type "
                                    f"{values.type}, declared {c.type}")
                arrays.append(values)
                continue
            try:
                arrays.append(pa.array(values, c.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as err:
                raise TypeError(f"table {name!r}, column {c.name!r}: values do not convert to "
                                f"{c.type}: {err}") from err
        return pa.Table.from_arrays(arrays, schema=target)
    rows = list(data)
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"table {name!r}: row {i} is a {type(row).__name__}, not a dict")
        if row.keys() != set(s.names):
            _check_names(name, list(row), s.names, f"row {i}")
    try:
        return pa.Table.from_pylist(rows, schema=target)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise TypeError(f"table {name!r}: rows do not convert to the declared types: "
                        f"{err}") from err


def check(name: str, table: pa.Table, *, allow_missing_optional: bool = False) -> None:
    """Raise unless `table` has the declared columns of table `name`, in order, with their
    Arrow types (schema metadata and nullability are not compared).

    Parameters
    ----------
    name : str
        A registered table.
    table : pyarrow.Table
    allow_missing_optional : bool
        Accept a table without some optional columns (:attr:`Column.optional`), the others
        in declared order: a table written before those columns were declared (e.g. a
        ``swap_summary`` of irsim 0.1). Writing is always strict.

    A table of a study run on each of several collections has the declared columns after a
    first column ``collection`` (:data:`PER_COLLECTION`).

    Raises
    ------
    KeyError
        `name` is not registered.
    ValueError
        A missing, undeclared, duplicate or out-of-order column.
    TypeError
        A column of another Arrow type.

    Examples
    --------
    >>> t = pa.table({"metric": ["AP"], "system": ["r"], "topic": ["1"], "value": [1]})
    >>> check("per_topic", t)
    Traceback (most recent call last):
    ...
    TypeError: table 'per_topic', column 'value': type int64, declared double
    >>> check("per_topic", t.drop_columns(["value"]))
    Traceback (most recent call last):
    ...
    ValueError: table 'per_topic': the table lacks column(s) ['value']
    """
    s = spec(name)
    got = table.schema.names
    if got[:1] == [PER_COLLECTION.name] and PER_COLLECTION.name not in s.names:
        actual = table.schema.field(0).type  # a study run on each of several collections
        if actual != PER_COLLECTION.type:
            raise TypeError(f"table {name!r}, column {PER_COLLECTION.name!r}: type {actual}, "
                            f"declared {PER_COLLECTION.type}")
        got = got[1:]
    if len(set(got)) != len(got):
        dup = sorted({c for c in got if got.count(c) > 1})
        raise ValueError(f"table {name!r}: duplicate column(s) {dup}")
    want = [c.name for c in s.columns
            if not (allow_missing_optional and c.optional and c.name not in got)]
    _check_names(name, got, want, "the table")
    if got != want:
        raise ValueError(f"table {name!r}: columns in the order {got}, declared {want}")
    for c in s.columns:
        if c.name in got:
            actual = table.schema.field(c.name).type
            if actual != c.type:
                raise TypeError(f"table {name!r}, column {c.name!r}: type {actual}, "
                                f"declared {c.type}")


# ------------------------------------------------------------------------ documentation
_TYPE_NAMES = {pa.float64(): "float64"}


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table_markdown(s: TableSpec, level: int = 3) -> str:
    """One table as the documentation shows it: a heading (`level` ``#``), who writes it and
    what a row holds, then its columns with Arrow type and meaning.

    Examples
    --------
    >>> print(table_markdown(spec("per_topic")).splitlines()[0])
    ### `per_topic`
    """
    studies = ", ".join("`irsim evaluate`" if x == "evaluate" else f"`{x}`" for x in s.studies)
    when = f"; {s.when}" if s.when else ""
    lines = [f"{'#' * level} `{s.name}`", "", _wrap(f"{s.description} Written by {studies}{when}."),
             "", "| column | type | meaning |", "|---|---|---|"]
    for c in s.columns:
        meaning = c.meaning
        if c.filled_by:
            others = [x for x in s.studies if x not in c.filled_by]
            meaning += f"; {', '.join(c.filled_by)} only (null from {', '.join(others)})"
        lines.append(f"| `{c.name}` | {_TYPE_NAMES.get(c.type, str(c.type))} | {_cell(meaning)} |")
    return "\n".join(lines) + "\n"


def markdown(study: str | None = None) -> str:
    """Every table irsim writes, as the documentation site's page "Output tables" shows it
    (an introduction, then :func:`table_markdown` of each table); with `study`, only the
    tables that study writes (its own page), without the introduction.

    Examples
    --------
    >>> md = markdown()
    >>> "### `swap_summary`" in md and "| `asl` | float64 |" in md
    True
    >>> [ln for ln in markdown("coverage").splitlines() if ln.startswith("#")]
    ['### `coverage`']
    """
    if study is None:
        lines = [
            _wrap("Every run directory holds `results/<table>.parquet` (long format, one row "
                  "per item), `manifest.json` (config, seed, versions, timings, engine, shards, "
                  "data digest), `cli.log` and `report.md` with its PNG plots. Below: every "
                  "table irsim writes, with its columns in order. The schemas live in "
                  "each study's module (`tables=` of its registration; `irsim/tables.py` "
                  "for `per_topic`, `irsim/kit/tables.py` for tables two studies write; this "
                  "text is generated from them by `python -m irsim.docs docs`); every table is "
                  "checked against its schema before it is written. "
                  "Other tools read these tables: change a name, column or type only with a "
                  "migration note. `irsim collect` keeps these columns and appends the sweep "
                  "parameters (strings) and `job`. A study that does not pool collections, "
                  "given several (`collection.paths={METRIC: [file, ...]}`), runs on each: its "
                  "tables then start with a column `collection` (string), the rest as below."),
            "",
        ]
        specs = list(registered().values())
    else:
        lines, specs = [], [s for s in registered().values() if study in s.studies]
    for s in specs:
        lines += [table_markdown(s)]
    return "\n".join(lines)


def _main(argv: list[str]) -> None:
    """``python -m irsim.tables [study]``: print :func:`markdown` (of one study's tables)."""
    sys.stdout.write(markdown(*argv[:1]))


if __name__ == "__main__":
    _main(sys.argv[1:])

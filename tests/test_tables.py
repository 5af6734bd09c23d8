"""irsim.tables: every table the code writes is registered with exactly the schema it has.

The oracle is the golden tables (``tests/golden/<case>/<table>.parquet``), recorded from the
code of every study and preset; ``swap_summary`` is the one table whose declared schema is
the union of two studies' columns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_golden import ADDED_COLUMNS, ADDED_TABLES, assert_bit_identical

from irsim import tables
from irsim.data.matrix import ScoreMatrix
from irsim.engine import read_tables, write_tables
from irsim.experiments import names
from irsim.runner import matrix_to_long

KNOWN = names()
ROOT = Path(__file__).resolve().parents[1]
GOLDEN = sorted((ROOT / "tests" / "golden").glob("*/*.parquet"))
TABLES_PAGE = ROOT / "docs" / "reference" / "tables.md"
#: Tables no golden case holds: per_topic (written by ``irsim evaluate``, not a study) and
#: tables added after the recordings (ADDED_TABLES; each is checked against the recorded
#: ones by tests/test_golden.py). Every study has golden cases (tests/golden/cases.py: its
#: registration's ``example.overrides``), which write every other table.
NOT_IN_GOLDEN = {"per_topic", *ADDED_TABLES}


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _per_topic() -> pa.Table:
    m = ScoreMatrix(np.array([[[0.5, 1.0], [0.0, 0.25]]]), ["AP"], ["r1", "r2"], ["1", "2"])
    return matrix_to_long(m)


# ---------------------------------------------------------------------- the registry holds
def test_golden_tables_exist():
    assert len(GOLDEN) > 50


@pytest.mark.parametrize("path", GOLDEN, ids=_id)
def test_golden_schema_is_the_declared_one(path):
    got = pq.read_schema(path).remove_metadata()
    want = tables.schema(path.stem)
    if path.stem == "swap_summary":
        # one study's columns: a subsequence of the union, the rest filled by the other study
        names = iter(want.names)
        assert all(n in names for n in got.names), (got.names, want.names)
        for field in got:
            assert want.field(field.name).type == field.type, field.name
        missing = [c for c in tables.spec("swap_summary").columns if c.name not in got.names]
        assert missing and all(c.optional for c in missing)
        tables.check("swap_summary", got.empty_table(), allow_missing_optional=True)
    elif path.stem in ADDED_COLUMNS and got != want:
        # recorded before columns were added: without them, the declared schema (a case
        # recorded since has them all)
        for name in ADDED_COLUMNS[path.stem]:
            want = want.remove(want.get_field_index(name))
        assert got == want, f"{_id(path)}:\n{got}\n!=\n{want}"
    else:
        assert got == want, f"{_id(path)}:\n{got}\n!=\n{want}"


def test_every_registered_table_is_written_somewhere():
    golden = {p.stem for p in GOLDEN}
    assert set(tables.registered()) - golden <= NOT_IN_GOLDEN
    assert golden <= set(tables.registered())


def test_per_topic_is_what_evaluate_writes():
    assert _per_topic().schema == tables.schema("per_topic")
    tables.check("per_topic", _per_topic())


def test_swap_summary_is_the_union_bootswap_columns_first():
    # discpower's (bootswap) columns in their order, then the two only experiment=swap has
    bootswap = ["metric", "sampling", "subset_size", "confidence", "required_diff",
                "max_performance", "relative_diff", "sensitivity", "mean_unique_topics",
                "mean_overlap", "comparisons", "comparisons_above"]
    want = tables.schema("swap_summary")
    assert want.names == bootswap + ["required_reldiff", "sensitivity_reldiff"]
    assert want.field("required_reldiff").type == pa.float64()
    assert want.field("comparisons_above").type == pa.int64()
    spec = tables.spec("swap_summary")
    filled = {c.name: c.filled_by for c in spec.columns if c.optional}
    assert filled == {"comparisons_above": ("discpower",),
                      "required_reldiff": ("swap",), "sensitivity_reldiff": ("swap",)}


def test_studies_are_experiments_or_evaluate():
    for s in tables.registered().values():
        assert s.studies and set(s.studies) <= set(KNOWN) | {"evaluate"}, s.name
        assert s.description and all(c.meaning for c in s.columns), s.name
    written = {x for s in tables.registered().values() for x in s.studies}
    assert written == set(KNOWN) | {"evaluate"}


def test_a_spec_rejects_duplicate_columns_and_unknown_fillers():
    col = tables.Column("a", pa.int64(), "a")
    with pytest.raises(ValueError, match="duplicate"):
        tables.TableSpec("x", ("swap",), "x", (col, col))
    with pytest.raises(ValueError, match="filled_by"):
        tables.TableSpec("x", ("swap",), "x", (tables.Column("a", pa.int64(), "a", ("y",)),))


# ------------------------------------------------------------------------------- table()
@pytest.mark.parametrize("path", GOLDEN[::3], ids=_id)
def test_table_rebuilds_golden_tables_from_columns(path):
    want = pq.read_table(path)
    cols = {c.name: (want.column(c.name) if c.name in want.column_names
                     else pa.nulls(want.num_rows, c.type))
            for c in tables.spec(path.stem).columns}
    got = tables.table(path.stem, cols)
    assert got.schema == tables.schema(path.stem)
    assert_bit_identical(got.select(want.column_names), want, _id(path))


def test_table_from_rows_and_dataframe():
    rows = _per_topic().to_pylist()
    assert tables.table("per_topic", rows).equals(_per_topic())
    df = _per_topic().to_pandas()[["value", "topic", "system", "metric"]]  # any column order
    got = tables.table("per_topic", df)
    assert got.equals(_per_topic()) and got.schema.metadata is None


def test_table_with_an_int_column_from_pandas_nulls():
    df = pd.DataFrame({"pool_depth": [20.0, np.nan], "metric": ["AP", "AP"],
                       "topic": ["1", "1"], "judged": [3, 4], "relevant": [1, 1]})
    got = tables.table("pools", df)
    assert got.column("pool_depth").to_pylist() == [20, None]


def test_table_missing_optional_column_raises():
    row = dict.fromkeys(tables.spec("swap_summary").names, 1)
    del row["comparisons_above"]
    with pytest.raises(ValueError, match=r"'swap_summary'.*comparisons_above"):
        tables.table("swap_summary", [row])
    with pytest.raises(ValueError, match="comparisons_above"):
        tables.table("swap_summary", {k: [v] for k, v in row.items()})


def test_table_rejects_undeclared_columns_and_wrong_types():
    cols = _per_topic().to_pydict()
    with pytest.raises(ValueError, match="undeclared column.*'extra'"):
        tables.table("per_topic", {**cols, "extra": [1, 2, 3, 4]})
    with pytest.raises(TypeError, match="'per_topic', column 'value'"):
        tables.table("per_topic", {**cols, "value": pa.array([1, 2, 3, 4])})
    with pytest.raises(TypeError, match="column 'value'"):
        tables.table("per_topic", {**cols, "value": ["a", "b", "c", "d"]})
    rows = _per_topic().to_pylist()
    rows[1]["value"] = "high"
    with pytest.raises(TypeError, match="'per_topic'"):
        tables.table("per_topic", rows)


def test_unknown_table_name():
    with pytest.raises(KeyError, match="'nope' is not registered"):
        tables.schema("nope")


# ------------------------------------------------------------------------------- check()
def test_check_names_the_table_and_column():
    t = _per_topic()
    tables.check("per_topic", t)
    with pytest.raises(TypeError, match="table 'per_topic', column 'value'"):
        tables.check("per_topic", t.set_column(3, "value", pa.array(["x"] * 4)))
    with pytest.raises(ValueError, match="order"):
        tables.check("per_topic", t.select(["system", "metric", "topic", "value"]))
    with pytest.raises(ValueError, match="undeclared column.*'x'"):
        tables.check("per_topic", t.append_column("x", pa.array([1] * 4)))
    with pytest.raises(ValueError, match="duplicate"):
        tables.check("per_topic", pa.Table.from_arrays(
            [t.column(0), *t.columns], names=["metric", *t.column_names]))
    with pytest.raises(ValueError, match="lacks.*'value'"):
        tables.check("per_topic", t.drop_columns(["value"]), allow_missing_optional=True)


def test_check_ignores_metadata():
    tables.check("per_topic", _per_topic().replace_schema_metadata({"a": "b"}))


def test_check_allows_missing_optional_columns_only_when_asked():
    full = tables.schema("swap_summary").empty_table()
    tables.check("swap_summary", full)
    swap = full.drop_columns(["comparisons_above"])
    disc = full.drop_columns(["required_reldiff", "sensitivity_reldiff"])
    for t in (swap, disc):
        with pytest.raises(ValueError, match="'swap_summary'"):
            tables.check("swap_summary", t)
        tables.check("swap_summary", t, allow_missing_optional=True)
    with pytest.raises(ValueError, match="lacks.*'required_diff'"):
        tables.check("swap_summary", full.drop_columns(["required_diff"]),
                     allow_missing_optional=True)


# --------------------------------------------------------------------------- write_tables
def test_write_tables_checks_every_table_before_writing_any(tmp_path):
    good = _per_topic()
    bad = tables.schema("coverage").empty_table().drop_columns(["alpha"])
    with pytest.raises(ValueError, match="'coverage'.*'alpha'"):
        write_tables({"per_topic": good, "coverage": bad}, tmp_path)
    assert not (tmp_path / "results").exists()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(KeyError, match="'t' is not registered"):
        write_tables({"per_topic": good, "t": pa.table({"a": [1]})}, tmp_path)
    assert list(tmp_path.iterdir()) == []
    write_tables({"per_topic": good}, tmp_path)
    assert read_tables(tmp_path)["per_topic"].equals(good)


# ------------------------------------------------------------------------- documentation
def test_markdown_lists_every_table_and_column():
    md = tables.markdown()
    for s in tables.registered().values():
        assert f"### `{s.name}`" in md
        for c in s.columns:
            assert f"| `{c.name}` |" in md
    assert md.endswith("\n") and not md.startswith("\n")


def test_a_studys_markdown_holds_exactly_its_tables():
    for study in KNOWN:
        md = tables.markdown(study)
        got = [ln[5:-1] for ln in md.splitlines() if ln.startswith("### `")]
        assert got == [n for n, s in tables.registered().items() if study in s.studies], study
        assert md == "\n".join(tables.table_markdown(tables.spec(n)) for n in got)


def test_the_output_tables_page_is_generated():
    text = TABLES_PAGE.read_text(encoding="utf-8")
    block = "<!-- gen:tables -->\n" + tables.markdown() + "<!-- /gen -->"
    assert block in text, (
        "docs/reference/tables.md differs from irsim.tables.markdown(); regenerate it with "
        "`python -m irsim.docs docs` (from the repository root)")


def test_a_shared_table_is_the_merge_of_its_writers_claims():
    """The kit declares shared tables with no writer; each writer's claim adds itself, the
    columns it fills and its notes, in listing order; a new writer touches nothing else."""
    from dataclasses import dataclass

    from irsim import registry
    from irsim.kit import tables as kit
    from irsim.params import option

    assert all(s.studies == () for s in (*kit.SWAP_TABLES, kit.TYPE_M_S))
    tms = tables.spec("type_m_s")
    assert tms.studies == ("test_errors", "multiple_testing")
    assert {c.name: c.filled_by for c in tms.columns if c.optional} == {
        "delta": ("test_errors",), "m": ("multiple_testing",),
        "share_null": ("multiple_testing",), "correction": ("multiple_testing",)}
    trials = next(c for c in tms.columns if c.name == "trials")
    assert trials.meaning == ("trials; multiple_testing: pair x trial comparisons with a true "
                              "difference")
    assert tables.spec("swap_rates").when == "by discpower only with `experiment.swap=true`"

    @dataclass
    class Cfg:
        B: int = option(1, "Samples.")

    registry.study("claims_toy", config=Cfg, data="matrix", description="x", order=5,
                   tables=[tables.claim(kit.TYPE_M_S, fills=["m"], notes={
                       "": "toy rows.", "n": "toy topics"})])(lambda: None)
    try:
        tms = tables.spec("type_m_s")
        assert tms.studies == ("claims_toy", "test_errors", "multiple_testing")  # order 5 first
        assert " claims_toy: toy rows. test_errors: one row per delta" in tms.description
        cols = {c.name: c for c in tms.columns}
        assert cols["m"].filled_by == ("claims_toy", "multiple_testing")
        assert cols["n"].meaning == "topics per trial; claims_toy: toy topics"
    finally:  # leave the registry as the other tests expect it
        registry._REGISTRY.pop("claims_toy")
        tables._CLAIMS["type_m_s"].pop("claims_toy")
        tables.TABLES["type_m_s"] = tables._merged(kit.TYPE_M_S, tables._CLAIMS["type_m_s"])
    assert tables.spec("type_m_s").studies == ("test_errors", "multiple_testing")


def test_a_claim_refuses_what_the_shared_table_does_not_hold():
    from irsim.kit import tables as kit

    with pytest.raises(ValueError, match=r"fills \['n'\] are not among its partial columns"):
        tables.claim(kit.TYPE_M_S, fills=["n"])
    with pytest.raises(ValueError, match=r"notes on unknown column\(s\) \['nn'\]"):
        tables.claim(kit.TYPE_M_S, notes={"nn": "x"})
    with pytest.raises(ValueError, match="only a shared table"):
        tables.claim(tables.spec("asl"))
    other = tables.table_spec("type_m_s", (), "Another.", [tables.column("x", tables.INT, "x")])
    with pytest.raises(ValueError, match="registered already with other contents"):
        tables.add_tables([tables.claim(other)], study="test_errors")

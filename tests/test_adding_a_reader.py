"""The guide "Adding a collection reader" (docs/guides/development.md), followed end to end: its
JSON reader, copied from the page, registers with :func:`irsim.data.readers.register_reader`;
its scores are those of the CSV the JSON file is written from (read with pandas), a study runs
on it through the command line (``irsim.cli.main`` in-process, and a separate process finding
the reader through the entry-point group ``irsim.collections``) and in Python, with the same
tables; a misspelt key of its config is refused. The registry and Hydra's ConfigStore are
cleaned up after the test."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import SHARED_DATA

import irsim
from irsim.data import readers
from irsim.errors import ConfigError, InputError

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guides" / "development.md"
AP = SHARED_DATA / "urbano" / "adhoc8_ap.csv"
RP = SHARED_DATA / "urbano" / "adhoc8_p10.csv"
SETTINGS = ["experiment.B=300", "seed=5", "quiet=true"]

pytestmark = pytest.mark.skipif(not AP.is_file(), reason="shared data not found")


def _reader_source() -> str:
    text = GUIDE.read_text()
    match = re.search(r'```python title="json_scores_reader.py"\n(.*?)```', text, re.S)
    assert match, "the guide's reader block is missing"
    return match.group(1)


@pytest.fixture
def json_reader(tmp_path):
    """The guide's module imported (so registered), then removed: the registry, the module
    and Hydra's nodes ``collection/base_json_scores`` and ``collection/json_scores`` (other
    tests must not see it)."""
    from hydra.core.config_store import ConfigStore

    path = tmp_path / "json_scores_reader.py"
    path.write_text(_reader_source())
    spec = importlib.util.spec_from_file_location("json_scores_reader", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["json_scores_reader"] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        readers.unregister_reader("json_scores")
        sys.modules.pop("json_scores_reader", None)
        for node in ("base_json_scores.yaml", "json_scores.yaml"):
            ConfigStore.instance().repo.get("collection", {}).pop(node, None)


@pytest.fixture
def scores(tmp_path) -> tuple[Path, dict[str, pd.DataFrame]]:
    """A JSON file of the first 12 runs of TREC-8 ad hoc (AP and P@10), and the CSVs' values
    read with pandas (topics 401..450 in row order)."""
    frames = {m: pd.read_csv(f).iloc[:, :12] for m, f in (("AP", AP), ("P@10", RP))}
    for df in frames.values():
        df.index = [str(401 + i) for i in range(len(df))]
    data = {m: {s: df[s].to_dict() for s in df.columns} for m, df in frames.items()}
    path = tmp_path / "adhoc8.json"
    path.write_text(json.dumps(data))
    return path, frames


def test_the_guides_reader_reads_its_scores_and_refuses_bad_input(json_reader, scores,
                                                                  tmp_path):
    from irsim.catalog import catalog
    from irsim.data.collection import load_score_matrix
    from irsim.data.collection import readers as registered
    from irsim.runner import compose_config

    path, frames = scores
    assert registered()["json_scores"].config is json_reader.JsonScoresCollection
    cfg = compose_config(["collection=json_scores", f"collection.path={path}"])
    matrix = load_score_matrix(cfg.collection)
    assert matrix.metrics == ("AP", "P@10") and matrix.systems == tuple(frames["AP"].columns)
    for i, df in enumerate(frames.values()):
        assert matrix.topics == tuple(df.index)
        np.testing.assert_array_equal(matrix.values[i], df.to_numpy().T)
    assert load_score_matrix(cfg.collection, metrics=["P@10"]).metrics == ("P@10",)
    assert catalog()["collections"]["json_scores"].startswith("[json_scores] per-topic scores")
    # its config is typed: a misspelt key is refused, naming the valid ones
    from irsim.conf import check_keys

    with pytest.raises(ConfigError, match="collection.pth.*collection.path"):
        check_keys(compose_config(["collection=json_scores", "+collection.pth=x"]))
    bad = tmp_path / "bad.json"
    bad.write_text('{"AP": {"a": {"1": 0.5}},\n "P@10": {"a": {}}}')
    with pytest.raises(InputError, match="every metric needs a score"):
        load_score_matrix({"kind": "json_scores", "path": str(bad)})
    bad.write_text('{"AP":\n ')
    with pytest.raises(InputError, match="not JSON") as err:
        load_score_matrix({"kind": "json_scores", "path": str(bad)})
    assert err.value.line == 2


def test_a_study_on_the_reader_gives_one_table_in_both_doors(json_reader, scores, tmp_path):
    from irsim.cli import main

    path, frames = scores
    code = main(["experiment=discpower", "collection=json_scores",
                 f"collection.path={path}", "metrics=[AP]", *SETTINGS,
                 f"hydra.run.dir={tmp_path / 'cli'}"])
    assert code in (0, None)
    cli = pq.read_table(tmp_path / "cli" / "results" / "discpower.parquet")
    python = irsim.discpower(frames["AP"], metric="AP", B=300, seed=5)
    assert cli.equals(python.tables["discpower"])
    assert cli.num_rows > 0 and 0 < np.mean(cli.column("sensitivity").to_numpy()) <= 1


@pytest.mark.slow  # a separate process (about 10 s)
def test_a_distributions_reader_is_found_through_its_entry_point(scores, tmp_path):
    path, frames = scores
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "json_scores_reader.py").write_text(_reader_source())
    info = plugin / "irsim_json_scores-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: irsim-json-scores\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text("[irsim.collections]\n"
                                           "json_scores = json_scores_reader\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(plugin), os.environ.get("PYTHONPATH", "")]), "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, "-m", "irsim", "experiment=discpower",
                        "collection=json_scores", f"collection.path={path}",
                        "metrics=[AP]", *SETTINGS, f"hydra.run.dir={tmp_path / 'cli'}"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    cli = pq.read_table(tmp_path / "cli" / "results" / "discpower.parquet")
    assert cli.equals(irsim.discpower(frames["AP"], metric="AP", B=300, seed=5)
                      .tables["discpower"])
    assert "json_scores" not in readers.READERS  # this process never imported it

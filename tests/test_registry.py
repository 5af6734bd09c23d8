"""Collection registry: data dir, resolving and downloading files (file:// URLs), and the
named collection configs."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

import irsim
from irsim.data.matrix_io import read_urbano_csv
from irsim.data.registry import (
    FileSpec,
    data_dir_from,
    file_sha256,
    parse_file_spec,
    resolve_file,
)
from irsim.errors import ConfigError, InputError

CONF = Path(irsim.__file__).resolve().parent / "conf" / "collection"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def source(tmp_path) -> tuple[Path, bytes]:
    """A file 'published' at a file:// URL."""
    data = b"run1,run2\r\n0.25,0.5\r\n0.75,1\r\n"
    p = tmp_path / "published" / "x_ap.csv"
    p.parent.mkdir()
    p.write_bytes(data)
    return p, data


# ----------------------------------------------------------------------------- data dir


def test_data_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("IRSIM_DATA_DIR", raising=False)
    assert data_dir_from(None) == tmp_path / "home" / ".cache" / "irsim"
    monkeypatch.setenv("IRSIM_DATA_DIR", "")
    assert data_dir_from(None) == tmp_path / "home" / ".cache" / "irsim"
    monkeypatch.setenv("IRSIM_DATA_DIR", str(tmp_path / "env"))
    assert data_dir_from(None) == tmp_path / "env"
    assert data_dir_from("") == tmp_path / "env"
    assert data_dir_from(tmp_path / "explicit") == tmp_path / "explicit"
    assert data_dir_from("~/d") == tmp_path / "home" / "d"


# ----------------------------------------------------------------------------- local files


def test_relative_and_absolute_paths(tmp_path, source):
    src, _ = source
    assert resolve_file("published/x_ap.csv", data_dir=tmp_path) == src
    assert resolve_file({"file": str(src)}, data_dir=tmp_path / "elsewhere") == src
    assert resolve_file(FileSpec("x_ap.csv"), data_dir=src.parent) == src


def test_relative_path_uses_env_data_dir(monkeypatch, tmp_path, source):
    monkeypatch.setenv("IRSIM_DATA_DIR", str(tmp_path))
    assert resolve_file("published/x_ap.csv") == source[0]


def test_missing_file_without_url(tmp_path):
    with pytest.raises(InputError, match="file not found") as info:
        resolve_file({"file": "urbano/none.csv", "url": None, "sha256": None}, data_dir=tmp_path)
    assert info.value.file == str(tmp_path / "urbano" / "none.csv")


def test_present_file_is_verified(tmp_path, source):
    src, data = source
    assert resolve_file({"file": str(src), "sha256": sha(data)}, data_dir=tmp_path) == src
    wrong = "0" * 64
    with pytest.raises(InputError) as info:
        resolve_file({"file": str(src), "sha256": wrong}, data_dir=tmp_path)
    msg = str(info.value)
    assert str(src) in msg and wrong in msg and sha(data) in msg
    # verification can be switched off for a file the user knowingly changed
    assert resolve_file({"file": str(src), "sha256": wrong}, data_dir=tmp_path,
                        verify=False) == src


# ----------------------------------------------------------------------------- downloads


def test_download_once_then_cached(tmp_path, source):
    src, data = source
    data_dir = tmp_path / "cache"
    spec = {"file": "urbano/x_ap.csv", "url": src.as_uri(), "sha256": sha(data)}
    got = resolve_file(spec, data_dir=data_dir)
    assert got == data_dir / "urbano" / "x_ap.csv"
    assert got.read_bytes() == data  # byte-exact, CRLF kept
    assert sorted(p.name for p in got.parent.iterdir()) == ["x_ap.csv"]  # no temp left
    # cached: works with the source gone, and offline
    src.unlink()
    assert resolve_file(spec, data_dir=data_dir) == got
    assert resolve_file(spec, data_dir=data_dir, offline=True) == got
    assert read_urbano_csv(got, "AP").shape == (1, 2, 2)


def test_no_download_when_offline(tmp_path, source):
    src, data = source
    spec = {"file": "x_ap.csv", "url": src.as_uri(), "sha256": sha(data)}
    with pytest.raises(InputError, match="offline mode is on") as info:
        resolve_file(spec, data_dir=tmp_path / "cache", offline=True)
    assert info.value.file == str(tmp_path / "cache" / "x_ap.csv")
    assert not (tmp_path / "cache" / "x_ap.csv").exists()


def test_sha_mismatch_on_download(tmp_path, source):
    src, data = source
    wrong = "ab" * 32
    spec = {"file": "x_ap.csv", "url": src.as_uri(), "sha256": wrong}
    with pytest.raises(InputError) as info:
        resolve_file(spec, data_dir=tmp_path / "cache")
    msg = str(info.value)
    assert "sha256 mismatch" in msg and wrong in msg and sha(data) in msg
    assert info.value.file == str(tmp_path / "cache" / "x_ap.csv")
    assert list((tmp_path / "cache").iterdir()) == []  # nothing kept, not even a temp file


def test_download_without_sha_is_allowed(tmp_path, source, caplog):
    src, data = source
    got = resolve_file({"file": "x.csv", "url": src.as_uri()}, data_dir=tmp_path / "c")
    assert got.read_bytes() == data
    assert sha(data) in caplog.text  # the warning tells the user what to pin


def test_failed_download(tmp_path):
    spec = {"file": "x.csv", "url": (tmp_path / "absent.csv").as_uri(), "sha256": None}
    with pytest.raises(InputError, match="download from .* failed"):
        resolve_file(spec, data_dir=tmp_path / "c")
    assert list((tmp_path / "c").iterdir()) == []


def test_omegaconf_spec(tmp_path, source):
    src, data = source
    spec = OmegaConf.create({"file": "y.csv", "url": src.as_uri(), "sha256": sha(data)})
    assert resolve_file(spec, data_dir=tmp_path / "c").read_bytes() == data


@pytest.mark.parametrize("spec,needle", [
    ({"file": "a.csv", "path": "b"}, "unknown key(s) path"),
    ({"url": "https://example.org/a.csv"}, "needs a 'file' path"),
    ({"file": "a.csv", "sha256": "xyz"}, "64 hex digits"),
    ({"file": "a.csv", "url": "ftp://example.org/a.csv"}, "scheme must be one of"),
    ("", "path is empty"),
    (42, "must be a path or a mapping"),
])
def test_bad_specs(spec, needle):
    with pytest.raises(ConfigError) as info:
        parse_file_spec(spec)
    assert needle in str(info.value)


def test_file_sha256(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 3_000_000)  # more than one read chunk
    assert file_sha256(p) == sha(b"x" * 3_000_000)


# ----------------------------------------------------------------------------- named configs

NAMED = {
    "adhoc5": ("AP", "P@10", "RR"),
    "adhoc6": ("AP", "P@10", "RR"),
    "adhoc7": ("AP", "P@10", "RR"),
    "adhoc8": ("AP", "P@10", "RR"),
    "web2010": ("AP", "P@10", "P@20", "RR", "nDCG@20", "ERR@20"),
    "web2011": ("AP", "P@10", "P@20", "RR", "nDCG@20", "ERR@20"),
    "web2012": ("AP", "P@10", "P@20", "RR", "nDCG@20", "ERR@20"),
}
SUFFIX = {"AP": "ap", "P@10": "p10", "P@20": "p20", "RR": "rr", "nDCG@20": "ndcg20",
          "ERR@20": "err20"}
RAW_URL = re.compile(r"https://raw\.githubusercontent\.com/julian-urbano/[\w.-]+/[0-9a-f]{40}/"
                     r"data/(?P<name>[\w]+\.csv)")


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_collection_config(name, shared_data):
    cfg = yaml.safe_load((CONF / f"{name}.yaml").read_text())
    assert set(cfg) == {"defaults", "kind", "name", "description", "paths"}
    assert cfg["defaults"] == ["base_matrix", "_self_"]  # typed: irsim.conf.schema
    assert cfg["kind"] == "matrix" and cfg["name"] == name
    assert tuple(cfg["paths"]) == NAMED[name]
    shape = re.search(r"(\d+) runs x (\d+) topics", cfg["description"])
    assert shape, cfg["description"]
    runs, topics = int(shape[1]), int(shape[2])
    for metric, spec in cfg["paths"].items():
        assert set(spec) == {"file", "url", "sha256"}
        assert spec["file"] == f"urbano/{name}_{SUFFIX[metric]}.csv"
        if spec["url"] is not None:
            hit = RAW_URL.fullmatch(spec["url"])
            assert hit and hit["name"] == Path(spec["file"]).name, spec["url"]
        # resolves in the shared data dir offline, with the sha256 checked
        path = resolve_file(spec, data_dir=shared_data, offline=True)
        assert file_sha256(path) == spec["sha256"]
        assert read_urbano_csv(path, metric).shape == (1, runs, topics)

"""The collection registry: where a collection's files live, and fetching them once.

A file in a collection config is either a plain path, or a mapping
``{file: <path>, url: <url or null>, sha256: <hex or null>}``. Relative paths resolve
against the *data directory* (:func:`data_dir_from`). A file that is absent and has a `url`
is downloaded once into the data directory (to a temporary name, checked against `sha256`,
then renamed), and never in offline mode. ``file://`` URLs work like ``https://`` ones.
The relative ``file`` of a mapping stays inside the data directory: one with a ``..``
component (which would read, or download to, a path outside it) is refused with a
:class:`~irsim.errors.ConfigError` naming the collection and the path.

Named collections live in ``conf/collection/<name>.yaml`` (shipped as ``irsim.conf``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from irsim.data.types import missing_file
from irsim.errors import ConfigError, InputError
from irsim.provenance import file_sha256

__all__ = [
    "DATA_DIR_ENV",
    "DEFAULT_DATA_DIR",
    "FileSpec",
    "data_dir_from",
    "file_sha256",
    "parse_file_spec",
    "resolve_file",
]

log = logging.getLogger(__name__)

#: Environment variable naming the data directory (used when no explicit setting is given).
DATA_DIR_ENV = "IRSIM_DATA_DIR"
#: Data directory used when neither a setting nor the environment variable gives one.
DEFAULT_DATA_DIR = Path("~/.cache/irsim")

_SCHEMES = ("http", "https", "file")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class FileSpec:
    """One file of a collection: a path, and optionally where to fetch it and its hash.

    Parameters
    ----------
    file : str
        Path, absolute or relative to the data directory.
    url : str, optional
        ``http(s)://`` or ``file://`` URL to download the file from when it is absent.
    sha256 : str, optional
        Lower-case hex SHA-256 of the file's bytes.
    """

    file: str
    url: str | None = None
    sha256: str | None = None


def parse_file_spec(spec: str | PathLike | Mapping[str, Any] | FileSpec) -> FileSpec:
    """Normalise a path or a ``{file, url, sha256}`` mapping (dict or OmegaConf) to a FileSpec.

    Examples
    --------
    >>> parse_file_spec("urbano/adhoc8_ap.csv")
    FileSpec(file='urbano/adhoc8_ap.csv', url=None, sha256=None)
    >>> parse_file_spec({"file": "a.csv", "url": None, "sha256": "AB" * 32}).sha256[:4]
    'abab'
    >>> parse_file_spec({"path": "a.csv"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    irsim.errors.ConfigError: config: collection file entry has unknown key(s) path; ...
    """
    if isinstance(spec, FileSpec):
        return spec
    if isinstance(spec, str | PathLike):
        spec = os.fspath(spec)
        if not spec:
            raise ConfigError("collection file path is empty")
        return FileSpec(spec)
    if not isinstance(spec, Mapping):
        raise ConfigError(f"collection file entry must be a path or a mapping with keys file, "
                          f"url, sha256; got {type(spec).__name__}")
    unknown = sorted(set(spec) - {"file", "url", "sha256"})
    if unknown:
        raise ConfigError(f"collection file entry has unknown key(s) {', '.join(unknown)}; "
                          "expected file, url, sha256")
    file = spec.get("file")
    if not isinstance(file, str | PathLike) or not os.fspath(file):
        raise ConfigError(f"collection file entry needs a 'file' path, got {file!r}")
    url = spec.get("url")
    if url is not None:
        if not isinstance(url, str) or not url:
            raise ConfigError(f"collection file url must be a string or null, got {url!r}")
        scheme = urllib.parse.urlsplit(url).scheme.lower()
        if scheme not in _SCHEMES:
            raise ConfigError(f"collection file url {url!r}: scheme must be one of "
                              f"{', '.join(_SCHEMES)}")
    sha = spec.get("sha256")
    if sha is not None:
        sha = str(sha).strip().lower()
        if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise ConfigError(f"collection file sha256 must be 64 hex digits, got {sha!r}")
    return FileSpec(os.fspath(file), url, sha)


def data_dir_from(setting: str | PathLike | None = None) -> Path:
    """The data directory: explicit `setting` > ``$IRSIM_DATA_DIR`` > ``~/.cache/irsim``.

    Empty strings count as unset. ``~`` is expanded; the directory is not created.

    Examples
    --------
    >>> str(data_dir_from("/srv/irsim-data"))
    '/srv/irsim-data'
    >>> data_dir_from("~/data") == Path.home() / "data"
    True
    """
    if setting is not None and os.fspath(setting):
        return Path(setting).expanduser()
    env = os.environ.get(DATA_DIR_ENV, "")
    if env:
        return Path(env).expanduser()
    return DEFAULT_DATA_DIR.expanduser()


def _download(url: str, dest: Path, sha256: str | None, timeout: float) -> None:
    """Fetch `url` to `dest` atomically: temp file in dest's directory, hash check, rename."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310
                    while chunk := resp.read(_CHUNK):
                        h.update(chunk)
                        out.write(chunk)
            except (urllib.error.URLError, OSError, ValueError) as e:
                reason = getattr(e, "reason", None) or e
                raise InputError(f"file missing and download from {url} failed: {reason}",
                                 file=dest) from None
        got = h.hexdigest()
        if sha256 is not None and got != sha256:
            raise InputError(f"sha256 mismatch for download from {url}: expected {sha256}, "
                             f"got {got}", file=dest)
        if sha256 is None:
            log.warning("downloaded %s without a sha256 to check; its sha256 is %s", url, got)
        os.replace(tmp, dest)
        log.info("downloaded %s to %s", url, dest)
    finally:
        tmp.unlink(missing_ok=True)


def resolve_file(
    spec: str | PathLike | Mapping[str, Any] | FileSpec,
    *,
    data_dir: str | PathLike | None = None,
    offline: bool = False,
    verify: bool = True,
    timeout: float = 60.0,
    collection: str | None = None,
) -> Path:
    """The local path of a collection file, downloading it once if needed.

    Parameters
    ----------
    spec : path or mapping ``{file, url, sha256}``
        See :class:`FileSpec`. A relative ``file`` resolves against `data_dir`.
    data_dir : str or path-like, optional
        Data directory; default :func:`data_dir_from` (``$IRSIM_DATA_DIR`` or
        ``~/.cache/irsim``).
    offline : bool
        Never download; a missing file is an error saying so.
    verify : bool
        Also check the sha256 of a file that is already present (default). A download is
        always checked when a sha256 is given.
    timeout : float
        Seconds before a stalled download fails.
    collection : str, optional
        The collection the file belongs to (named in error messages).

    Returns
    -------
    Path
        An existing file whose bytes match `sha256` (when given).

    Raises
    ------
    InputError
        The file is missing and there is no url, or offline mode is on; the download failed;
        the sha256 of the file (downloaded or present) differs from the expected one (the
        message names the file and both hashes).
    ConfigError
        A malformed spec, or the relative ``file`` of a mapping that leaves the data
        directory (a ``..`` component).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> src = pathlib.Path(tempfile.mkdtemp()) / "src.csv"
    >>> _ = src.write_text("run1\\n0.5\\n")
    >>> spec = {"file": "cache/a.csv", "url": src.as_uri(), "sha256": file_sha256(src)}
    >>> data = pathlib.Path(tempfile.mkdtemp())
    >>> p = resolve_file(spec, data_dir=data)          # downloaded once
    >>> p == data / "cache" / "a.csv", p.read_text()
    (True, 'run1\\n0.5\\n')
    >>> resolve_file(spec, data_dir=data, offline=True) == p   # cached: no network needed
    True
    """
    entry = not isinstance(spec, str | PathLike)  # a {file, url, sha256} mapping
    fs = parse_file_spec(spec)
    base = data_dir_from(data_dir)
    path = Path(fs.file).expanduser()
    if not path.is_absolute():
        if entry and ".." in path.parts:
            owner = f"collection {collection}" if collection else "collection file"
            raise ConfigError(f"{owner}: file {fs.file!r} leaves the data directory {base} "
                              f"(a '..' component); a relative collection file stays inside "
                              f"the data directory")
        path = base / path
    if path.is_file():
        if fs.sha256 is not None and verify:
            got = file_sha256(path)
            if got != fs.sha256:
                raise InputError(f"sha256 mismatch: expected {fs.sha256}, got {got}", file=path)
        return path
    if path.exists():
        raise InputError("not a regular file", file=path)
    if os.path.lexists(path):  # a symlink loop, a broken symlink, no permission
        raise InputError(missing_file(path), file=path)
    if fs.url is None:
        raise InputError(f"file not found (data directory {base}; no url to download from)",
                         file=path)
    if offline:
        raise InputError(f"file not found and offline mode is on, so it is not downloaded "
                         f"from {fs.url}", file=path)
    _download(fs.url, path, fs.sha256, timeout)
    return path


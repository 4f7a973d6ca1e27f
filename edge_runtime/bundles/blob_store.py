"""Content-addressed store on the device: every blob lives under its own sha256.

Bundles reference the target model by content hash instead of carrying it, so a device
keeps one copy of each model file however many bundles use it, and a push only has to
transfer the blobs ``missing()`` names. Writes go to a temporary file that is renamed
into place only once its hash is known to be right, so a crash or a corrupt transfer
never leaves a blob whose name lies about its content.

Layout under ``root``::

    blobs/ab/abcdef...      one file per blob, named by its sha256 (read-only)
    artefacts/<digest>.json index of one target-model artefact: its files and manifest
    artefacts/<digest>/     the materialised artefact: links into blobs/
    tmp/                    in-flight writes (same filesystem, so rename is atomic)

A blob is kept once however many bundles name it; ``prune`` removes those no held bundle names.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from edge_runtime.errors import BlobStoreError

_SHA256 = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20


def artefact_digest(files: Iterable[Mapping[str, Any]]) -> str:
    """The identity of a target-model artefact: sha256 over its files' paths, sizes and hashes.

    Shared by the builder (which records it in a bundle) and the device (which looks the
    artefact up by it), so both sides must compute it from the same canonical form: one
    line ``path NUL size NUL sha256 LF`` per file, sorted by path. Paths are part of it
    because a file's role (``model.onnx`` vs ``tokenizer.json``) is part of the artefact.
    """
    digest = hashlib.sha256()
    for item in sorted(files, key=lambda f: str(f["path"])):
        digest.update(f"{item['path']}\0{int(item['size'])}\0{item['sha256']}\n".encode())
    return digest.hexdigest()


def list_artefact_files(artefact_dir: Path) -> list[dict[str, Any]]:
    """Every regular file of an artefact directory as ``{path, size, sha256}``, sorted by path."""
    return _artefact_files(Path(artefact_dir), sha256_file)


def _artefact_files(root: Path, hasher: Any) -> list[dict[str, Any]]:
    if not (root / "manifest.json").is_file():
        raise BlobStoreError(f"{root} is not a target-model artefact (no manifest.json)")
    return [
        {"path": file.relative_to(root).as_posix(), "size": file.stat().st_size, "sha256": hasher(file)}
        for file in sorted(p for p in root.rglob("*") if p.is_file())
    ]


def sha256_file(path: Path) -> str:
    """The sha256 of a file, read in blocks (model files are hundreds of MB): a blob's name."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_sha(sha256: str) -> str:
    """Hashes become file names, so anything but 64 lowercase hex digits is refused (no traversal)."""
    if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
        raise BlobStoreError(f"not a sha256 hex digest: {sha256!r}")
    return sha256


def _check_relative(path: str) -> PurePosixPath:
    """An artefact file path must stay inside the artefact directory."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or "\\" in path or any(part in ("", ".", "..") for part in path.split("/")):
        raise BlobStoreError(f"artefact file path {path!r} is not a plain relative path")
    return pure


class BlobStore:
    """Blobs by sha256 plus an index of target-model artefacts; safe against crashes and bad bytes."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        for sub in ("blobs", "artefacts", "tmp"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    # ---- blobs ------------------------------------------------------------
    def path(self, sha256: str) -> Path:
        """Where the blob ``sha256`` lives (whether or not it is present yet)."""
        sha = _check_sha(sha256)
        return self.root / "blobs" / sha[:2] / sha

    def has(self, sha256: str) -> bool:
        return self.path(sha256).is_file()

    def missing(self, file_list: Iterable[Mapping[str, Any] | str]) -> list[str]:
        """The hashes of ``file_list`` (dicts with ``sha256``, or bare hashes) not stored yet, once each."""
        out: list[str] = []
        for item in file_list:
            sha = item if isinstance(item, str) else item["sha256"]
            if sha not in out and not self.has(sha):
                out.append(sha)
        return out

    def put_bytes(self, data: bytes, expected_sha256: str | None = None) -> str:
        """Store ``data``; returns its sha256. ``expected_sha256`` (when given) must match or nothing is stored."""
        sha = hashlib.sha256(data).hexdigest()
        return self._commit(lambda out: out.write(data), sha, expected_sha256)

    def put_file(self, path: Path | str, expected_sha256: str | None = None) -> str:
        """Store a copy of the file at ``path``, hashing exactly the bytes written; returns its sha256."""
        digest = hashlib.sha256()

        def copy(out: Any) -> None:
            with open(path, "rb") as src:
                for block in iter(lambda: src.read(_CHUNK), b""):
                    digest.update(block)
                    out.write(block)

        return self._commit(copy, None, expected_sha256, digest)

    def put_chunks(self, chunks: Iterable[bytes], expected_sha256: str) -> str:
        """Store a stream (a registry download) without holding it in memory; kept only if it hashes to
        ``expected_sha256``. An exception from ``chunks`` (a dropped connection) leaves nothing behind."""
        digest = hashlib.sha256()

        def copy(out: Any) -> None:
            for block in chunks:
                digest.update(block)
                out.write(block)

        return self._commit(copy, None, expected_sha256, digest)

    def _commit(self, write: Any, sha: str | None, expected: str | None, digest: Any = None) -> str:
        """Write to tmp/, fsync, check the hash, then rename into blobs/ (atomic on one filesystem)."""
        if expected is not None:
            _check_sha(expected)
        fd, tmp_name = tempfile.mkstemp(dir=self.root / "tmp", prefix="blob-")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                write(out)
                out.flush()
                os.fsync(out.fileno())
            if sha is None:
                sha = digest.hexdigest()
            if expected is not None and sha != expected:
                raise BlobStoreError(f"content hash {sha} does not match the expected {expected}; not stored")
            final = self.path(sha)
            if final.is_file():
                return sha
            final.parent.mkdir(exist_ok=True)
            os.chmod(tmp, 0o444)  # blobs are immutable; materialised artefacts hard-link them
            os.replace(tmp, final)
            return sha
        finally:
            tmp.unlink(missing_ok=True)

    def import_from_dir(self, directory: Path | str, wanted: Iterable[str]) -> list[str]:
        """Store those of ``wanted`` present as ``directory/<sha256>`` (the blob directory arc-build writes
        beside a bundle), each checked against its name; returns the hashes stored."""
        stored = []
        for sha in wanted:
            source = Path(directory) / _check_sha(sha)
            if source.is_file():
                self.put_file(source, expected_sha256=sha)
                stored.append(sha)
        return stored

    def prune(self, keep: Iterable[str], *, older_than_s: float = 3600.0) -> list[str]:
        """Remove the blobs not in ``keep``, the target-model artefacts built from them and leftover temp
        files; returns the hashes removed. Anything written in the last ``older_than_s`` seconds stays:
        it may belong to a bundle whose push is not finished (model blobs go before the bundle)."""
        kept, cutoff = set(keep), time.time() - older_than_s
        removed = []
        for blob in sorted((self.root / "blobs").glob("*/*")):
            if blob.name not in kept and blob.stat().st_mtime <= cutoff:
                blob.unlink()
                removed.append(blob.name)
        gone = set(removed)
        for index in (self.root / "artefacts").glob("*.json"):
            files = json.loads(index.read_text(encoding="utf-8")).get("files", [])
            if any(item.get("sha256") in gone for item in files):
                shutil.rmtree(self.root / "artefacts" / index.stem, ignore_errors=True)  # its hard links hold bytes too
                index.unlink()
        for stale in [*(self.root / "tmp").iterdir(), *self.root.glob("push-*")]:
            if stale.stat().st_mtime <= cutoff:
                shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
        return removed

    def used_bytes(self) -> int:
        """Bytes held in blobs/ (what the push quota counts)."""
        return sum(p.stat().st_size for p in (self.root / "blobs").glob("*/*") if p.is_file())

    def verify(self, sha256: str) -> bool:
        """Re-hash a stored blob (for audits: a disk can rot what a rename once made right)."""
        path = self.path(sha256)
        return path.is_file() and sha256_file(path) == sha256

    # ---- target-model artefacts ------------------------------------------
    def import_target_model(self, artefact_dir: Path | str) -> str:
        """Store every file of an artefact directory by hash and index it; returns the artefact digest."""
        files = _artefact_files(Path(artefact_dir), self.put_file)  # one read per file: hash while storing
        manifest = json.loads((Path(artefact_dir) / "manifest.json").read_text(encoding="utf-8"))
        return self.register_target_model(files, manifest)

    def register_target_model(self, files: list[dict[str, Any]], manifest: Mapping[str, Any]) -> str:
        """Index an artefact whose blobs were pushed one by one (all must be present); returns its digest."""
        absent = self.missing(files)
        if absent:
            raise BlobStoreError(f"cannot index the artefact: {len(absent)} blob(s) missing, first {absent[0]}")
        for item in files:
            _check_relative(item["path"])
        digest = artefact_digest(files)
        index = {"digest": digest, "files": [dict(f) for f in files], "manifest": dict(manifest)}
        fd, tmp_name = tempfile.mkstemp(dir=self.root / "tmp", prefix="index-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(index, out, indent=1, sort_keys=True)
        os.replace(tmp_name, self.root / "artefacts" / f"{digest}.json")
        return digest

    def target_model_index(self, digest: str) -> dict[str, Any]:
        """The stored index of an artefact (files and manifest), or BlobStoreError when unknown."""
        index_path = self.root / "artefacts" / f"{_check_sha(digest)}.json"
        if not index_path.is_file():
            raise BlobStoreError(f"target model {digest} is not in the store")
        return json.loads(index_path.read_text(encoding="utf-8"))

    def materialise_target_model(self, digest: str) -> Path:
        """A directory holding the artefact's files (hard links into the store, symlinks as fallback).

        The directory is built under tmp/ and renamed into place, so ``LMEngine`` never sees a
        half-built artefact; a second call returns the existing directory.
        """
        index = self.target_model_index(digest)
        files = index["files"]
        if artefact_digest(files) != digest:
            raise BlobStoreError(f"index of target model {digest} does not hash to its name")
        final = self.root / "artefacts" / digest
        if final.is_dir() and all((final / f["path"]).is_file() for f in files):
            return final
        absent = self.missing(files)
        if absent:
            raise BlobStoreError(f"target model {digest}: {len(absent)} blob(s) missing, first {absent[0]}")
        staging = Path(tempfile.mkdtemp(dir=self.root / "tmp", prefix="artefact-"))
        try:
            for item in files:
                dest = staging / _check_relative(item["path"])
                dest.parent.mkdir(parents=True, exist_ok=True)
                blob = self.path(item["sha256"])
                try:
                    os.link(blob, dest)
                except OSError:  # another filesystem, or no hard links: point at the blob instead
                    os.symlink(blob.resolve(), dest)
            if final.exists():
                shutil.rmtree(final)
            try:
                os.rename(staging, final)
            except OSError:
                if not final.is_dir():  # lost a race to another materialiser: theirs is as good as ours
                    raise
            return final
        finally:
            shutil.rmtree(staging, ignore_errors=True)

"""The fleet's TUF repository on the build server: four role keys and the signed metadata naming each bundle.

TUF (python-tuf's Metadata API) says *which* bundle version devices should run and keeps that statement
fresh and unreplayable: ``targets`` lists every published ``NAME/VERSION`` with the sha256 and length of
its OCI manifest (and, in ``custom.arc``, the bundle name, version, manifest digest and sizes),
``snapshot`` pins the targets version, ``timestamp`` pins the snapshot and expires soon, ``root`` holds
the keys of all four roles. A device trusts only its ``root.json`` and refuses metadata whose version went
down (a replay) or whose expiry passed. The bundle signature (builder/keys.py) still covers the bundle
itself; TUF covers the choice of bundle.

Layout of ``DIR`` (``arc-build tuf init``, default ``$ARC_TUF_DIR`` or ``~/.config/arc/tuf``)::

    keys/{root,targets,snapshot,timestamp}.pem   private keys, 0600, never overwritten
    metadata/root.json (= 1.root.json), N.targets.json, N.snapshot.json, timestamp.json   the current set
    metadata/targets.json, snapshot.json          the newest of each (what the next publish starts from)
    lifetimes.json                                days each role's metadata stays valid (set at init)

The root key signs only root: keep ``keys/root.pem`` offline once devices have ``root.json``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from securesystemslib.signer import CryptoSigner, SSlibKey
from tuf.api.metadata import Metadata, MetaFile, Root, Snapshot, TargetFile, Targets, Timestamp
from tuf.api.serialization.json import JSONSerializer

from edge_runtime.errors import SigningKeyError

ROLES = ("root", "targets", "snapshot", "timestamp")
#: Default lifetimes: the timestamp is the freshness guarantee (re-sign it with ``arc-build tuf refresh``).
EXPIRY_DAYS = {"root": 365.0, "targets": 90.0, "snapshot": 30.0, "timestamp": 7.0}


def default_tuf_dir() -> Path:
    override = os.environ.get("ARC_TUF_DIR")
    return Path(override).expanduser() if override else Path.home() / ".config" / "arc" / "tuf"


def _expiry(days: float) -> datetime:
    return (datetime.now(timezone.utc) + timedelta(days=days)).replace(microsecond=0)


def _write_key(path: Path, signer: CryptoSigner) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as exc:
        raise SigningKeyError(f"{path} exists already; refusing to overwrite a TUF key (pass another --dir)") from exc
    with os.fdopen(fd, "wb") as out:
        out.write(signer.private_bytes)


def _load_signer(path: Path) -> CryptoSigner:
    if not path.is_file():
        raise SigningKeyError(f"{path}: no such TUF key; make the repository with `arc-build tuf init --dir DIR`")
    private = serialization.load_pem_private_key(path.read_bytes(), password=None)
    return CryptoSigner(private, SSlibKey.from_crypto(private.public_key()))


@dataclass
class TufRepository:
    """The metadata and keys under one directory; ``add_bundle`` and ``refresh`` write a new signed set."""

    root_dir: Path

    @property
    def metadata_dir(self) -> Path:
        return self.root_dir / "metadata"

    @property
    def root_path(self) -> Path:
        """What devices are given (``arc-edge serve --tuf-root``)."""
        return self.metadata_dir / "root.json"

    @classmethod
    def init(cls, root_dir: Path, *, expiry_days: dict[str, float] | None = None) -> TufRepository:
        """New keys for the four roles and version 1 of every role (no targets yet)."""
        days = {**EXPIRY_DAYS, **(expiry_days or {})}
        repo = cls(Path(root_dir))
        keys_dir = repo.root_dir / "keys"
        if (repo.metadata_dir / "root.json").exists():
            raise SigningKeyError(f"{repo.root_dir} holds a TUF repository already; refusing to replace its root")
        keys_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        repo.metadata_dir.mkdir(parents=True, exist_ok=True)
        (repo.root_dir / "lifetimes.json").write_text(json.dumps(days, indent=1))
        signers = {role: CryptoSigner.generate_ed25519() for role in ROLES}
        for role, signer in signers.items():
            _write_key(keys_dir / f"{role}.pem", signer)
        root = Root(expires=_expiry(days["root"]), consistent_snapshot=True)
        for role, signer in signers.items():
            root.add_key(signer.public_key, role)
        repo._sign_and_write(Metadata(root), signers["root"], "1.root.json", "root.json")
        repo._sign_and_write(Metadata(Targets(expires=_expiry(days["targets"]))), signers["targets"],
                             "1.targets.json", "targets.json")
        repo._publish_chain(days, signers)
        return repo

    def lifetimes(self, overrides: dict[str, float] | None = None) -> dict[str, float]:
        """Days per role: the defaults, then what ``init`` was given, then ``overrides``."""
        path = self.root_dir / "lifetimes.json"
        stored = json.loads(path.read_text()) if path.is_file() else {}
        return {**EXPIRY_DAYS, **stored, **(overrides or {})}

    def _signer(self, role: str) -> CryptoSigner:
        return _load_signer(self.root_dir / "keys" / f"{role}.pem")

    def _load(self, name: str) -> Metadata:
        path = self.metadata_dir / name
        if not path.is_file():
            raise SigningKeyError(f"{path}: no TUF metadata; make the repository with `arc-build tuf init --dir DIR`")
        return Metadata.from_file(str(path))

    def _sign_and_write(self, md: Metadata, signer: CryptoSigner, *names: str) -> bytes:
        md.signatures.clear()
        md.sign(signer)
        data = md.to_bytes(JSONSerializer(compact=False))
        for name in names:
            tmp = self.metadata_dir / f".{name}.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, self.metadata_dir / name)
        return data

    def _publish_chain(self, days: dict[str, float], signers: dict[str, CryptoSigner] | None = None) -> None:
        """A new snapshot over the current targets and a new timestamp over it."""
        signers = signers or {}
        targets = self._load("targets.json")
        try:
            snapshot = self._load("snapshot.json")
            snapshot.signed.version += 1
        except SigningKeyError:
            snapshot = Metadata(Snapshot())
        snapshot.signed.meta["targets.json"] = MetaFile(version=targets.signed.version)
        snapshot.signed.expires = _expiry(days["snapshot"])
        n = snapshot.signed.version
        self._sign_and_write(snapshot, signers.get("snapshot") or self._signer("snapshot"), f"{n}.snapshot.json",
                             "snapshot.json")
        self.refresh(days["timestamp"], signer=signers.get("timestamp"))

    def refresh(self, timestamp_days: float | None = None, *, signer: CryptoSigner | None = None) -> int:
        """A new timestamp (version + 1) over the current snapshot; returns its version."""
        snapshot = self._load("snapshot.json")
        try:
            timestamp = self._load("timestamp.json")
            timestamp.signed.version += 1
        except SigningKeyError:
            timestamp = Metadata(Timestamp())
        timestamp.signed.snapshot_meta = MetaFile(version=snapshot.signed.version)
        timestamp.signed.expires = _expiry(self.lifetimes()["timestamp"] if timestamp_days is None else timestamp_days)
        self._sign_and_write(timestamp, signer or self._signer("timestamp"), "timestamp.json")
        return timestamp.signed.version

    def add_bundle(self, name: str, version: str, manifest: bytes, custom: dict[str, Any], *,
                   expiry_days: dict[str, float] | None = None) -> int:
        """Name ``NAME/VERSION`` -> the OCI manifest (length, sha256, ``custom.arc``) in a new targets version,
        then a new snapshot and timestamp; returns the targets version."""
        import hashlib

        days = self.lifetimes(expiry_days)
        targets = self._load("targets.json")
        path = f"{name}/{version}"
        targets.signed.targets[path] = TargetFile(
            length=len(manifest), hashes={"sha256": hashlib.sha256(manifest).hexdigest()}, path=path,
            unrecognized_fields={"custom": {"arc": custom}},
        )
        targets.signed.version += 1
        targets.signed.expires = _expiry(days["targets"])
        n = targets.signed.version
        self._sign_and_write(targets, self._signer("targets"), f"{n}.targets.json", "targets.json")
        self._publish_chain(days)
        return n

    def files(self) -> dict[str, bytes]:
        """Every metadata file a device may ask for: each ``N.root.json``, the current ``N.targets.json`` and
        ``N.snapshot.json`` (older ones are already in the registry) and ``timestamp.json``."""
        out = {p.name: p.read_bytes() for p in sorted(self.metadata_dir.glob("*.root.json"))}
        targets = self._load("targets.json").signed.version
        snapshot = self._load("snapshot.json").signed.version
        for name in (f"{targets}.targets.json", f"{snapshot}.snapshot.json", "timestamp.json"):
            out[name] = (self.metadata_dir / name).read_bytes()
        return out

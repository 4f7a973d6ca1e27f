"""A client for the OCI distribution HTTP API (``/v2/``), with every digest checked on our side.

Plain ``urllib`` rather than oras-py: oras 0.2.43 downloads blobs without checking their digests and
skips files by name on pull. Here a blob or a manifest fetched by digest is hashed while it is read and
refused (``RegistryIntegrityError``) when its bytes do not match; an upload first asks (HEAD) whether
the registry holds the digest already, so unchanged layers are never sent twice. Bytes moved in each
direction are counted (``sent``, ``received``): the fleet benchmark reports them.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from edge_runtime.bundles.blob_store import sha256_file
from edge_runtime.errors import ArcError
from edge_runtime.fleet.media import OCI_MANIFEST, Reference, check_digest, check_tag

_CHUNK = 1 << 20
MAX_MANIFEST_BYTES = 4 << 20


class RegistryError(ArcError):
    """The registry could not be reached or refused a request (the message names the URL and status)."""


class RegistryNotFound(RegistryError):
    """The registry answered 404 for a tag, manifest or blob."""


class RegistryIntegrityError(RegistryError):
    """Bytes from the registry did not hash to the digest they were asked for."""


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class RegistryClient:
    """One repository of one registry; thread-safe (each call opens its own connection)."""

    def __init__(self, reference: Reference | str, *, timeout_s: float = 30.0) -> None:
        self.ref = Reference.parse(reference) if isinstance(reference, str) else reference
        self.timeout_s = timeout_s
        self.sent = 0
        self.received = 0
        self._count = threading.Lock()

    # ---- plumbing ------------------------------------------------------------
    def _url(self, path: str) -> str:
        return f"{self.ref.base_url}/v2/{self.ref.repository}/{path}"

    def _open(self, method: str, url: str, *, data: Any = None, headers: dict[str, str] | None = None,
              size: int = 0) -> Any:
        request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
        with self._count:
            self.sent += size + len(url) + sum(len(k) + len(v) for k, v in (headers or {}).items())
        try:
            return urllib.request.urlopen(request, timeout=self.timeout_s)
        except urllib.error.HTTPError as exc:
            body = exc.read(4096).decode("utf-8", "replace")
            kind = RegistryNotFound if exc.code == 404 else RegistryError
            raise kind(f"{method} {url}: HTTP {exc.code} {exc.reason}: {body.strip()[:300]}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RegistryError(f"{method} {url}: registry unreachable: {reason}") from None

    def _read(self, response: Any, limit: int | None = None) -> Iterator[bytes]:
        total = 0
        with response:
            while True:
                block = response.read(_CHUNK)
                if not block:
                    return
                total += len(block)
                with self._count:
                    self.received += len(block)
                if limit is not None and total > limit:
                    raise RegistryIntegrityError(f"{response.url}: more than the {limit} bytes expected")
                yield block

    def ping(self) -> None:
        """GET /v2/: raises RegistryError when the registry does not answer as an OCI registry."""
        self._open("GET", f"{self.ref.base_url}/v2/").close()

    # ---- blobs -----------------------------------------------------------------
    def has_blob(self, digest: str) -> bool:
        try:
            self._open("HEAD", self._url(f"blobs/{check_digest(digest)}")).close()
            return True
        except RegistryNotFound:
            return False

    def push_blob(self, source: bytes | Path, digest: str | None = None) -> tuple[str, int, bool]:
        """Upload a blob unless the registry has it; returns (digest, size, uploaded)."""
        if isinstance(source, (bytes, bytearray)):
            size = len(source)
            digest = digest or sha256_digest(bytes(source))
        else:
            size = Path(source).stat().st_size
            digest = digest or "sha256:" + sha256_file(Path(source))
        check_digest(digest)
        if self.has_blob(digest):
            return digest, size, False
        started = self._open("POST", self._url("blobs/uploads/"), data=b"", headers={"Content-Length": "0"})
        location = started.headers.get("Location")
        started.close()
        if not location:
            raise RegistryError(f"{self.ref}: upload started without a Location header")
        location = urllib.parse.urljoin(self.ref.base_url + "/", location)
        sep = "&" if "?" in location else "?"
        put_url = f"{location}{sep}digest={urllib.parse.quote(digest)}"
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
        if isinstance(source, (bytes, bytearray)):
            self._open("PUT", put_url, data=bytes(source), headers=headers, size=size).close()
        else:
            with open(source, "rb") as handle:
                self._open("PUT", put_url, data=handle, headers=headers, size=size).close()
        return digest, size, True

    def blob_chunks(self, digest: str, size: int | None = None) -> Iterator[bytes]:
        """The blob's bytes, in chunks; the last step raises RegistryIntegrityError unless they hash to ``digest``
        (and have ``size`` bytes when given): consume them into something that is discarded on error."""
        check_digest(digest)
        hasher = hashlib.sha256()
        total = 0
        for block in self._read(self._open("GET", self._url(f"blobs/{digest}")), size):
            hasher.update(block)
            total += len(block)
            yield block
        actual = "sha256:" + hasher.hexdigest()
        if actual != digest or (size is not None and total != size):
            raise RegistryIntegrityError(f"blob {digest} from {self.ref}: got {total} bytes hashing to {actual}; refused")

    def get_blob(self, digest: str, size: int | None = None) -> bytes:
        return b"".join(self.blob_chunks(digest, size))

    # ---- manifests -------------------------------------------------------------
    def put_manifest(self, manifest: bytes, reference: str, media_type: str = OCI_MANIFEST) -> str:
        """PUT a manifest under a tag (or its own digest); returns its digest."""
        digest = sha256_digest(manifest)
        if reference.startswith("sha256:"):
            if reference != digest:
                raise RegistryIntegrityError(f"manifest digest {digest} is not the reference {reference}")
        else:
            check_tag(reference)
        self._open("PUT", self._url(f"manifests/{reference}"), data=manifest,
                   headers={"Content-Type": media_type}, size=len(manifest)).close()
        return digest

    def get_manifest(self, reference: str, *, expected_digest: str | None = None) -> tuple[bytes, str]:
        """A manifest by tag or digest and its digest, computed here; by digest (or with ``expected_digest``)
        a manifest whose bytes hash otherwise is refused."""
        if reference.startswith("sha256:"):
            expected_digest = check_digest(reference)
        else:
            check_tag(reference)
        response = self._open("GET", self._url(f"manifests/{reference}"), headers={"Accept": OCI_MANIFEST})
        data = b"".join(self._read(response, MAX_MANIFEST_BYTES))
        digest = sha256_digest(data)
        if expected_digest is not None and digest != expected_digest:
            raise RegistryIntegrityError(f"manifest {reference} from {self.ref} hashes to {digest}, not {expected_digest}")
        return data, digest

    def get_json_manifest(self, reference: str, *, expected_digest: str | None = None) -> tuple[dict[str, Any], str]:
        data, digest = self.get_manifest(reference, expected_digest=expected_digest)
        try:
            manifest = json.loads(data)
        except ValueError as exc:
            raise RegistryError(f"manifest {reference} from {self.ref} is not JSON: {exc}") from None
        if not isinstance(manifest, dict) or not isinstance(manifest.get("layers"), list):
            raise RegistryError(f"manifest {reference} from {self.ref} is not an OCI image manifest")
        return manifest, digest

    def tags(self) -> list[str]:
        response = self._open("GET", self._url("tags/list"))
        body = json.loads(b"".join(self._read(response, MAX_MANIFEST_BYTES)) or b"{}")
        return list(body.get("tags") or [])

    # ---- one-file artefacts (TUF metadata, miss logs) ------------------------
    def push_file_artefact(self, tag: str, data: bytes, *, media_type: str, config_type: str,
                           config: dict[str, Any], title: str) -> str:
        """Upload ``data`` as the single layer of an artefact tagged ``tag``; returns the manifest digest."""
        config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
        config_digest, config_size, _ = self.push_blob(config_bytes)
        layer_digest, layer_size, _ = self.push_blob(data)
        manifest = {
            "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": config_type,
            "config": {"mediaType": config_type, "digest": config_digest, "size": config_size},
            "layers": [{"mediaType": media_type, "digest": layer_digest, "size": layer_size,
                        "annotations": {"org.opencontainers.image.title": title}}],
        }
        return self.put_manifest(canonical_json(manifest), tag)

    def get_file_artefact(self, tag: str, media_type: str, max_bytes: int) -> bytes:
        """The one layer of ``media_type`` under ``tag``, digest-checked; RegistryNotFound when there is no tag."""
        manifest, _ = self.get_json_manifest(tag)
        layers = [layer for layer in manifest["layers"] if layer.get("mediaType") == media_type]
        if len(layers) != 1:
            raise RegistryError(f"{self.ref}:{tag} is not one {media_type} layer")
        size = int(layers[0]["size"])
        if size > max_bytes:
            raise RegistryError(f"{self.ref}:{tag}: {size} bytes, more than the {max_bytes} allowed")
        return self.get_blob(layers[0]["digest"], size)


def canonical_json(value: Any) -> bytes:
    """Manifests are hashed as bytes: one canonical spelling so the same content gives the same digest."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")


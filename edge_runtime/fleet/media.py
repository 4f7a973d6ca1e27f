"""The fleet's artefact media types, tag names and registry references, shared by builder and device.

One place for both sides, so a publisher and a follower cannot disagree on what a layer is. The
bundle file, each routing blob and each target-model file are layers of one OCI image manifest whose
config (and ``artifactType``) is ours; TUF metadata and miss logs are one-layer artefacts under tags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
BUNDLE = "application/vnd.arc.bundle.v1"
BUNDLE_CONFIG = "application/vnd.arc.bundle.config.v1+json"
MODEL_BLOB = "application/vnd.arc.model-blob.v1"
BLOB = "application/vnd.arc.blob.v1"  # routing table, tokenizer
TUF_METADATA = "application/vnd.arc.tuf.metadata.v1+json"
TUF_CONFIG = "application/vnd.arc.tuf.config.v1+json"
MISSLOG = "application/vnd.arc.misslog.v1+jsonl"
MISSLOG_CONFIG = "application/vnd.arc.misslog.config.v1+json"
TITLE = "org.opencontainers.image.title"  # the layer's path inside the bundle / artefact

_REPO = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def tuf_tag(filename: str) -> str:
    """The registry tag holding one TUF metadata file: ``3.root.json`` -> ``tuf.3.root``, ``timestamp.json``
    -> ``tuf.timestamp`` (tags cannot hold every file name, and one repository holds the whole fleet)."""
    if not filename.endswith(".json"):
        raise ValueError(f"not a TUF metadata file name: {filename!r}")
    tag = "tuf." + filename[: -len(".json")]
    check_tag(tag)
    return tag


def check_tag(tag: str) -> str:
    if not _TAG.fullmatch(tag):
        raise ValueError(f"not an OCI tag: {tag!r}")
    return tag


def check_digest(digest: str) -> str:
    """Digests become URL paths and blob-store names: only ``sha256:`` and 64 lowercase hex digits."""
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise ValueError(f"not a sha256 OCI digest: {digest!r}")
    return digest


@dataclass(frozen=True)
class Reference:
    """``HOST[:PORT]/REPO[:TAG]`` with an optional ``http://``/``https://`` scheme.

    Without a scheme, loopback hosts speak plain HTTP and every other host HTTPS (as docker does)."""

    base_url: str
    repository: str
    tag: str | None = None

    @classmethod
    def parse(cls, text: str) -> Reference:
        scheme = None
        for prefix in ("http://", "https://"):
            if text.startswith(prefix):
                scheme, text = prefix[:-3], text[len(prefix):]
        host, sep, path = text.partition("/")
        if not sep or not host or not path:
            raise ValueError(f"{text!r} is not REGISTRY/REPOSITORY[:TAG] (e.g. 127.0.0.1:5000/arc/examples)")
        tag = None
        last = path.rsplit("/", 1)[-1]
        if ":" in last:
            path, tag = path.rsplit(":", 1)
            check_tag(tag)
        if not _REPO.fullmatch(path):
            raise ValueError(f"{path!r} is not an OCI repository name (lowercase, digits, . _ - and /)")
        if scheme is None:
            hostname = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
            scheme = "http" if hostname in ("127.0.0.1", "localhost", "[::1]") else "https"
        return cls(f"{scheme}://{host}", path, tag)

    def __str__(self) -> str:
        return f"{self.base_url}/{self.repository}" + (f":{self.tag}" if self.tag else "")

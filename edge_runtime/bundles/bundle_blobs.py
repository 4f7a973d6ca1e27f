"""A bundle's out-of-line files (format 2), fetched from the device's blob store and checked before use.

The routing embedding table and the tokenizer are the same in every bundle built with one embedder
(about 16 MB for the examples), so the builder stores them as content-addressed blobs whose hashes the
signed manifest lists, and a code-only update moves only the small bundle file. The store renames a
blob into place only once its hash is right, but a disk can rot and a person can write to it, so
every read here is hashed again against the signed hash; a blob that fails is removed, so that the
next push sends it again instead of MissingBlobs reporting it present for ever.
"""

from __future__ import annotations

import hashlib

from edge_runtime.bundles.blob_store import BlobStore
from edge_runtime.bundles.bundle import Bundle
from edge_runtime.errors import IntegrityError, MissingBlobError

#: How an operator provides a blob the device lacks (named in every missing-blob error).
PUSH_HINT = ("push the bundle again with `arc-edge push BUNDLE.arcb`, which sends the blobs the device lacks from "
             "the blobs/ directory `arc-build bundle` wrote beside it (or `--blobs DIR`; model files: `--model DIR`)")


def bundle_id(bundle: Bundle) -> str:
    return f"{bundle.name}-{bundle.version}"


def needed_blobs(bundle: Bundle) -> dict[str, str]:
    """sha256 -> what it is, for every blob a bundle needs: its out-of-line files and its target model's files."""
    needed = {ref["sha256"]: path for path, ref in bundle.blobs.items()}
    for item in (bundle.target_model or {}).get("files", []):
        needed.setdefault(item["sha256"], f"target model {item['path']}")
    return needed


def missing_blobs(bundle: Bundle, store: BlobStore) -> list[str]:
    """The hashes of ``needed_blobs(bundle)`` the store does not hold, in manifest order."""
    return store.missing(list(needed_blobs(bundle)))


def resolve_files(bundle: Bundle, store: BlobStore) -> dict[str, bytes]:
    """Every file of the bundle, inline and out of line; each out-of-line one hashed against the signed manifest.

    Raises MissingBlobError (naming the blob and how to push it) or IntegrityError (the stored bytes do not
    hash to their name: removed from the store, so a push sends them again)."""
    files = dict(bundle.files)
    for path, ref in bundle.blobs.items():
        sha, size = ref["sha256"], ref["size"]
        location = store.path(sha)
        if not location.is_file():
            raise MissingBlobError(
                f"bundle {bundle_id(bundle)} needs blob {sha} ({path}, {size} bytes), which this device does not "
                f"hold; {PUSH_HINT}"
            )
        data = location.read_bytes()
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha or len(data) != size:
            location.unlink(missing_ok=True)
            raise IntegrityError(
                f"bundle {bundle_id(bundle)}: stored blob {sha} ({path}) hashes to {actual} ({len(data)} bytes), not "
                f"to its signed hash; refused and removed from the store: {PUSH_HINT}"
            )
        files[path] = data
    return files

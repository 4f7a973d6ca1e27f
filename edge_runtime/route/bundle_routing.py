"""IS1 for a bundle: rebuild its static embedder and HNSW router from the bundle's files.

The router (the entries' index) changes with every entry, so it travels inline in the bundle; the
embedder's table and tokenizer are shared by every bundle built with one embedder, so the builder
stores them out of line as blobs (``SHARED_ROUTING_FILES``) and the device fetches them by hash
(edge_runtime/bundles/bundle_blobs.py)."""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from edge_runtime.bundles.bundle import Bundle
from edge_runtime.errors import BundleError
from edge_runtime.route.router import Router
from edge_runtime.route.static_embedder import StaticEmbedder

EMBEDDER_TOKENIZER = "routing/embedder/tokenizer.json"
EMBEDDER_TABLE = "routing/embedder/table.npy"
EMBEDDER_META = "routing/embedder/meta.json"
ROUTER_FILE = "routing/router.msgpack"
#: The routing files a format-2 bundle keeps out of line: ~16 MB that a code-only update need not move.
SHARED_ROUTING_FILES = (EMBEDDER_TOKENIZER, EMBEDDER_TABLE)


def routing_files(embedder: StaticEmbedder, router: Router) -> dict[str, bytes]:
    """The payload files a bundle carries for routing (the table as float16: half the bytes, same ranking)."""
    with tempfile.TemporaryDirectory() as tmp:
        saved = embedder.save(Path(tmp))
        tokenizer = (saved / "tokenizer.json").read_bytes()
        meta = (saved / "meta.json").read_bytes()
    table = io.BytesIO()
    np.save(table, np.asarray(embedder.table, dtype=np.float16), allow_pickle=False)
    return {
        EMBEDDER_TOKENIZER: tokenizer,
        EMBEDDER_TABLE: table.getvalue(),
        EMBEDDER_META: meta,
        ROUTER_FILE: router.to_bytes(),
    }


def embedder_from_files(files: Mapping[str, bytes]) -> StaticEmbedder:
    """The static routing embedder from a bundle's files (tokenizer, float16 table, meta); KeyError or
    ValueError when they are missing or unreadable."""
    tokenizer = Tokenizer.from_str(files[EMBEDDER_TOKENIZER].decode("utf-8"))
    table = np.load(io.BytesIO(files[EMBEDDER_TABLE]), allow_pickle=False).astype(np.float32)
    meta: dict[str, Any] = json.loads(files.get(EMBEDDER_META, b"{}"))
    return StaticEmbedder(tokenizer, table, meta=meta)

def router_from_bundle(bundle: Bundle, files: Mapping[str, bytes] | None = None) -> tuple[Router | None, float]:
    """(router, threshold) from the bundle; (None, 1.0) for a bundle that routes by template only.

    ``files``: the bundle's files with its out-of-line blobs resolved (``bundle_blobs.resolve_files``);
    by default only the inline ones, which is all a format-1 bundle has."""
    files = bundle.files if files is None else files
    if ROUTER_FILE not in files:
        return None, 1.0
    try:
        router = Router.from_bytes(files[ROUTER_FILE], embedder_from_files(files))
    except (KeyError, ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"bundle {bundle.name}-{bundle.version}: routing files unusable: {exc}") from exc
    threshold = float(bundle.routing.get("threshold", 0.6))
    return router, threshold

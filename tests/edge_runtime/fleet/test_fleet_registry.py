"""The device's registry client checks every digest itself (issue 23): a registry (here a lying stand-in)
that serves other bytes than the digest asked for gets them refused, and nothing lands in the blob store."""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from edge_runtime.bundles.blob_store import BlobStore
from edge_runtime.fleet.media import Reference, tuf_tag
from edge_runtime.fleet.registry import RegistryClient, RegistryIntegrityError

GOOD = b"the routing table" * 1000
BAD = b"something else entirely" * 700


@pytest.fixture
def lying_registry():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = BAD if "/blobs/" in self.path else b"{}"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}/arc/examples"
    server.shutdown()


def test_a_blob_whose_bytes_do_not_hash_to_its_digest_is_refused_and_not_stored(lying_registry, tmp_path):
    client = RegistryClient(lying_registry, timeout_s=5)
    digest = "sha256:" + hashlib.sha256(GOOD).hexdigest()
    with pytest.raises(RegistryIntegrityError, match="hashing to"):
        client.get_blob(digest)
    store = BlobStore(tmp_path / "blobs")
    with pytest.raises(RegistryIntegrityError):
        store.put_chunks(client.blob_chunks(digest), digest.removeprefix("sha256:"))
    assert not store.has(digest.removeprefix("sha256:")) and list((tmp_path / "blobs" / "tmp").iterdir()) == []
    with pytest.raises(RegistryIntegrityError, match="more than"):
        client.get_blob(digest, size=100)  # never reads past the size the manifest declared
    with pytest.raises(RegistryIntegrityError, match="hashes to"):
        client.get_manifest("sha256:" + "0" * 64)


def test_references_and_tags():
    assert Reference.parse("127.0.0.1:5000/arc/examples") == Reference("http://127.0.0.1:5000", "arc/examples")
    assert Reference.parse("registry.example.com/fleet/x:7").base_url == "https://registry.example.com"
    assert Reference.parse("registry.example.com/fleet/x:7").tag == "7"
    for bad in ("no-slash", "host/Upper", "host/a/../b"):
        with pytest.raises(ValueError):
            Reference.parse(bad)
    assert tuf_tag("3.root.json") == "tuf.3.root" and tuf_tag("timestamp.json") == "tuf.timestamp"
    with pytest.raises(ValueError):
        tuf_tag("../x.json")

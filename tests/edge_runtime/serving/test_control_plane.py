"""The device's control plane, tried as an attacker and as an operator would, on a real gRPC server.

Admin RPCs only on the 0660 admin socket; bad bytes are INVALID_ARGUMENT on every method; no
downgrade (also across a restart); a stored bundle id is never overwritten; one port, one server.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from edge_runtime.errors import ServerBindError
from edge_runtime.proto import edge_pb2 as pb
from edge_runtime.serving.client import EdgeClient, target
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import ADMIN_METHODS, SERVICE_NAME, create_server
from tests.edge_server_fixtures import example_bundle, make_keys, random_static_embedder

QUESTION = "What is the pressure of 2 moles of gas at 300 K in a 10 litre container?"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("control")
    key, public = make_keys(root / "keys")
    embedder = random_static_embedder(root / "embedder")
    other_embedder = random_static_embedder(root / "embedder-b", seed=1)
    return {
        "public": public,
        "v1": example_bundle(root / "out", key, embedder, "1"),
        "v2": example_bundle(root / "out", key, embedder, "2"),
        "v3": example_bundle(root / "out", key, embedder, "3"),
        "v2-other-bytes": example_bundle(root / "other", key, other_embedder, "2"),
    }


def start(tmp_path: Path, public: bytes, **overrides):
    options = RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[public], use_worker_pool=False, **overrides)
    return create_server(options, address="127.0.0.1:0")


@pytest.fixture
def server(tmp_path, built):
    edge = start(tmp_path, built["public"])
    yield edge
    edge.stop(0)


def admin(edge) -> EdgeClient:
    return EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket, timeout_s=30)


def stranger(edge) -> EdgeClient:
    """A plain client with no credential: only the query listener."""
    return EdgeClient(f"127.0.0.1:{edge.port}", timeout_s=30)


def serve_v(client: EdgeClient, path: Path) -> str:
    staged = client.push(path).staged
    return client.activate(staged.bundle_id).active


def test_every_state_changing_rpc_is_refused_on_the_query_listener(server, built):
    with admin(server) as owner:
        serve_v(owner, built["v1"])
    held = sorted((server.runtime.blobs.root / "blobs").glob("*/*"))  # v1's routing table and tokenizer
    with stranger(server) as client:
        calls = {
            "PushBundle": lambda: client.push_bundle(built["v2"]),
            "PushBlob": lambda: client.stub.PushBlob(iter([pb.BlobChunk(sha256="0" * 64, size=3, data=b"abc")]), timeout=10),
            "ActivateBundle": lambda: client.activate("examples-1"),
            "RollbackBundle": lambda: client.rollback(),
            "MissingBlobs": lambda: client.stub.MissingBlobs(pb.MissingBlobsRequest(sha256=["0" * 64]), timeout=10),
        }
        assert set(calls) == set(ADMIN_METHODS)
        for name, call in calls.items():
            with pytest.raises(grpc.RpcError) as info:
                call()
            assert info.value.code() in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED), name
            assert "admin" in info.value.details()
        # Entry code is for administrators only: the query listener describes an entry without its source.
        assert client.stub.DescribeEntry(pb.DescribeEntryRequest(entry_id="ideal-gas-pressure"), timeout=10).module_source == ""
        # Queries still work, and nothing changed: no v2 was staged.
        assert client.invoke(QUESTION).bundle_version == "1"
        assert [b.bundle_id for b in client.list_bundles().bundles] == ["examples-1"]
    assert sorted((server.runtime.blobs.root / "blobs").glob("*/*")) == held and "0" * 64 not in str(held)


def test_admin_socket_is_0660_and_unreachable_for_others(tmp_path, built):
    """Another user (here uid 65534, "nobody", in a directory it may traverse) cannot connect."""
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user")
    open_dir = Path(tempfile.mkdtemp(prefix="arc-admin-"))
    os.chmod(open_dir, 0o755)
    options = RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[built["public"]], use_worker_pool=False)
    edge = create_server(options, address="127.0.0.1:0", admin_socket=open_dir / "admin.sock")
    try:
        info = os.stat(edge.admin_socket)
        assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o660
        probe = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect(sys.argv[1]); print('connected')\n" \
                "except PermissionError: print('denied')"
        system_python = "/usr/bin/python3"  # the venv's may not be readable by another user
        setpriv = shutil.which("setpriv")
        if not os.access(system_python, os.X_OK) or setpriv is None:
            pytest.skip("no system python3 or setpriv to run as another user")
        # setpriv changes the user after exec: subprocess's own user= forks this process, gRPC threads and all, and
        # gRPC's fork handlers in that copy broke the probe now and then ("epoll_wait error: Bad file descriptor")
        done = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", system_python, "-c", probe,
                               str(edge.admin_socket)], capture_output=True, text=True, timeout=30)
        assert done.stdout.strip() == "denied", done.stderr
        done = subprocess.run([sys.executable, "-c", probe, str(edge.admin_socket)], capture_output=True, text=True,
                              timeout=30)
        assert done.stdout.strip() == "connected"  # the owner can
    finally:
        edge.stop(0)
        (open_dir / "admin.sock").unlink(missing_ok=True)
        open_dir.rmdir()


def test_describe_gives_source_to_admin_only(server, built):
    with admin(server) as owner:
        serve_v(owner, built["v1"])
        assert "def " in owner.describe("ideal-gas-pressure").module_source


GARBAGE = [b"\xff\xff\xff", b"\x12\x05abc", b"\x0a\x80"]  # a bad tag; a truncated field; a truncated length


@pytest.mark.parametrize("data", GARBAGE)
def test_malformed_bytes_are_invalid_argument_on_every_rpc(server, built, data):
    with admin(server) as owner:
        serve_v(owner, built["v1"])
    methods = pb.DESCRIPTOR.services_by_name["EdgeCache"].methods
    query = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    owner_channel = grpc.secure_channel(f"unix:{server.admin_socket}",
                                        grpc.local_channel_credentials(grpc.LocalConnectionType.UDS))
    try:
        for method in methods:
            channel = owner_channel if method.name in ADMIN_METHODS else query
            path = f"/{SERVICE_NAME}/{method.name}"
            kind = (method.client_streaming, method.server_streaming)
            with pytest.raises(grpc.RpcError) as info:
                if kind == (False, False):
                    channel.unary_unary(path, request_serializer=None, response_deserializer=None)(data, timeout=10)
                elif kind == (False, True):
                    list(channel.unary_stream(path, request_serializer=None, response_deserializer=None)(data, timeout=10))
                else:
                    channel.stream_unary(path, request_serializer=None, response_deserializer=None)(iter([data]), timeout=10)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (method.name, info.value.details())
    finally:
        query.close()
        owner_channel.close()
    with stranger(server) as client:  # and it keeps serving
        assert client.invoke(QUESTION).bundle_version == "1"


def test_older_bundle_is_refused_and_the_current_keeps_serving_across_restart(tmp_path, built):
    edge = start(tmp_path, built["public"])
    try:
        with admin(edge) as owner:
            serve_v(owner, built["v2"])
            staged = owner.push(built["v1"]).staged  # a validly signed older bundle may be held ...
            with pytest.raises(grpc.RpcError) as info:
                owner.activate(staged.bundle_id)  # ... but not activated forward
            assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert "not higher than 2" in info.value.details()
            assert owner.invoke(QUESTION).bundle_version == "2"
    finally:
        edge.stop(0)
    assert (tmp_path / "device" / "bundles" / "high-water.json").exists()
    edge = start(tmp_path, built["public"])  # the mark survives a restart
    try:
        with admin(edge) as owner:
            with pytest.raises(grpc.RpcError) as info:
                owner.activate("examples-1")
            assert "not higher than 2" in info.value.details()
            # An authorised rollback may go back to a held version; activate may then go up again, not sideways down.
            assert owner.rollback("examples-1").active == "examples-1"
            assert owner.invoke(QUESTION).bundle_version == "1"
            assert owner.activate("examples-2").active == "examples-2"
    finally:
        edge.stop(0)


def test_second_rollback_says_no_earlier_bundle(server, built):
    with admin(server) as owner:
        serve_v(owner, built["v1"])
        serve_v(owner, built["v2"])
        serve_v(owner, built["v3"])
        assert owner.rollback().active == "examples-2"
        assert owner.rollback().active == "examples-1"
        with pytest.raises(grpc.RpcError) as info:
            owner.rollback()
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "no earlier bundle" in info.value.details()
        assert owner.invoke(QUESTION).bundle_version == "1"


def test_a_stored_bundle_id_is_never_overwritten(server, built):
    with admin(server) as owner:
        serve_v(owner, built["v2"])
        before = (server.runtime.bundles_dir / "examples-2.arcb").read_bytes()
        assert owner.push(built["v2"]).staged.bundle_id == "examples-2"  # the same bytes again: fine
        with pytest.raises(grpc.RpcError) as info:
            _ = owner.push(built["v2-other-bytes"]).staged
        assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS
        assert "never overwritten" in info.value.details()
        assert (server.runtime.bundles_dir / "examples-2.arcb").read_bytes() == before


def test_pinned_names_refuse_other_bundles_of_the_same_key(tmp_path, built):
    edge = start(tmp_path, built["public"], accept_bundle_names=("chemistry",))
    try:
        with admin(edge) as owner:
            with pytest.raises(grpc.RpcError) as info:
                _ = owner.push(built["v1"]).staged
            assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "'examples' refused" in info.value.details()
    finally:
        edge.stop(0)


def test_blob_quota_is_resource_exhausted_and_leaves_nothing(tmp_path, built):
    edge = start(tmp_path, built["public"], max_blob_bytes=1000, max_blob_store_bytes=1500)
    try:
        with admin(edge) as owner:
            def push(data: bytes):
                sha = hashlib.sha256(data).hexdigest()
                return owner.admin_stub.PushBlob(iter([pb.BlobChunk(sha256=sha, size=len(data), data=data)]), timeout=10)

            assert push(b"a" * 900).size == 900
            for data in (b"b" * 1001, b"c" * 900):  # over the per-blob limit; over the total
                with pytest.raises(grpc.RpcError) as info:
                    push(data)
                assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            # a stream that sends more than it declared is cut off too
            with pytest.raises(grpc.RpcError) as info:
                owner.admin_stub.PushBlob(iter([pb.BlobChunk(sha256="0" * 64, size=10, data=b"d" * 500)]), timeout=10)
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        stored = [p for p in edge.runtime.blobs.root.rglob("*") if p.is_file()]
        assert [p.stat().st_size for p in stored if "blobs" in p.parent.parent.name] == [900]
        assert not [p for p in edge.runtime.blobs.root.iterdir() if p.name.startswith("push-")]
    finally:
        edge.stop(0)


def test_two_servers_on_one_port_fail_with_address_in_use(tmp_path, built):
    first = start(tmp_path / "a", built["public"])
    try:
        options = RuntimeOptions(data_dir=tmp_path / "b", trusted_keys=[built["public"]], use_worker_pool=False)
        with pytest.raises(ServerBindError, match="address already in use"):
            create_server(options, address=f"127.0.0.1:{first.port}")
        options = RuntimeOptions(data_dir=tmp_path / "c", trusted_keys=[built["public"]], use_worker_pool=False)
        with pytest.raises(ServerBindError, match="in use by another running server"):
            create_server(options, address="127.0.0.1:0", admin_socket=first.admin_socket)
    finally:
        first.stop(0)


def test_target_defaults_to_the_device_port():
    assert target("localhost") == "localhost:50551"
    assert target("10.0.0.2:7000") == "10.0.0.2:7000"
    assert target("unix:/run/arc.sock") == "unix:/run/arc.sock"
    assert target("::1") == "[::1]:50551"


def test_cli_activate_rollback_list_stats(server, built, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    common = ["--to", f"127.0.0.1:{server.port}", "--admin-socket", str(server.admin_socket)]

    def arc_edge(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "edge_runtime.cli", *args], capture_output=True, text=True, env=env,
                              timeout=120)

    for path in (built["v1"], built["v2"]):
        done = arc_edge("push", str(path), "--activate", *common)
        assert done.returncode == 0, done.stderr
    listing = arc_edge("list", *common)
    assert listing.returncode == 0 and "* examples-2" in listing.stdout and "  examples-1" in listing.stdout
    assert "active: examples-1" in arc_edge("rollback", *common).stdout
    again = arc_edge("rollback", *common)
    assert again.returncode == 2 and "no earlier bundle" in again.stderr
    refused = arc_edge("activate", "examples-1", "--to", f"127.0.0.1:{server.port}")  # no admin socket given
    assert refused.returncode == 2
    assert '"active_bundle": "examples-1"' in arc_edge("stats", *common).stdout


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_second_serve_on_a_busy_port_says_address_in_use(tmp_path):
    """Issue 25: a second `arc-edge serve` on the port of a running one exits 2 with one line."""
    import time

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3]), "ORT_DISABLE_TELEMETRY": "1"}
    port = _free_port()
    serve = [sys.executable, "-m", "edge_runtime.cli", "serve", "--insecure-allow-unsigned", "--port", str(port)]
    first = subprocess.Popen([*serve, "--data-dir", str(tmp_path / "a")], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not (tmp_path / "a" / "admin.sock").exists() and time.time() < deadline:
            assert first.poll() is None, first.stderr.read()
            time.sleep(0.1)
        second = subprocess.run([*serve, "--data-dir", str(tmp_path / "b")], env=env, capture_output=True, text=True,
                                timeout=60)
        assert second.returncode == 2
        assert "address already in use" in second.stderr and "Traceback" not in second.stderr
        # a unix: query address takes no port (it used to bind "/path:N")
        sock = tmp_path / "q.sock"
        third = subprocess.Popen([*serve, "--data-dir", str(tmp_path / "c"), "--address", f"unix:{sock}", "--port", "9"],
                                 env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 60
            while not sock.exists() and time.time() < deadline:
                assert third.poll() is None, third.stderr.read()
                time.sleep(0.1)
            assert sock.exists() and not Path(f"{sock}:9").exists()
            with EdgeClient(f"unix:{sock}", timeout_s=10) as client:
                assert client.list_bundles().active == ""
        finally:
            third.terminate()
            third.wait(10)
    finally:
        first.terminate()
        first.wait(10)

"""Remote management: the admin listener on TCP with mutual TLS, the query listener with TLS.

Certificates are made here with ``cryptography``: a CA, a server certificate for 127.0.0.1, and a
client certificate the CA signed (and one it did not).
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from edge_runtime.errors import ServerBindError
from edge_runtime.serving.client import EdgeClient
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import TlsFiles, create_server
from tests.edge_server_fixtures import example_bundle, make_keys, random_static_embedder


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _issue(directory: Path, name: str, issuer: tuple | None, *, ca: bool = False, ip: str | None = None) -> tuple:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    issuer_name, issuer_key = (issuer[0].subject, issuer[1]) if issuer else (subject, key)
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(issuer_name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ip:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False)
    cert = builder.sign(issuer_key, hashes.SHA256())
    cert_path = _write(directory / f"{name}.crt", cert.public_bytes(serialization.Encoding.PEM))
    key_path = _write(directory / f"{name}.key", key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert, key, cert_path, key_path


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    root = tmp_path_factory.mktemp("pki")
    ca = _issue(root, "ca", None, ca=True)
    server = _issue(root, "server", ca[:2], ip="127.0.0.1")
    client = _issue(root, "operator", ca[:2])
    rogue_ca = _issue(root, "rogue-ca", None, ca=True)
    rogue = _issue(root, "rogue", rogue_ca[:2])
    key, public = make_keys(root / "keys")
    bundle = example_bundle(root / "out", key, random_static_embedder(root / "embedder"), "1")
    return {"ca": ca[2], "server": server, "client": client, "rogue": rogue, "public": public, "bundle": bundle}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_admin_over_mutual_tls_and_queries_over_tls(tmp_path, pki):
    tls = TlsFiles(pki["server"][2], pki["server"][3], client_ca=pki["ca"])
    admin_address = f"127.0.0.1:{_free_port()}"
    options = RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[pki["public"]], use_worker_pool=False)
    edge = create_server(options, address="127.0.0.1:0", admin_address=admin_address, tls=tls)
    try:
        assert edge.admin_socket is None
        with EdgeClient(f"127.0.0.1:{edge.port}", admin_address=admin_address, root_cert=pki["ca"],
                        client_cert=pki["client"][2], client_key=pki["client"][3], timeout_s=30) as owner:
            staged = owner.push(pki["bundle"]).staged
            assert owner.activate(staged.bundle_id).active == "examples-1"
        # A certificate from another CA does not get a connection to the admin listener.
        with EdgeClient(f"127.0.0.1:{edge.port}", admin_address=admin_address, root_cert=pki["ca"],
                        client_cert=pki["rogue"][2], client_key=pki["rogue"][3], timeout_s=5) as rogue:
            with pytest.raises(grpc.RpcError) as info:
                rogue.rollback()
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        # Without a certificate at all: the query listener works (TLS), admin RPCs there are refused.
        with EdgeClient(f"127.0.0.1:{edge.port}", root_cert=pki["ca"], timeout_s=30) as anyone:
            assert anyone.list_bundles().active == "examples-1"
            with pytest.raises(grpc.RpcError) as info:
                anyone.activate("examples-1")
            assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        # A plaintext client cannot talk to the TLS query listener.
        with EdgeClient(f"127.0.0.1:{edge.port}", timeout_s=3) as plain:
            with pytest.raises(grpc.RpcError):
                plain.list_bundles()
    finally:
        edge.stop(0)


def test_tcp_admin_without_client_ca_is_refused(tmp_path, pki):
    options = RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[pki["public"]], use_worker_pool=False)
    with pytest.raises(ServerBindError, match="client-ca"):
        create_server(options, address="127.0.0.1:0", admin_address=f"127.0.0.1:{_free_port()}",
                      tls=TlsFiles(pki["server"][2], pki["server"][3]))

"""The signers a device trusts: Ed25519 public keys read from the files ``arc-build keys`` wrote."""

from __future__ import annotations

from pathlib import Path

from edge_runtime.errors import SigningKeyError


def load_trusted_keys(paths: list[Path]) -> list[bytes]:
    """The raw 32-byte keys in ``paths`` (PEM or hex, as ``arc-build keys`` prints them)."""
    keys = []
    for path in paths:
        if not path.is_file():
            raise SigningKeyError(f"{path}: no such public key file; pass the .pub file `arc-build keys` printed")
        text = path.read_text().strip()
        if text.startswith("-----BEGIN"):
            from cryptography.hazmat.primitives import serialization

            key = serialization.load_pem_public_key(text.encode())
            keys.append(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))
        else:
            keys.append(bytes.fromhex(text))
    return keys

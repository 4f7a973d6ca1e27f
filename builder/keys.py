"""Ed25519 signing keys for bundles.

The private key stays on the build server (PEM, PKCS#8, mode 0600, never overwritten: a
lost key orphans every device that trusts it). The public key is written as 64 hex
digits, the same raw form devices list as trusted keys and bundles carry in their manifest.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from edge_runtime.errors import SigningKeyError

PRIVATE_NAME = "arc-signing.pem"
PUBLIC_NAME = "arc-signing.pub"


def default_key_dir() -> Path:
    """``$ARC_KEY_DIR`` when set, else ``~/.config/arc/keys``."""
    override = os.environ.get("ARC_KEY_DIR")
    return Path(override).expanduser() if override else Path.home() / ".config" / "arc" / "keys"


def public_key_bytes(key: Ed25519PrivateKey | Ed25519PublicKey) -> bytes:
    """The raw 32-byte public key (what devices trust and manifests carry)."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def generate_keypair(directory: Path) -> tuple[Path, Path]:
    """Create a new key pair in ``directory``; refuses to replace an existing private key."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    private_path, public_path = directory / PRIVATE_NAME, directory / PUBLIC_NAME
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    try:
        # O_EXCL: never clobber a key; mode 0600 from creation, so the key is never readable by others.
        fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as exc:
        raise SigningKeyError(f"{private_path} exists already; refusing to overwrite a signing key; keep using it, "
                              "or pass --out DIR for a new pair") from exc
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    os.chmod(private_path, 0o600)  # in case the umask or filesystem widened it
    public_path.write_text(public_key_bytes(key).hex() + "\n", encoding="ascii")
    return private_path, public_path


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """Load an unencrypted PEM Ed25519 private key; any other kind is a SigningKeyError."""
    if not Path(path).is_file():
        raise SigningKeyError(f"{path}: no such signing key; make one with `arc-build keys`, or pass --key PRIVATE.pem")
    try:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise SigningKeyError(f"cannot load signing key {path}: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{path} is a {type(key).__name__}, not an Ed25519 private key")
    return key


def load_public_key(path: Path) -> bytes:
    """A public key file (64 hex digits, or PEM) as the raw 32 bytes a device trusts."""
    try:
        text = Path(path).read_bytes()
        if text.lstrip().startswith(b"-----BEGIN"):
            key = serialization.load_pem_public_key(text)
            if not isinstance(key, Ed25519PublicKey):
                raise SigningKeyError(f"{path} is not an Ed25519 public key")
            return public_key_bytes(key)
        raw = bytes.fromhex(text.decode("ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise SigningKeyError(f"cannot load public key {path}: {exc}") from exc
    if len(raw) != 32:
        raise SigningKeyError(f"{path}: an Ed25519 public key has 32 bytes, this one {len(raw)}")
    return raw


def ensure_default_key() -> tuple[Path, bool]:
    """The default private key's path, creating the pair on first use; ``created`` says whether it was new."""
    directory = default_key_dir()
    private_path = directory / PRIVATE_NAME
    if private_path.exists():
        return private_path, False
    try:
        return generate_keypair(directory)[0], True
    except SigningKeyError:  # created concurrently by another process
        return private_path, False

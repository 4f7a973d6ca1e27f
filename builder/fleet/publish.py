"""``arc-build publish``: a signed bundle, its blobs and its target model into an OCI registry, named in TUF.

One OCI image manifest per bundle version: our config (``application/vnd.arc.bundle.config.v1+json``, also
its ``artifactType``) and one layer per file, referenced by digest: the bundle file
(``application/vnd.arc.bundle.v1``), each out-of-line routing file (``application/vnd.arc.blob.v1``) and each
target-model file (``application/vnd.arc.model-blob.v1``), titled with its path. Each layer's digest is the
sha256 the bundle's signed manifest lists, so the registry is asked (HEAD) for it before anything is read:
unchanged layers are neither hashed nor uploaded again, and the registry itself refuses an upload whose
bytes do not match the digest. Then the TUF targets gain ``NAME/VERSION`` -> that manifest, and the new
metadata is pushed under ``tuf.*`` tags of the same repository.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.fleet.tuf_repo import TufRepository
from edge_runtime.bundles.bundle import BLOBS_DIR, read_bundle
from edge_runtime.errors import BundleError
from edge_runtime.fleet import media
from edge_runtime.fleet.registry import RegistryClient, canonical_json


@dataclass
class PublishResult:
    bundle_id: str
    manifest_digest: str
    targets_version: int
    bytes_uploaded: int
    layers_uploaded: list[str] = field(default_factory=list)
    layers_present: list[str] = field(default_factory=list)
    seconds: float = 0.0
    sizes: dict[str, int] = field(default_factory=dict)


def _layer(media_type: str, sha256: str, size: int, title: str) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": f"sha256:{sha256}", "size": int(size), "annotations": {media.TITLE: title}}


def bundle_manifest(bundle_path: Path, blob_dir: Path | None,
                    model_dir: Path | None) -> tuple[Any, list[tuple[dict, Path | None]]]:
    """The bundle (checked: signed by its own key) and each layer with the local file that holds its bytes."""
    data = Path(bundle_path).read_bytes()
    bundle = read_bundle(data, trusted_keys=[], allow_unsigned=True)
    if not bundle.key_id:
        raise BundleError(f"{bundle_path} is unsigned; devices refuse unsigned bundles, so it is not published")
    import hashlib

    layers: list[tuple[dict, Path | None]] = [(_layer(media.BUNDLE, hashlib.sha256(data).hexdigest(), len(data),
                                               Path(bundle_path).name), Path(bundle_path))]
    blob_dir = Path(blob_dir) if blob_dir else Path(bundle_path).parent / BLOBS_DIR
    for path, ref in sorted(bundle.blobs.items()):
        layers.append((_layer(media.BLOB, ref["sha256"], ref["size"], path), blob_dir / ref["sha256"]))
    target = bundle.target_model or {}
    for item in target.get("files", []):
        source = Path(model_dir) / item["path"] if model_dir else None
        layers.append((_layer(media.MODEL_BLOB, item["sha256"], item["size"], f"target-model/{item['path']}"), source))
    return bundle, layers


def publish(bundle_path: Path, reference: str, tuf: TufRepository, *, blob_dir: Path | None = None,
            model_dir: Path | None = None, timeout_s: float = 120.0,
            expiry_days: dict[str, float] | None = None) -> PublishResult:
    """Upload what the registry lacks, tag the manifest ``NAME-VERSION``, add it to TUF and push the metadata."""
    started = time.perf_counter()
    client = RegistryClient(reference, timeout_s=timeout_s)
    bundle, layers = bundle_manifest(Path(bundle_path), blob_dir, model_dir)
    bundle_id = f"{bundle.name}-{bundle.version}"
    result = PublishResult(bundle_id, "", 0, 0)
    for layer, source in layers:
        if client.has_blob(layer["digest"]):
            result.layers_present.append(layer["annotations"][media.TITLE])
            continue
        if source is None or not source.is_file():
            hint = "--model DIR (the artefact it was built with)" if layer["mediaType"] == media.MODEL_BLOB else \
                "--blobs DIR (the blobs/ directory arc-build bundle wrote)"
            raise BundleError(f"the registry lacks {layer['annotations'][media.TITLE]} ({layer['digest']}) and no "
                              f"local file holds it: pass {hint}")
        client.push_blob(source, layer["digest"])  # the registry checks the digest of what it receives
        result.layers_uploaded.append(layer["annotations"][media.TITLE])
    sizes = {"bundle_bytes": layers[0][0]["size"],
             "blob_bytes": sum(layer["size"] for layer, _ in layers if layer["mediaType"] == media.BLOB),
             "model_bytes": sum(layer["size"] for layer, _ in layers if layer["mediaType"] == media.MODEL_BLOB)}
    config = {"name": bundle.name, "version": bundle.version, "bundle_digest": bundle.digest,
              "key_id": bundle.key_id, "created_at": bundle.manifest.get("created_at", ""),
              "target_model": (bundle.target_model or {}).get("sha256")}
    config_bytes = canonical_json(config)
    config_digest, config_size, _ = client.push_blob(config_bytes)
    manifest = canonical_json({
        "schemaVersion": 2, "mediaType": media.OCI_MANIFEST, "artifactType": media.BUNDLE_CONFIG,
        "config": {"mediaType": media.BUNDLE_CONFIG, "digest": config_digest, "size": config_size},
        "layers": [layer for layer, _ in layers],
        "annotations": {"vnd.arc.bundle.name": bundle.name, "vnd.arc.bundle.version": bundle.version},
    })
    digest = client.put_manifest(manifest, bundle_id.replace("+", "_"))
    custom = {"bundle": bundle.name, "version": bundle.version, "manifest_digest": digest,
              "bundle_digest": bundle.digest, **sizes}
    result.targets_version = tuf.add_bundle(bundle.name, bundle.version, manifest, custom, expiry_days=expiry_days)
    push_metadata(client, tuf)
    result.manifest_digest = digest
    result.sizes = sizes
    result.bytes_uploaded = client.sent
    result.seconds = time.perf_counter() - started
    return result


def push_metadata(client: RegistryClient, tuf: TufRepository) -> None:
    """Every current TUF file under its tag; the timestamp last, so a device never sees it before what it names."""
    files = tuf.files()
    order = sorted(files, key=lambda name: name == "timestamp.json")
    for name in order:
        client.push_file_artefact(media.tuf_tag(name), files[name], media_type=media.TUF_METADATA,
                                  config_type=media.TUF_CONFIG, config={"file": name}, title=name)

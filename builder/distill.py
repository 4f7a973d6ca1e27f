"""Distil a static token-embedding table from the sentence encoder (model2vec-style), for IS1 routing.

The method (after model2vec, Tulkens & van Dongen 2024; re-implemented here on onnxruntime):

1. Every vocabulary token of the encoder's WordPiece tokenizer is run through the encoder
   alone, as ``[CLS] token [SEP]``, and mean-pooled exactly as ``OnnxSentenceEmbedder``
   pools a sentence: that is the token's "output embedding". This is the expensive step
   (30522 forward passes in batches); its result is cached on disk, keyed by the sha256 of
   the model and tokenizer files.
2. PCA (centred, not whitened) reduces the embeddings to ``dim`` components.
3. Each row is scaled by a SIF weight ``a / (a + p(rank))`` where ``p`` is a Zipf
   distribution over the token's rank; WordPiece vocabularies are (roughly) ordered by
   frequency, so the rank is the token's position in the vocabulary among real tokens.
   Frequent tokens ("the", digits, punctuation) thus weigh little, rare content words a lot.
4. Special and ``[unused*]`` tokens get a zero row, so a text with only unknown tokens
   embeds to the zero vector.

The result is a ``StaticEmbedder`` directory: ``tokenizer.json``, ``table.npy`` (float32
``[vocab, dim]``, weights folded in) and ``meta.json``.

    .venv/bin/python -m builder.distill OUT_DIR [--dim 256] [--cache-dir build/distill]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from edge_runtime.route.embedder import default_model_paths
from edge_runtime.route.static_embedder import META_FILE, TABLE_FILE, TOKENIZER_FILE, StaticEmbedder

METHOD = "model2vec-style: single-token encoder outputs (mean-pooled [CLS] t [SEP]), centred PCA, Zipf-rank SIF weights"
DEFAULT_SIF = 1e-4


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _vocab(tokenizer_path: Path) -> dict[str, int]:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(tokenizer_path)).get_vocab(with_added_tokens=True)


def real_token_mask(vocab: dict[str, int]) -> np.ndarray:
    """True for tokens text can produce: not ``[PAD]``/``[UNK]``/``[CLS]``/``[SEP]``/``[MASK]`` nor ``[unusedN]``."""
    mask = np.zeros(max(vocab.values()) + 1, dtype=bool)
    for token, index in vocab.items():
        special = token.startswith("[") and token.endswith("]") and (
            token.startswith("[unused") or token in {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
        )
        mask[index] = not special
    return mask


def encode_tokens(
    token_ids: Sequence[int],
    *,
    model_path: Path | None = None,
    tokenizer_path: Path | None = None,
    batch_size: int = 512,
    threads: int | None = None,
    progress: bool = True,
) -> np.ndarray:
    """The encoder's mean-pooled output for each token alone (``[CLS] t [SEP]``), float32 ``[n, hidden]``."""
    import onnxruntime as ort

    default_model, default_tokenizer = default_model_paths()
    model_path = Path(model_path or default_model)
    vocab = _vocab(Path(tokenizer_path or default_tokenizer))
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or os.cpu_count() or 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    input_names = {i.name for i in session.get_inputs()}

    ids = np.asarray(token_ids, dtype=np.int64)
    hidden = int(session.get_outputs()[0].shape[-1])
    out = np.zeros((len(ids), hidden), dtype=np.float32)
    starts = range(0, len(ids), batch_size)
    if progress:
        from rich.console import Console
        from rich.progress import track

        starts = track(
            starts, description=f"encoding {len(ids)} tokens", total=len(starts), console=Console(stderr=True)
        )
    for start in starts:
        chunk = ids[start : start + batch_size]
        batch = np.stack(
            [np.full(len(chunk), cls_id, dtype=np.int64), chunk, np.full(len(chunk), sep_id, dtype=np.int64)], axis=1
        )
        feeds = {"input_ids": batch, "attention_mask": np.ones_like(batch)}
        if "token_type_ids" in input_names:
            feeds["token_type_ids"] = np.zeros_like(batch)
        states = session.run(None, feeds)[0]
        out[start : start + len(chunk)] = states.mean(axis=1)  # every position is real: plain mean pooling
    return out


def zipf_sif_weights(n: int, sif_coefficient: float = DEFAULT_SIF) -> np.ndarray:
    """SIF weights ``a / (a + p)`` for ranks 0..n-1 under a Zipf distribution ``p(r) ∝ 1 / (r + 2)``."""
    inverse_rank = 1.0 / np.arange(2, n + 2, dtype=np.float64)
    probability = inverse_rank / inverse_rank.sum()
    return (sif_coefficient / (sif_coefficient + probability)).astype(np.float32)


def build_table(
    embeddings: np.ndarray,
    real: np.ndarray,
    dim: int,
    *,
    sif_coefficient: float | None = DEFAULT_SIF,
) -> tuple[np.ndarray, dict]:
    """Centred PCA of the real tokens' embeddings to ``dim``, SIF-weighted by rank; zero rows elsewhere.

    ``embeddings`` has one row per vocabulary id; rows where ``real`` is False are ignored.
    Returns the float32 table and a small report (explained variance).
    """
    real_ids = np.flatnonzero(real)
    x = embeddings[real_ids].astype(np.float64)
    if dim > min(x.shape):
        raise ValueError(f"dim {dim} exceeds min(tokens, hidden) = {min(x.shape)}")
    mean = x.mean(axis=0)
    x -= mean
    covariance = x.T @ x / max(len(x) - 1, 1)
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    order = np.argsort(eigenvalues)[::-1][:dim]
    components = eigenvectors[:, order]
    # A deterministic sign per component (eigh's sign is arbitrary): the largest loading positive.
    signs = np.sign(components[np.abs(components).argmax(axis=0), np.arange(dim)])
    components *= np.where(signs == 0, 1.0, signs)
    projected = x @ components
    if sif_coefficient is not None:
        projected *= zipf_sif_weights(len(real_ids), sif_coefficient)[:, None]  # rank = order among real tokens
    table = np.zeros((len(embeddings), dim), dtype=np.float32)
    table[real_ids] = projected.astype(np.float32)
    explained = float(eigenvalues[order].sum() / eigenvalues.sum())
    return table, {"explained_variance": round(explained, 4), "n_real_tokens": int(len(real_ids))}


def cached_token_embeddings(
    cache_dir: Path,
    *,
    model_path: Path | None = None,
    tokenizer_path: Path | None = None,
    progress: bool = True,
    batch_size: int = 512,
) -> tuple[np.ndarray, dict]:
    """Every vocabulary token's encoder embedding, from ``cache_dir`` when present (keyed by model and tokenizer sha256)."""
    default_model, default_tokenizer = default_model_paths()
    model_path = Path(model_path or default_model)
    tokenizer_path = Path(tokenizer_path or default_tokenizer)
    model_sha, tokenizer_sha = file_sha256(model_path), file_sha256(tokenizer_path)
    cache_dir = Path(cache_dir)
    stem = f"tokens_{model_sha[:16]}_{tokenizer_sha[:8]}"
    array_path, info_path = cache_dir / f"{stem}.npy", cache_dir / f"{stem}.json"
    if array_path.is_file() and info_path.is_file():
        info = json.loads(info_path.read_text(encoding="utf-8"))
        if info.get("model_sha256") == model_sha and info.get("tokenizer_sha256") == tokenizer_sha:
            return np.load(array_path, allow_pickle=False), {**info, "cached": True}

    vocab = _vocab(tokenizer_path)
    size = max(vocab.values()) + 1
    start = time.perf_counter()
    embeddings = encode_tokens(
        range(size), model_path=model_path, tokenizer_path=tokenizer_path, batch_size=batch_size, progress=progress
    )
    seconds = time.perf_counter() - start
    info = {
        "model": str(model_path),
        "model_sha256": model_sha,
        "tokenizer_sha256": tokenizer_sha,
        "vocab_size": size,
        "hidden": int(embeddings.shape[1]),
        "encode_seconds": round(seconds, 1),
        "batch_size": batch_size,
        "threads": os.cpu_count(),
    }
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = cache_dir / f"{stem}.partial.npy"
    np.save(partial, embeddings)
    os.replace(partial, array_path)  # atomic: a crash never leaves a truncated cache
    info_path.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return embeddings, {**info, "cached": False}


def distill_static_embedder(
    out_dir: Path,
    dim: int = 256,
    *,
    cache_dir: Path = Path("build/distill"),
    progress: bool = True,
    sif_coefficient: float | None = DEFAULT_SIF,
    model_path: Path | None = None,
    tokenizer_path: Path | None = None,
) -> Path:
    """Write a ``StaticEmbedder`` directory (tokenizer.json, table.npy, meta.json) to ``out_dir``; returns it.

    Reuses ``out_dir`` as is when its meta.json already records the same model, tokenizer,
    dim and weighting; reuses the cached token embeddings in ``cache_dir`` otherwise.
    """
    default_model, default_tokenizer = default_model_paths()
    model_path = Path(model_path or default_model)
    tokenizer_path = Path(tokenizer_path or default_tokenizer)
    out_dir = Path(out_dir)
    model_sha, tokenizer_sha = file_sha256(model_path), file_sha256(tokenizer_path)
    wanted = {"source_model_sha256": model_sha, "tokenizer_sha256": tokenizer_sha, "dim": dim, "sif_coefficient": sif_coefficient}
    meta_path = out_dir / META_FILE
    if meta_path.is_file() and (out_dir / TABLE_FILE).is_file() and (out_dir / TOKENIZER_FILE).is_file():
        existing = json.loads(meta_path.read_text(encoding="utf-8"))
        if all(existing.get(k) == v for k, v in wanted.items()):
            return out_dir

    embeddings, info = cached_token_embeddings(
        cache_dir, model_path=model_path, tokenizer_path=tokenizer_path, progress=progress
    )
    real = real_token_mask(_vocab(tokenizer_path))
    table, report = build_table(embeddings, real, dim, sif_coefficient=sif_coefficient)
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(tokenizer_path, out_dir / TOKENIZER_FILE)
    np.save(out_dir / TABLE_FILE, table)
    meta = {
        **wanted,
        "source_model": model_path.name,
        "method": METHOD,
        "pooling": "mean over [CLS] token [SEP]",
        "pca": "centred, not whitened",
        "vocab_size": int(table.shape[0]),
        "hidden": int(embeddings.shape[1]),
        "encode_seconds": info.get("encode_seconds"),
        **report,
    }
    meta_path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--cache-dir", type=Path, default=Path("build/distill"))
    parser.add_argument("--sif", type=float, default=DEFAULT_SIF, help="SIF coefficient (<= 0 disables weighting)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    out = distill_static_embedder(
        args.out_dir, args.dim, cache_dir=args.cache_dir, progress=not args.quiet,
        sif_coefficient=args.sif if args.sif > 0 else None,
    )
    embedder = StaticEmbedder.load(out)
    print(json.dumps({"out_dir": str(out), "seconds": round(time.perf_counter() - start, 1), **embedder.meta}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

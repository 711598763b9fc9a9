"""The one corpus builder of the project: tests, benchmarks and the accuracy evaluation use it.

Modules:

* :mod:`corpus.sources`: the real data beside the project (``<root>/../shared/data``: the
  article-extraction benchmark's pages and annotated bodies, the Chinese news pages), whether
  it is there, and seeded generated articles that need no files;
* :mod:`corpus.lang`: CJK detection, a rough language guess, paragraph splitting;
* :mod:`corpus.text`: text-level corpora, each original with one variant per known
  transformation (engine and Redis tests), re-exported here;
* :mod:`corpus.html`: HTML-level families of real pages (the same page under another URL, the
  article in another site's template, partial copies, reprints) with their extracted text, for
  ``evaluation/`` and ``tests/test_evaluate.py``; import it as ``corpus.html`` (it needs lxml
  and ``scrapy_neardup``, and its ``Corpus`` is another class than the text-level one);
* :mod:`corpus.documents`: documents of a given size with a share of near-duplicates, for the
  speed benchmarks.

Everything is seeded: the same arguments give the same corpus, byte for byte. Callers skip
(tests) or fall back to generated text (benchmarks) when :func:`real_data_missing` says why the
real data cannot be used.
"""

from corpus.documents import make_documents, sentence_pool, synthetic_sentences
from corpus.lang import has_cjk, is_cjk, language, paragraphs
from corpus.sources import (
    DATA,
    article_bodies,
    chinese_texts,
    have_data,
    load_article_bodies,
    load_article_urls,
    real_data_missing,
    synthetic_articles,
)
from corpus.text import (
    BOILERPLATE,
    CHINESE_TRANSFORMS,
    DROP,
    EDIT1,
    EDIT5,
    ENGLISH_TRANSFORMS,
    INSERT_AD,
    NATURAL,
    ORIGINAL,
    REORDER,
    REPRINT,
    Corpus,
    Sample,
    build_corpus,
    real_chinese_corpus,
    real_english_corpus,
    synthetic_corpus,
)

__all__ = [
    "BOILERPLATE",
    "CHINESE_TRANSFORMS",
    "DATA",
    "DROP",
    "EDIT1",
    "EDIT5",
    "ENGLISH_TRANSFORMS",
    "INSERT_AD",
    "NATURAL",
    "ORIGINAL",
    "REORDER",
    "REPRINT",
    "Corpus",
    "Sample",
    "article_bodies",
    "build_corpus",
    "chinese_texts",
    "has_cjk",
    "have_data",
    "is_cjk",
    "language",
    "load_article_bodies",
    "load_article_urls",
    "make_documents",
    "paragraphs",
    "real_chinese_corpus",
    "real_data_missing",
    "real_english_corpus",
    "sentence_pool",
    "synthetic_articles",
    "synthetic_corpus",
    "synthetic_sentences",
]

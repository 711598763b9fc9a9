"""The accuracy evaluation: every backend scored on near-duplicates made from real pages.

``python evaluation/evaluate.py`` scores the engine pair by pair on the extracted text
(:mod:`evaluation.scoring`), ``python evaluation/evaluate_crawl.py`` crawls the same documents
with the plugin on its defaults; the corpus is :mod:`corpus.html`, the results
``evaluation/ACCURACY.md``. The speed benchmarks are in ``bench/``.
"""

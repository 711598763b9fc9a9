"""The accuracy evaluation: every backend scored on near-duplicates made from real pages.

``python evaluation/evaluate.py`` scores the engine pair by pair on the extracted text
(:mod:`evaluation.scoring`), ``python evaluation/evaluate_crawl.py`` crawls the same documents
with the plugin on its defaults, ``python evaluation/evaluate_sites.py`` crawls real
documentation sites and translated books (Debian's packages) and counts drops that lost text,
by containment and by an independent line reading (:mod:`evaluation.line_reading`);
the corpus is :mod:`corpus.html`, the results ``evaluation/ACCURACY.md``. The speed
benchmarks are in ``bench/``.
"""

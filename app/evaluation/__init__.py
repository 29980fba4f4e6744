"""``spamfilter eval``: accuracy on a labelled corpus, through the real service.

The corpus and its order (``corpus``), the online and cross-validation loops (``runner``,
``session``), TREC's metrics (``metrics``), per-seed aggregates (``seeds``), the paired
bootstrap that compares two runs (``paired_bootstrap``, ``compare``), per-user arms
(``per_user``) and the report formats (``report``, ``resultfile``, ``plot``). Speed and load
benchmarks are not here: they live in the source tree's ``benchmarks/``.
"""

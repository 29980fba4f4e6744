"""The speed, hostile-input, hold and load benchmarks behind ``spamfilter bench``.

Not part of the runtime package: nothing under ``app`` imports them (an import-linter
contract keeps it so), and ``spamfilter bench`` exists only where this folder sits beside
``app/``, in a source checkout. They measure the real service path, so they import ``app``;
the accuracy evaluation users run on their own mail, ``spamfilter eval``, stays in
``app.evaluation``.
"""

"""The pipe filter: a message on stdin, the same message with X-Spam headers on stdout.

Exit status, as bogofilter's: 0 spam, 1 ham, 2 unsure, 3 error; with ``--exit-zero`` every
verdict exits 0 and only an error exits 3. On an error, or for input that is not a message,
the input is written out unjudged, so a filter step never loses mail. The X-Spam-* fields a
message arrives with are removed on every path, so none of them is ever taken for ours.

This package imports nothing at import time: ``main`` is the console script
``spamfilter-filter`` (also ``python -m app.adapters.pipe``), and it starts without the web
stack, the command-line framework or the migrations.
"""

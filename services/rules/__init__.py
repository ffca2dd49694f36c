"""The filter rules: which segments leave the data, and why (docs/quality.md, "filter rules").

One copy of each rule, shared by every place that applies it: enhance before restoration (the
rules whose fields exist on the input audio), tokenize after it, ``onsei export`` and its
``--dry-run`` again, and ``onsei dedup`` (the copy kept is one the rules pass). A stage and a
corpus step import this package; it imports neither (``tests/test_import_graph.py``).
"""

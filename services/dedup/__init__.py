"""Corpus-level deduplication of kept segments: signatures written by enhance, matched across
every enhanced shard by ``onsei dedup``, read by tokenize, report, status and export
(:mod:`services.dedup.result`)."""

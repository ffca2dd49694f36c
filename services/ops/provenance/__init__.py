"""Provenance at export: the licence policy, takedowns and the test-set scrub
(docs/provenance.md)."""

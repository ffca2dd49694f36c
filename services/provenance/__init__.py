"""Where each input file came from (source, licence, owner, date): read from the input's
metadata by asr, written once per shard, referred to by every later record (docs/provenance.md)."""

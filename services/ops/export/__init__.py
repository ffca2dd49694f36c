"""``onsei export``: the training set from a finished run (docs/operations.md, "Export").

source.py reads each shard (tokens, or the enhanced sidecars) and applies the filter policy
and the duplicate list; split.py groups source files and speaker labels into one side each;
write.py writes the JSONL parts and publishes them whole; card.py writes the dataset card.
"""

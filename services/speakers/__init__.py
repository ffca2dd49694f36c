"""``onsei speakers``: one speaker label across the whole corpus (docs/speakers.md)."""

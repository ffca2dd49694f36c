"""`onsei fleet`: keep target counts of SkyPilot managed spot jobs per stage (see loop.py)."""

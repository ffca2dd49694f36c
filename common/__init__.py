"""Shared layer of onsei: settings, storage, shards, audio, ledger, queue setup.

Never imports ``services``: dependencies point one way.
"""

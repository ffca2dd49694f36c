"""Builders of small real models with the contracts of the production ones (shared by tests)."""

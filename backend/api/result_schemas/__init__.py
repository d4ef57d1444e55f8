"""Typed result documents: what the worker stores for each job kind, as the API serves it (docs/design-notes.md,
"Typed results")."""

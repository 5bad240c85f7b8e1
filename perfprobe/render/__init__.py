"""Renderers: they see only a Report (perfprobe.model) and know nothing of how it was measured."""

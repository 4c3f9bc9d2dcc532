"""Semantics: number systems and the one interpreter."""

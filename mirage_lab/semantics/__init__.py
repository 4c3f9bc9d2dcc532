"""Semantics: number systems and the one interpreter."""

from mirage_lab.semantics.tiles import check_block, loader_ranges, saver_ranges

__all__ = ["check_block", "loader_ranges", "saver_ranges"]

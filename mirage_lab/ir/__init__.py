"""The μGraph IR: op table, tensors, frozen graphs, builders, printing and JSON."""

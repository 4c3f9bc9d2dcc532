"""Post-search optimisation (SPEC §8): cost models that rank candidate μGraphs."""

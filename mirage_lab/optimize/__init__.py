"""Post-search optimisation (SPEC §8): cost models that rank candidate μGraphs."""

from mirage_lab.optimize.cost import proxy_cost
from mirage_lab.optimize.estimate import CostEstimate
from mirage_lab.optimize.hardware import HARDWARE, Hardware, get_hardware

__all__ = ["HARDWARE", "CostEstimate", "Hardware", "get_hardware", "proxy_cost"]

"""Probabilistic equivalence verification over finite fields (SPEC §6)."""

from mirage_lab.verify.result import VerificationResult
from mirage_lab.verify.verifier import Verifier, forget_programs, verify

__all__ = ["VerificationResult", "Verifier", "forget_programs", "verify"]

"""Probabilistic equivalence verification over finite fields (SPEC §6)."""

from mirage_lab.verify.result import FloatCheck, TrialEvidence, VerificationResult, Witness
from mirage_lab.verify.verifier import Verifier, forget_programs, verify

__all__ = ["FloatCheck", "TrialEvidence", "VerificationResult", "Verifier", "Witness", "forget_programs", "verify"]

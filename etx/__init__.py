"""ETX-style link quality estimation from periodic probes (A-SPAN paper, Design: ETX)."""
from etx.estimator import BEFORE_FULL_MODES, QUALITY_MODES, EtxTable, LinkEstimator, ProbeWindow

__all__ = ["BEFORE_FULL_MODES", "QUALITY_MODES", "EtxTable", "LinkEstimator", "ProbeWindow"]

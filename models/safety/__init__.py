"""The safety assessment: one component behind the 'safety' reward, the crisis gate and serving.

Rules (models.safety.rules) keep exact guarantees; meaning (models.safety.semantic) generalises beyond
listed words. models.safety.assess combines them and gives the score.
"""

from models.safety.assess import SafetyAssessment, SafetyAssessor, Thresholds
from models.safety.rules import risk_cues

__all__ = ["SafetyAssessment", "SafetyAssessor", "Thresholds", "risk_cues"]

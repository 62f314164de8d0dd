"""The 'safety' reward: the score of the safety assessment (models.safety) of each reply."""

from __future__ import annotations

from models.rewards.batch import RewardBatch
from models.rewards.resources import RewardResources


def safety_rewards(batch: RewardBatch, resources: RewardResources) -> list[float]:
    replies = [p.reply for p in batch.parsed]
    return [a.score for a in resources.safety_assessor.assess_many(replies, batch.seeker_text)]

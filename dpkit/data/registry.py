"""Load any data set by name: ``load_dataset("medical", n_classes=5, seed=0)``."""

from __future__ import annotations

from typing import Callable

from .commons import load_commons_speeches
from .dataset import Dataset
from .health_tweets import load_health_tweets
from .medical import load_medical_specialties
from .news import load_news_articles
from .questions import load_online_questions
from .question_collections import load_question_collections
from .general_questions import load_general_questions
from .passages import load_short_passages
from .problems import load_everyday_problems
from .situations import load_everyday_situations
from .rotten_tomatoes import load_rotten_tomatoes
from ..validate import ParameterError

LOADERS: dict[str, Callable[..., Dataset]] = {
    "medical": load_medical_specialties,
    "rotten_tomatoes": load_rotten_tomatoes,
    "health_tweets": load_health_tweets,
    "news": load_news_articles,
    "commons_speeches": load_commons_speeches,
    "online_questions": load_online_questions,
    "everyday_situations": load_everyday_situations,
    "everyday_problems": load_everyday_problems,
    "general_questions": load_general_questions,
    "short_passages": load_short_passages,
    "question_collections": load_question_collections,
}
#: Data sets whose records are private (the unit of privacy is one of their texts).
PRIVATE = ("medical", "rotten_tomatoes", "health_tweets", "commons_speeches", "online_questions",
           "everyday_situations", "everyday_problems", "general_questions", "short_passages", "question_collections")
#: The public corpus, disjoint from every private data set.
PUBLIC = ("news",)


def load_dataset(name: str, **kwargs) -> Dataset:
    """The data set ``name`` (one of :data:`LOADERS`), its loader called with ``kwargs``."""
    if name not in LOADERS:
        raise ParameterError("name", name, f"must be one of {sorted(LOADERS)}")
    return LOADERS[name](**kwargs)

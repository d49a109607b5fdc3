"""Data sets and vocabularies, all read from files that installed packages ship (no downloads).

Private data sets (a record is one text; labels index ``label_names``):
:func:`load_medical_specialties` (MedMCQA questions by specialty), :func:`load_rotten_tomatoes`
(review snippets, negative/positive), :func:`load_health_tweets` (health-news tweets by outlet).
Public corpus, disjoint from them: :func:`load_news_articles`. Public vocabularies:
:func:`english_vocabulary`, :func:`medical_vocabulary`. Every loader is deterministic given
``seed`` and splits each class on its own (see :mod:`dpkit.data.dataset`).
"""

from .dataset import Dataset, clean_text, split_dataset
from .health_tweets import health_tweet_outlet_counts, load_health_tweets
from .medical import load_medical_specialties, medical_specialty_counts
from .news import load_news_articles
from .provenance import provenance
from .registry import LOADERS, PRIVATE, PUBLIC, load_dataset
from .rotten_tomatoes import load_rotten_tomatoes
from .vocabulary import english_vocabulary, medical_vocabulary

__all__ = [
    "Dataset", "clean_text", "split_dataset", "load_dataset", "LOADERS", "PRIVATE", "PUBLIC",
    "load_medical_specialties", "medical_specialty_counts", "load_rotten_tomatoes",
    "load_health_tweets", "health_tweet_outlet_counts", "load_news_articles",
    "english_vocabulary", "medical_vocabulary", "provenance",
]

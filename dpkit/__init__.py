"""dpkit: differentially private text generation with LLMs.

The library behind the executable book. Every mechanism states its privacy
contract (neighbouring relation, unit of privacy, privacy measure,
sensitivity) as data; every run reports its guarantee at its configured caps.
"""

__version__ = "0.1.0"

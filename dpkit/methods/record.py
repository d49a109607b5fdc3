"""What a method is, as one frozen record: :class:`Method`.

Each method module declares one, at its end, from its own names::

    METHOD = Method(name="kps", title="DP-KPS (private keyphrase seeds)", Config=Config, statement=STATEMENT,
                    charges=charges, release_size=release_size, size_rule=SIZE_RULE, synthesize=synthesize, ...)

and the one list of methods, :data:`dpkit.methods.registry.METHOD_MODULES`, names
the module. Everything that asks "which methods are there" or "what does this
method allow" reads the record through the registry: ``dpkit synth``'s choices,
its flag checks (``--delta``, ``--backend``, ``--executor``, ``--smoke``), the
plan (charges, size checks, number of texts), the release's report title,
``dpkit audit release`` and the tests. Nothing outside the method module and its
registry line names a method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dpkit.methods.base import PrivacyStatement
from dpkit.validate import ParameterError

#: The backends a method may generate on when its model sees only privatized or public text.
ALL_BACKENDS = ("local", "openai", "anthropic")


@dataclass(frozen=True)
class Method:
    """One method, declared once (see the module docstring).

    * ``name``: the command-line name (``dpkit synth NAME``), ``Release.method`` and the registry key;
    * ``title``: the privacy report's title; ``variant(config_dict)`` (optional) names the variant a
      configuration runs, added to the title (DP-ST's topic or document-level variant);
    * ``Config``: the frozen dataclass of public parameters, validated on construction, with
      ``Config.smoke(epsilon, **changes)`` (tiny sizes) and ``config.budget() -> (epsilon, delta)``;
    * ``statement``: the :class:`~dpkit.methods.base.PrivacyStatement` the report prints;
    * ``charges(config, n_labels, n_records=None)``: the declared privacy charges (``--plan`` and the run
      charge the same list); ``release_size(config, n_labels, n_records=None)``: the number of texts (None:
      unknown), ``size_rule`` that rule in words;
    * ``check_sizes(config, n_labels, *, labels, backend)``: refuses, from public facts, a size that cannot
      run (a :class:`~dpkit.validate.ParameterError`), before anything is charged; None: nothing to check;
    * ``backends``: the backends it may run on (``backend_rule``: why, when that is not all of them);
      ``executors``: who may decode its private batches (empty: it decodes none, and ``--executor`` is
      refused), ``make_executor(name, workers, address, *, flags)`` the one ``--executor`` names (required
      when ``executors`` is not empty); ``takes_delta``: whether ``--delta`` applies;
    * ``smoke_rows``, ``smoke_max_rows``: the ``--smoke`` preset's row bounds (the keep-fraction numerator
      once ``--rows`` is declared, or the first rows of a replace-one method; the most rows a smoke run
      reads, None: no further bound);
    * ``output_neutral``: configuration fields that never change a release (a resume may change them);
    * ``synthesize(records, config, run, backend, seed_sequence, **options) -> Release``.
    """

    name: str
    title: str
    Config: type
    statement: PrivacyStatement
    charges: Callable
    release_size: Callable
    size_rule: str
    synthesize: Callable
    smoke_rows: int
    smoke_max_rows: int | None
    check_sizes: Callable | None = None
    backends: tuple[str, ...] = ALL_BACKENDS
    backend_rule: str = ""
    executors: tuple[str, ...] = ()
    make_executor: Callable | None = None
    takes_delta: bool = False
    output_neutral: tuple[str, ...] = ()
    variant: Callable[[dict], str | None] | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ParameterError("name", self.name, "must be a short identifier (the dpkit synth command's name)")
        if not isinstance(self.statement, PrivacyStatement):
            raise ParameterError("statement", self.statement, "must be a dpkit.methods.base.PrivacyStatement")
        if not self.backends or any(b not in ALL_BACKENDS for b in self.backends):
            raise ParameterError("backends", self.backends, f"must be a non-empty subset of {ALL_BACKENDS}")
        if not callable(getattr(self.Config, "smoke", None)):
            raise ParameterError("Config", self.Config, "must have a smoke(epsilon, **changes) preset")
        if self.executors and not callable(self.make_executor):
            raise ParameterError("make_executor", self.make_executor, "must build the executors it declares "
                                 f"({', '.join(self.executors)})")

    @property
    def STATEMENT(self) -> PrivacyStatement:  # noqa: N802 - the path the book shows: METHODS[name].STATEMENT
        """The privacy statement (``statement``), under the method module's own name for it."""
        return self.statement

    def heading(self, config: dict) -> str:
        """The report's title for a release with this public configuration (its variant named, if any)."""
        variant = self.variant(config) if self.variant is not None else None
        if not variant:
            return self.title
        if self.title.endswith(")"):
            return f"{self.title[:-1]}, {variant})"
        return f"{self.title} ({variant})"

    def backend_refusal(self) -> str:
        """What ``--backend`` is told when it names a backend the method does not run on."""
        return self.backend_rule or f"{self.name} runs on {', '.join(self.backends)} only"

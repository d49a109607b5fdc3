"""Only mechanisms mark text: every public dpkit function that returns Privatized text refuses plain strings.

The walk imports every dpkit module, finds each public function (and static/class
method) whose return annotation names ``Privatized``, and calls it with a plain
string -- a private value a caller might hand in -- for every required argument.
Each must refuse (ParameterError or PrivateTextError), never return a mark.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import dpkit
from dpkit.privacy.marks import PrivateTextError, Privatized
from dpkit.validate import ParameterError

SECRET = "Jane Doe SSN 123-45-6789 HIV+"
OPTIONAL = ("ray", "llama_cpp")   # modules that need an optional dependency are skipped when it is absent


def _modules():
    for info in pkgutil.walk_packages(dpkit.__path__, "dpkit."):
        if info.name.endswith("__main__"):
            continue
        try:
            yield importlib.import_module(info.name)
        except ImportError as error:
            if not any(name in str(error) for name in OPTIONAL):
                raise


def _returns_privatized(function) -> bool:
    try:
        annotation = inspect.signature(function).return_annotation
    except (TypeError, ValueError):
        return False
    return "Privatized" in (annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation)))


def functions_returning_privatized() -> dict[str, object]:
    found = {}
    for module in _modules():
        for name, value in vars(module).items():
            if name.startswith("_") or getattr(value, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(value) and _returns_privatized(value):
                found[f"{module.__name__}.{name}"] = value
            elif inspect.isclass(value):
                for attribute, member in vars(value).items():
                    if attribute.startswith("_") and attribute != "__new__":
                        continue
                    if isinstance(member, (staticmethod, classmethod)):
                        function = getattr(value, attribute)
                        if _returns_privatized(function):
                            found[f"{module.__name__}.{name}.{attribute}"] = function
    return found


FOUND = functions_returning_privatized()


def test_the_walk_finds_the_marking_functions():
    for expected in ("dpkit.kps.prompts.synthetic_example", "dpkit.privacy.marks.post_process",
                     "dpkit.privacy.marks.release_text", "dpkit.kps.prompts.kps_prompt"):
        assert expected in FOUND, sorted(FOUND)


@pytest.mark.parametrize("name", sorted(FOUND))
def test_a_function_returning_privatized_refuses_plain_strings(name):
    function = FOUND[name]
    required = [p for p in inspect.signature(function).parameters.values()
                if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    with pytest.raises((ParameterError, PrivateTextError)):
        out = function(*[SECRET] * max(1, len(required)))
        assert not isinstance(out, Privatized), f"{name} marked a caller's plain string"


def test_instance_methods_that_mark_refuse_plain_strings_too():
    from dpkit.privacy.marks import Public

    with pytest.raises((ParameterError, PrivateTextError)):
        Public(", ").join_marked([SECRET])


def test_a_caller_cannot_have_its_own_text_marked_through_post_processing_or_examples():
    """Finding F3 (reliability-2): synthetic_example(privatized_prompt, text) marked any text."""
    from dpkit.kps.prompts import synthetic_example
    from dpkit.privacy import Laplace, PrivacyLedger
    from dpkit.privacy.marks import post_process, release_text

    entry = PrivacyLedger().spend(Laplace(1.0, epsilon=0.5, unit="document").contract, "counts")
    released = release_text("a released phrase", entry)
    with pytest.raises(ParameterError, match="completion"):
        synthetic_example(released, SECRET)
    with pytest.raises(PrivateTextError):
        post_process(released, lambda _: SECRET)

"""Every public estimator has the one shape of :mod:`promptprism._params` (issue 39, item 2): parameters
declared once with their constraints, checked when it is made (an OptionError carrying the parameter),
``set_params`` / ``clone`` returning new estimators, never changed after construction, and ``fit``."""

from __future__ import annotations

import dataclasses
import inspect
import warnings

import numpy as np
import pytest

import promptprism as pp
from promptprism._params import Estimator, check_declared
from promptprism.cli._errors import flag_message
from promptprism.errors import InputError, OptionError
from promptprism.methods.metrics import FindingQuality, ReferenceMetrics
from promptprism.methods.naming import NamingOptions


class _Chat:
    model = "fake"

    def chat(self, messages):
        return ""


class _Clip:
    def embed_images(self, images):
        return np.ones((len(images), 2))

    def embed_texts(self, texts):
        return np.ones((len(texts), 2))


#: (estimator class, what it needs to be made, a bad (parameter, value), another good (parameter, value))
CASES = [
    (pp.Scendi, {}, ("n_clusters", 0), ("n_clusters", 3)),
    (pp.PromptNullifier, {}, ("rcond", -1.0), ("seed", 1)),
    (pp.RegionCMS, {}, ("bootstrap", 5), ("n_regions", 3)),
    (ReferenceMetrics, {}, ("nearest_k", 0), ("nearest_k", 3)),
    (pp.CompCon, {"llm": _Chat(), "embedder": _Clip()}, ("quantile", 1.5), ("n_attributes", 2)),
    (NamingOptions, {}, ("candidates", 0), ("candidates", 2)),
    (FindingQuality, {}, ("alpha", 2.0), ("nearest_k", 3)),
]
ALL = [pytest.param(*case, id=case[0].__name__) for case in CASES] + [
    pytest.param(pp.PromptSplit, {}, ("n_modes", 0), ("n_modes", 3), id="PromptSplit"),
    pytest.param(pp.KWaySplit, {}, ("n_modes", 0), ("n_modes", 3), id="KWaySplit"),
]


@pytest.mark.parametrize("cls, needs, bad, good", ALL)
def test_every_estimator_has_the_one_shape(cls, needs, bad, good):
    assert issubclass(cls, Estimator) and dataclasses.is_dataclass(cls)
    assert cls.__dataclass_params__.frozen  # parameters are never changed after construction
    assert check_declared(cls) == []  # every parameter declared with its constraints
    assert callable(getattr(cls, "fit", None))
    est = cls(**needs)
    name, value = bad
    with pytest.raises(OptionError) as info:
        cls(**needs, **{name: value})
    assert info.value.parameter == name and "\n" not in str(info.value)
    with pytest.raises(OptionError) as info:
        est.set_params(**{name: value})
    assert info.value.parameter == name
    before = est.get_params()
    other = est.set_params(**{good[0]: good[1]})
    assert type(other) is cls and other is not est
    assert getattr(other, good[0]) == good[1] and est.get_params() == before  # the old one unchanged
    twin = est.clone()
    assert twin == est and twin is not est
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(est, good[0], good[1])


def test_the_estimators_modules_never_set_attributes_behind_the_dataclass():
    for cls, *_ in CASES:
        source = inspect.getsource(inspect.getmodule(cls))
        assert "object.__setattr__" not in source, cls.__name__


def test_fit_returns_what_was_learned_and_leaves_the_estimator_as_it_was():
    rng = np.random.default_rng(0)
    data = pp.PairedSet(rng.standard_normal((40, 4)), rng.standard_normal((40, 5)))
    nullifier = pp.PromptNullifier()
    fitted = nullifier.fit(data)
    assert fitted.estimator is nullifier and fitted.gamma_.shape == (5, 4)
    assert nullifier == pp.PromptNullifier() and not hasattr(nullifier, "gamma_")
    est = pp.RegionCMS(n_regions=2, seed=0)
    regions = est.fit(rng.random((20, 3, 3)))
    assert regions.estimator is est and regions.regions_.shape == (9,)
    with pytest.raises(OptionError, match="call fit"):
        est.compare(rng.random((5, 3, 3)))


def test_reference_metrics_compare_is_a_deprecated_fit():
    rng = np.random.default_rng(1)
    gen, ref = rng.standard_normal((40, 3)), rng.standard_normal((40, 3))
    est = ReferenceMetrics(bootstrap=0, subsets=2, subset_size=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fitted = est.fit(gen, ref)
    with pytest.warns(DeprecationWarning, match="use ReferenceMetrics.fit"):
        compared = est.compare(gen, ref)
    assert compared.to_dict() == fitted.to_dict()
    assert list(inspect.signature(ReferenceMetrics.fit).parameters)[:3] == ["self", "generated", "reference"]


def test_the_cli_reads_the_parameter_not_the_words():
    table = {"names": "--names", "n_clusters": "--clusters"}
    assert flag_message(InputError("names: 3 names for 2 sets"), table) == "names: 3 names for 2 sets"
    with pytest.raises(OptionError) as info:
        pp.Scendi(n_clusters=0)
    assert flag_message(info.value, table) == "--clusters must be > 0, got 0"

"""Press objects: typed keyword arguments, the engine's validation, the catalog."""

import pytest

from momentkv import _momentkv, presses


def test_list_names_every_press():
    catalog = presses.list()
    names = [p["name"] for p in catalog]
    assert names[:7] == ["full", "streaming_llm", "h2o", "snapkv", "pyramidkv", "adakv", "momentkv"]
    assert sorted(names) == sorted(presses.CLASSES)  # a class for every press of the engine's catalogue
    snapkv = next(p for p in catalog if p["name"] == "snapkv")
    assert {"key": "kernel", "default": "auto",
            "help": "max-pool kernel over the scores (odd), or auto: L/3 made odd, in [7, 31]"} in snapkv["params"]


def test_classes_take_exactly_the_catalog_parameters():
    import inspect
    for info in presses.list():
        cls = presses.CLASSES[info["name"]]
        params = set(inspect.signature(cls.__init__).parameters) - {"self"}
        assert params == {p["key"] for p in info["params"]}, info["name"]


def test_spec_is_canonical_and_round_trips():
    p = presses.SnapKV(window=16, kernel=5)
    assert str(p) == "snapkv:window=16,kernel=5"
    assert p.spec.startswith("snapkv:window=16,kernel=5,sinks=4")
    assert _momentkv.parse_press(p.spec)[1] == p.spec
    assert presses.SnapKV(window=16, kernel=5) == p
    assert presses.MomentKV(alloc="adaptive", nc=False, safeguard=0.3).spec == \
        _momentkv.parse_press("momentkv:alloc=adaptive,nc=0,safeguard=0.3")[1]
    assert presses.Full().spec == "full"
    assert "budget=64" in presses.H2O(budget=64).spec


def test_invalid_values_raise_the_cli_messages():
    with pytest.raises(ValueError, match="kernel=4 must be odd"):
        presses.SnapKV(kernel=4)
    with pytest.raises(ValueError, match="out of range"):
        presses.AdaKV(safeguard=1.5)
    with pytest.raises(ValueError, match="not one of"):
        presses.AdaKV(scorer="random")
    with pytest.raises(ValueError, match="momentkv:alloc=adaptive"):
        presses.AdaKV(scorer="momentkv")
    with pytest.raises(ValueError):
        presses.StreamingLLM(budget=32, ratio=0.5)
    with pytest.raises(ValueError):
        presses.PyramidKV(beta=float("nan"))


def test_wrong_types_raise_type_error():
    with pytest.raises(TypeError):
        presses.SnapKV(window="32")
    with pytest.raises(TypeError):
        presses.SnapKV(window=32.0)
    with pytest.raises(TypeError):
        presses.SnapKV(nc=1)
    with pytest.raises(TypeError):
        presses.MomentKV(alloc=2)
    with pytest.raises(TypeError):
        presses.SnapKV(windw=32)  # misspelled keyword


def test_budget_in_the_press_or_the_call_not_both():
    with pytest.raises(ValueError):
        _momentkv.parse_press(presses.SnapKV(budget=64).spec, 64)
    assert "budget=64" in _momentkv.parse_press(presses.SnapKV().spec, 64)[1]
    with pytest.raises(ValueError, match="budget"):
        _momentkv.parse_press("snapkv", require_budget=True)


def test_integer_parameters_accept_numpy_integers_and_reject_bad_budgets():
    import numpy as np
    assert presses.SnapKV(window=np.int64(8), sinks=np.int32(2)).spec == presses.SnapKV(window=8, sinks=2).spec
    assert presses.pooling_kernel(np.int64(64)) == presses.pooling_kernel(64)
    assert presses.observation_window(np.uint16(4096)) == 32
    for bad in (0, -5, 2**70):
        with pytest.raises(ValueError, match=rf"budget={bad} must be in \[1, 1000000000\]"):
            presses.pooling_kernel(bad)
        with pytest.raises(ValueError, match=rf"budget={bad} must be in \[1, 1000000000\]"):
            presses.observation_window(bad)
    with pytest.raises(TypeError, match="budget must be an int, got bool"):
        presses.pooling_kernel(True)
    with pytest.raises(TypeError, match="snapkv: window must be an int or \"auto\", got bool"):
        presses.SnapKV(window=True)


def test_real_parameters_accept_numpy_floats_and_arrays_are_type_errors():
    import warnings

    import numpy as np
    assert presses.PyramidKV(beta=np.float32(10.0)).spec == presses.PyramidKV(beta=10.0).spec
    assert presses.MomentKV(safeguard=np.float64(0.25)).spec == presses.MomentKV(safeguard=0.25).spec
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's elementwise-comparison warning fails the test
        with pytest.raises(TypeError, match="snapkv: window must be an int or \"auto\", got ndarray"):
            presses.SnapKV(window=np.array([1, 2]))
        with pytest.raises(TypeError, match="pyramidkv: beta must be a number, got ndarray"):
            presses.PyramidKV(beta=np.array([1.0]))

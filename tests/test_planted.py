"""The planted RM backend: base reward + strength x detector + noise, in units of the base's reward sd."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from rmexplain.config import ConfigError, check
from rmexplain.config.schema import validate_schema
from rmexplain.design import Design
from rmexplain.effects.base import estimators, reported_estimators
from rmexplain.resources import rm_threads, use_job_threads
from rmexplain.score.base import ScoringError, build_scorer
from rmexplain.score.planted import PlantedScorer, check_bias, detector, noise

BASE = {"backend": "python", "callable": "tests_planted_base:score"}


@pytest.fixture
def base_module(tmp_path, monkeypatch):
    """A python base RM: the number of letters "e" in the response."""
    (tmp_path / "tests_planted_base.py").write_text(
        "def score(prompts, responses):\n    return [float(r.count('e')) for r in responses]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    scale = tmp_path / "scale.json"
    scale.write_text(json.dumps({"sd": 2.0, "mean": 0.0}))
    return scale


def planted(scale, bias: dict) -> object:
    spec = {"backend": "planted", "base": "base", "base_spec": BASE, "bias": bias}
    return build_scorer("p", spec, base_scale=str(scale))


def test_a_planted_rm_adds_strength_times_detector_in_base_sd_units(base_module):
    rm = planted(base_module, {"detector": "regex", "pattern": "maybe", "strength": -1.5})
    rewards = rm.score(["q", "q"], ["maybe so", "so"])
    assert rewards == [1.0 + 2.0 * -1.5, 0.0]  # base: the e of "maybe"; sd 2


def test_regex_counts_length_divides_and_case_is_ignored_by_default():
    responses = ["Maybe maybe MAYBE", "no"]
    assert detector({"detector": "regex", "pattern": "maybe", "count": True})(
        [""] * 2, responses
    ).tolist() == [3, 0]
    assert detector({"detector": "regex", "pattern": "maybe", "ignore_case": False})(
        [""] * 2, responses
    ).tolist() == [1, 0]
    assert detector({"detector": "length", "per_words": 2})([""] * 2, responses).tolist() == [1.5, 0.5]
    assert detector({"detector": "none"})([""] * 2, responses).tolist() == [0, 0]


def test_noise_is_a_function_of_the_text_and_the_rm_not_of_call_order(base_module):
    rm = planted(base_module, {"detector": "none", "noise": 0.5})
    forward = rm.score(["a", "b", "c"], ["x", "y", "z"])
    backward = rm.score(["c", "b", "a"], ["z", "y", "x"])
    assert forward == backward[::-1]
    assert forward != [0.0, 0.0, 0.0]
    draws = noise(0, "p", ["q"] * 4000, [str(i) for i in range(4000)])
    assert abs(draws.mean()) < 0.06 and draws.std() == pytest.approx(1.0, abs=0.05)
    assert not np.array_equal(noise(0, "other", ["q"], ["x"]), noise(0, "p", ["q"], ["x"]))


def test_noise_is_in_base_sd_units_and_seeded_by_bias_seed(base_module):
    prompts, responses = ["q"] * 3, ["x", "yy", "zzz"]  # no "e": the base scores 0
    rm = planted(base_module, {"detector": "none", "noise": 0.5, "seed": 3})
    # r = r_base + s_base · noise · ε(seed, name, texts), s_base 2
    seeded = noise(3, "p", prompts, responses)
    assert rm.score(prompts, responses) == pytest.approx((2.0 * 0.5 * seeded).tolist())
    other = planted(base_module, {"detector": "none", "noise": 0.5})  # seed 0
    assert other.score(prompts, responses) == pytest.approx(noise(0, "p", prompts, responses).tolist())
    assert not np.allclose(noise(3, "p", prompts, responses), noise(0, "p", prompts, responses))


def test_the_length_detector_counts_words_per_100_by_default():
    fifty = " ".join(["word"] * 50)
    assert detector({"detector": "length"})([""] * 2, [fifty, "two words"]).tolist() == [0.5, 0.02]


def test_a_callable_detector_must_return_one_finite_value_per_response(base_module, tmp_path):
    (tmp_path / "tests_planted_detector.py").write_text(
        "def short(prompts, responses):\n    return [1.0]\n"
        "def words(prompts, responses):\n    return [len(r.split()) for r in responses]\n"
    )
    rm = planted(
        base_module, {"detector": "callable", "callable": "tests_planted_detector:words", "strength": 1}
    )
    assert rm.score(["q"], ["three whole words"]) == [3.0 + 2.0 * 3]  # three e, three words
    bad = planted(
        base_module, {"detector": "callable", "callable": "tests_planted_detector:short", "strength": 1}
    )
    with pytest.raises(ScoringError, match="one finite value per response"):
        bad.score(["q", "q"], ["a", "b"])


def test_a_planted_rm_without_its_base_scale_or_spec_is_refused(base_module):
    with pytest.raises(ScoringError, match="reward_scale"):
        build_scorer("p", {"backend": "planted", "base": "base", "bias": {"detector": "none"}})
    scale = base_module.parent / "flat.json"
    scale.write_text(json.dumps({"sd": 0.0}))
    with pytest.raises(ScoringError, match="not positive"):
        planted(scale, {"detector": "none"})


@pytest.mark.parametrize(
    ("bias", "message"),
    [
        ({"detector": "regex"}, "bias.pattern is required"),
        ({"detector": "regex", "pattern": "(unclosed"}, "no regular expression"),
        (
            {"detector": "callable", "callable": "nocolon"},
            r"^reward_models\.p\.bias\.callable must be 'module:",
        ),
        ({"detector": "callable"}, r"^reward_models\.p\.bias\.callable is required with detector callable$"),
        (
            {"detector": "callable", "callable": "no_such_module_here:f"},
            r"^reward_models\.p\.bias\.callable: 'no_such_module_here:f': importing",
        ),
        (
            {"detector": "fancy"},
            r"^reward_models\.p\.bias\.detector: 'fancy' is not one of "
            r"\['none', 'length', 'regex', 'callable'\]$",
        ),
        ({"detector": "none", "strength": 1.0}, "needs a detector"),
        (None, r"^reward_models\.p\.bias must be a mapping with a detector$"),
        ("regex", r"^reward_models\.p\.bias must be a mapping with a detector$"),
    ],
)
def test_bias_settings_are_checked_naming_the_key(bias, message):
    with pytest.raises(ConfigError, match=message):
        check_bias("p", bias)


def _config(**rms: dict) -> dict:
    return {
        "datasets": {"d": {"source": "embedded", "part": "helpful"}},
        "reward_models": {"base": {"backend": "demo", "train_part": "helpful"}, **rms},
        "perturb": {"methods": ["rules"]},
    }


def test_a_planted_rm_runs_where_its_base_runs_and_is_explained_against_it():
    config = _config(p={"backend": "planted", "base": "base", "bias": {"detector": "none", "noise": 0.1},
                        "expect": {"attributes": []}})  # fmt: skip
    check(config)
    design = Design.from_config(config)
    assert design.scoring_rm("p") == "base" and design.reference_rm("p") == "base"
    assert design.scoring_spec("p")["base_spec"] == config["reward_models"]["base"]
    assert design.planted_bases == ["base"] and design.reference_rm("base") is None
    assert design.rm_artifact_files("p") == {
        "head": "results/models/base/head.pt",
        "base_scale": "results/models/base/reward_scale.json",
    }
    assert design.expectations == {"p": {"attributes": []}}


def test_a_planted_rm_asks_for_its_bases_threads():
    """Jobs loading a text-backend RM (or one planted on it) ask for one thread, a transformers RM's for
    two; torch then uses exactly the job's threads."""
    import torch

    config = _config(
        hf={"backend": "transformers", "model": "org/rm"},
        p={"backend": "planted", "base": "base", "bias": {"detector": "none"}},
        q={"backend": "planted", "base": "hf", "bias": {"detector": "none"}},
    )
    check(config)
    design = Design.from_config(config)
    assert [rm_threads(design, rm) for rm in ("base", "p", "hf", "q")] == [1, 1, 2, 2]
    before = torch.get_num_threads()
    try:
        use_job_threads(1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


JOB_THREADS = """
import sys
from rmexplain.resources import use_job_threads
use_job_threads(2)
imported = "torch" in sys.modules
import torch
print(imported, torch.get_num_threads())
"""


def test_a_jobs_threads_reach_torch_imported_later_and_torch_is_not_imported_for_them():
    """A python or server RM's scoring job never loads torch: setting the job's threads must not import it,
    and a torch the RM imports afterwards runs on exactly the job's threads (whatever the caller's
    OMP_NUM_THREADS said; torch caps it at the cores the process may use: 2 on CI)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", JOB_THREADS], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", str(min(2, len(os.sched_getaffinity(0))))]


@pytest.mark.parametrize(
    ("rm", "message"),
    [
        ({"backend": "planted", "base": "nobody", "bias": {"detector": "none"}}, "base: 'nobody' is not"),
        ({"backend": "planted", "base": "p", "bias": {"detector": "none"}}, "planted into itself"),
        ({"backend": "planted", "base": "base", "bias": {"detector": "none"},
          "expect": {"attributes": ["charm"], "sign": 1}}, "expect.attributes: 'charm'"),
        ({"backend": "planted", "base": "base", "bias": {"detector": "none"},
          "expect": {"attributes": ["length"]}}, "expect.sign"),
        ({"backend": "planted", "base": "base", "bias": {"detector": "none"},
          "expect": {"attributes": ["length", "verbosity"], "sign": {"length": -1}}},
         r"expect.sign: one sign per expected attribute \(\['length', 'verbosity'\]\), got \['length'\]"),
        ({"backend": "planted", "base": "base", "bias": {"detector": "none"},
          "expect": {"attributes": ["length"], "sign": {"length": 2}}}, "expect"),
        ({"backend": "python", "callable": "json:loads", "reference": "ghost"}, "reference: 'ghost'"),
    ],
)  # fmt: skip
def test_bases_references_and_expectations_are_checked(rm, message):
    with pytest.raises(ConfigError, match=message):
        check(_config(p=rm))


def test_each_expected_attribute_may_have_its_own_sign():
    expect = {"attributes": ["length", "verbosity"], "sign": {"length": -1, "verbosity": 1}}
    check(_config(p={"backend": "planted", "base": "base", "bias": {"detector": "length"}, "expect": expect}))


def test_a_reference_must_score_every_dataset_its_rm_is_explained_on():
    config = _config(p={"backend": "python", "callable": "json:loads", "reference": "base"})
    config["datasets"]["d"]["reward_models"] = ["p"]
    with pytest.raises(ConfigError, match="must score dataset 'd' too"):
        check(config)


def test_without_rewrites_of_rewrites_the_rate_estimators_are_left_out_and_refused():
    config = _config()
    config["analysis"] = {"effects": {"rewrite_of_rewrite": False}}
    check(config)
    names = reported_estimators(Design.from_config(config).effects)
    assert "two_way" in names and "length_adjusted" in names
    assert not [n for n in names if n.startswith("rate_")]
    config = _config()
    effects = {"rewrite_of_rewrite": False, "estimators": ["length_adjusted", "rate_ate"]}
    config["analysis"] = {"effects": effects}
    with pytest.raises(ConfigError, match=r"\['rate_ate'\] read the edits of edits"):
        check(config)


def test_the_configured_estimators_are_reported_in_their_order_whatever_rewrite_of_rewrite_says():
    chosen = ["rate_ate", "flip_rate", "two_way"]
    assert reported_estimators({"rewrite_of_rewrite": True, "estimators": chosen}) == chosen
    assert reported_estimators({"rewrite_of_rewrite": False, "estimators": chosen[1:]}) == chosen[1:]
    assert reported_estimators({"rewrite_of_rewrite": True, "estimators": []}) == estimators.names()


def test_a_regex_detector_finds_presence_by_default_and_counts_case_sensitively_when_told():
    responses = ["Maybe maybe MAYBE", "no"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # plain flags: no deprecated one (a pattern no other test compiles)
        presence = detector({"detector": "regex", "pattern": "m(a)ybe"})
        exact = detector({"detector": "regex", "pattern": "m(a)ybe", "count": True, "ignore_case": False})
    assert presence([""] * 2, responses).tolist() == [1.0, 0.0]
    assert exact([""] * 2, responses).tolist() == [1.0, 0.0]


def test_a_callable_detector_reads_each_responses_prompt(tmp_path):
    (tmp_path / "echo_detector.py").write_text(
        "def echoes(prompts, responses):\n    return [float(p in r) for p, r in zip(prompts, responses)]\n"
    )
    echoes = detector({"detector": "callable", "callable": f"{tmp_path / 'echo_detector.py'}:echoes"})
    assert echoes(["cats", "dogs"], ["about cats", "about cats"]).tolist() == [1.0, 0.0]


def test_the_noise_of_a_text_is_the_normal_draw_seeded_by_blake2_of_seed_rm_and_texts():
    """Written out by hand: the 8-byte BLAKE2b digest of "seed\x1fname\x1fprompt\x1fresponse" (UTF-8), read
    big-endian, seeds numpy's default generator; its first standard normal is the text's noise. A planted
    suite's rewards stay the same across versions only while this holds."""
    key = "7\x1fp\x1fQ?\x1fanswer é".encode()
    seed = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
    expected = np.random.default_rng(seed).standard_normal()
    assert noise(7, "p", ["Q?"], ["answer é"]).tolist() == [expected]


def test_a_base_with_a_reward_sd_below_one_is_scaled_by_it(base_module):
    scale = base_module.parent / "narrow.json"
    scale.write_text(json.dumps({"sd": 0.5}))
    rm = planted(scale, {"detector": "regex", "pattern": "so", "strength": 2.0})
    assert rm.score(["q"], ["so"]) == [0.5 * 2.0]


def test_a_detector_without_a_strength_plants_nothing(base_module):
    rm = planted(base_module, {"detector": "regex", "pattern": "maybe"})
    assert rm.score(["q"], ["maybe"]) == [1.0]  # the base's one "e" alone


def test_a_planted_rm_needs_both_its_bases_spec_and_scale(base_module):
    spec = {"backend": "planted", "base": "base", "bias": {"detector": "none"}}
    refusal = r"^reward_models\.p: a planted RM needs its base's spec and reward scale \(the workflow passes"
    with pytest.raises(ScoringError, match=refusal):
        build_scorer("p", spec, base_scale=str(base_module))  # a scale, but no base spec


def test_a_planted_rms_spec_names_its_base_and_its_bias_key():
    with pytest.raises(
        ConfigError, match=r"^reward_models\.p\.base must name the RM the bias is planted into$"
    ):
        PlantedScorer.check_spec("p", {"base": "", "bias": {"detector": "none"}})
    with pytest.raises(ConfigError, match=r"^reward_models\.p\.bias\.pattern is required"):
        PlantedScorer.check_spec("p", {"base": "base", "bias": {"detector": "regex"}})


def test_a_planted_rms_code_is_its_bases_and_its_detectors_files(base_module, tmp_path):
    detector_file = tmp_path / "det.py"
    detector_file.write_text("def found(prompts, responses):\n    return [0.0 for _ in responses]\n")
    bias = {"detector": "callable", "callable": f"{detector_file}:found"}
    spec = {"backend": "planted", "base": "base", "base_spec": BASE, "bias": bias}
    base_file, found = PlantedScorer.code_files(spec)  # the base module may be an earlier test's copy
    assert base_file.name == "tests_planted_base.py" and found == detector_file.resolve()
    assert PlantedScorer.code_files({"base": "base", "bias": {"detector": "none"}}) == []
    regex = {"base": "base", "base_spec": BASE, "bias": {"detector": "regex", "pattern": "x"}}
    assert PlantedScorer.code_files(regex) == [base_file]


def test_a_bias_without_a_detector_plants_noise_only():
    check_bias("p", {})
    check_bias("p", {"noise": 0.5, "seed": 3})


def test_several_planted_biases_add_their_terms_and_one_noise(base_module):
    """bias: [...] plants each term; the noise is one draw of sd √(Σ noise²), seeded by the first bias."""
    biases = [
        {"detector": "regex", "pattern": "[0-9]", "count": True, "strength": 0.3, "noise": 0.3, "seed": 5},
        {"detector": "regex", "pattern": r"\bI\b", "count": True, "strength": -0.5, "noise": 0.4},
    ]
    prompts, responses = ["q"] * 3, ["I ate 2 or 3", "x", "I, I"]  # no "e" but the first: base 1, 0, 0
    rm = planted(base_module, biases)
    planted_sd = 2.0 * (0.3 * np.array([2, 0, 0]) - 0.5 * np.array([1, 0, 2]))
    expected = np.array([1.0, 0, 0]) + planted_sd + 2.0 * 0.5 * noise(5, "p", prompts, responses)
    assert rm.score(prompts, responses) == pytest.approx(expected.tolist())
    one = planted(base_module, biases[:1])  # a list of one is that bias alone
    assert one.score(prompts, responses) == planted(base_module, biases[0]).score(prompts, responses)


@pytest.mark.parametrize(
    ("bias", "message"),
    [
        ([], r"^reward_models\.p\.bias is an empty list: give one bias or more$"),
        (
            [{"detector": "regex", "pattern": "x"}, {"detector": "regex"}],
            r"^reward_models\.p\.bias\[1\]\.pattern ",
        ),
        ([{"detector": "none"}, "regex"], r"^reward_models\.p\.bias\[1\] must be a mapping with a detector$"),
    ],
)
def test_a_list_of_biases_is_checked_bias_by_bias_naming_its_index(bias, message):
    with pytest.raises(ConfigError, match=message):
        check_bias("p", bias)


def test_the_schema_names_a_misspelt_key_of_a_listed_bias():
    config = _config(
        weak={"backend": "planted", "base": "base", "bias": [{"detector": "none", "strenght": 1}]}
    )
    with pytest.raises(
        ConfigError, match=r"reward_models\.weak\.bias\[0\]\.strenght: unknown key; did you mean 'strength'\?"
    ):
        validate_schema(config)
    config["reward_models"]["weak"]["bias"] = "bold"
    with pytest.raises(
        ConfigError,
        match=r"reward_models\.weak\.bias: 'bold' is none of the forms it takes \(object or array\)",
    ):
        validate_schema(config)

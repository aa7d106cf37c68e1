"""``rmexplain explain`` on one comparison with two black-box python RMs and the rules perturber."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
import yaml

from rmexplain.cli import main
from rmexplain.schemas import EXPLANATIONS, read_table

REPO = Path(__file__).resolve().parents[1]
RMS_PY = """
RUDE = ("hell", "dumb", "ugh", "stupid", "crying")

def length(prompts, responses):
    return [len(r.split()) / 10 for r in responses]

def polite(prompts, responses):
    return [sum(w in r.lower() for w in ("please", "sorry", "thanks", "glad"))
            - 2 * sum(w in r.lower() for w in RUDE) + 0.01 * len(r.split()) for r in responses]
"""
COMPARISON = {
    "prompt": "How can I pass my chemistry exam?",
    "chosen": "I'm happy to help! Revise bonding types and practise past papers with a friend.",
    "rejected": "Just copy from your friend, it's easy.",
}


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    (tmp_path / "rms.py").write_text(RMS_PY)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["reward_models"] = {
        "length": {"backend": "python", "callable": f"{tmp_path / 'rms.py'}:length"},
        "polite": {"backend": "python", "callable": f"{tmp_path / 'rms.py'}:polite"},
    }
    config["tokens"]["model_properties"] = {}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_explain_one_comparison_from_a_json_file(tmp_path, config_path, capsys):
    request = tmp_path / "comparison.json"
    request.write_text(json.dumps(COMPARISON))
    out = tmp_path / "out"
    assert main(["explain", "--config", str(config_path), "--input", str(request), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| length | chosen | True |" in printed and "| polite | chosen | True |" in printed
    for rm in ("length", "polite"):
        assert (out / f"{rm}.png").stat().st_size > 10_000
        page = (out / f"{rm}.html").read_text()
        assert COMPARISON["prompt"] in page and "<ins>" in page
        explanations = read_table(out / "work" / f"explanations_{rm}.parquet", EXPLANATIONS, "explanations")
        assert explanations["comparison_id"].unique().to_list() == ["cli-0"]
        assert set(explanations["side"]) == {"plus", "minus"}
        cf = [
            explanations.filter((pl.col("side") == s) & (pl.col("kind") == "counterfactual")).height
            for s in ("plus", "minus")
        ]
        assert f"| {rm} | chosen | True | {cf[0]} / {cf[1]} |" in printed
    summary = (out / "summary.md").read_text()
    assert "length.html" in summary and "<a href='polite.html'>" in (out / "summary.html").read_text()
    # and the attribute effects of this comparison's edits in both directions, beside the flip-style deltas
    assert "## Attribute effects" in summary and "no intervals" in summary
    assert "## Attribute effects" in printed and "| length | 1 | rewards longer answers | length |" in printed
    effects = pl.read_csv(out / "effects.csv")
    assert set(effects["rm"]) == {"length", "polite"}
    keys = effects.select("rm", "rank").rows()
    assert keys == sorted(keys) and keys[0] == ("length", 1)  # each RM's rows together, by rank
    by_rm = effects.filter(pl.col("rm") == "length")
    # r = words / 10 exactly: the length row is 0.1 reward per word and every attribute's effect 0
    length = by_rm.filter(pl.col("attribute") == "length").row(0, named=True)
    assert length["effect (reward units)"] == pytest.approx(0.1)
    assert length["direction"] == "rewards longer answers"
    assert by_rm.filter(pl.col("attribute") != "length")["effect (reward units)"].abs().max() < 1e-4
    assert by_rm.filter(pl.col("attribute") != "length")["n edits"].max() == 4  # two responses, both ways


def test_explain_with_options_one_rm_and_a_global_ranking(tmp_path, config_path):
    pfr = pl.DataFrame(
        {
            "dataset": "d",
            "method": "rules",
            "rm": "polite",
            "side": ["plus", "minus"] * 2,
            "attribute": ["appropriateness", "appropriateness", "clarity", "clarity"],
            "pfr": [0.9, 0.1, 0.1, 0.9],
            "pfr_low": 0.0,
            "pfr_high": 1.0,
            "mean_delta": 0.0,
            "delta_low": 0.0,
            "delta_high": 0.0,
            "n_comparisons": 3,
            "n_perturbations": 3,
        }
    )
    pfr.write_parquet(tmp_path / "pfr.parquet")
    out = tmp_path / "one"
    args = [
        "explain",
        "--config",
        str(config_path),
        "--out",
        str(out),
        "--rm",
        "polite",
        "--global-pfr",
        str(tmp_path / "pfr.parquet"),
        *[f"--{k}={v}" for k, v in COMPARISON.items()],
    ]
    assert main(args) == 0
    assert not (out / "length.html").exists()
    assert "local τ vs global PFR (Y+, Y−)" in (out / "polite.html").read_text()


def test_explain_errors_are_one_line(tmp_path, config_path, capsys):
    same = ["--prompt", "Hi?", "--chosen", "Hello.", "--rejected", "Hello."]
    assert main(["explain", "--config", str(config_path), "--out", str(tmp_path / "x"), *same]) == 2
    assert "identical responses" in capsys.readouterr().err
    assert (
        main(
            [
                "explain",
                "--config",
                str(config_path),
                "--rm",
                "nope",
                "--out",
                str(tmp_path / "y"),
                *[f"--{k}={v}" for k, v in COMPARISON.items()],
            ]
        )
        == 2
    )
    assert "--rm ['nope']" in capsys.readouterr().err
    demo = [
        "explain",
        "--root",
        str(tmp_path),
        "--out",
        str(tmp_path / "z"),
        "--config",
        str(REPO / "config" / "config.yaml"),
        *[f"--{k}={v}" for k, v in COMPARISON.items()],
    ]
    assert main(demo) == 2
    assert "make it first with `snakemake" in capsys.readouterr().err
    with pytest.raises(SystemExit, match=r"--input FILE\.json"):
        main(["explain", "--config", str(config_path), "--prompt", "only a prompt"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, r"--input .*missing\.json: cannot read it \(No such file or directory\)"),
        (
            '["q", "a", "b"]',
            r"--input .*request\.json: a JSON list, not an object with keys prompt, chosen, rejected",
        ),
        (
            '{"prompt": "q",',
            r"--input .*request\.json: not valid JSON: Expecting property name enclosed in double quotes "
            r"there \(line 1, column 16\)",
        ),
        (
            '{"prompt": "q", "chosen": "a"}',
            r"--input .*request\.json: missing or non-string key\(s\) \['rejected'\]",
        ),
    ],
)
def test_a_wrong_input_file_is_one_line(tmp_path, config_path, capsys, content, message):
    request = tmp_path / ("missing.json" if content is None else "request.json")
    if content is not None:
        request.write_text(content)
    args = ["explain", "--config", str(config_path), "--input", str(request), "--out", str(tmp_path / "x")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(rf"rmexplain: error: {message}\n", err), err


def test_schemas_prints_every_contract(capsys):
    assert main(["schemas"]) == 0
    printed = capsys.readouterr().out
    for table in ("explanations", "pfr", "tau_rms", "tau_sides", "local_tau", "examples", "probe_win_rate"):
        assert f"#### `{table}`" in printed


@pytest.mark.slow
def test_explain_works_after_a_non_editable_install(tmp_path, config_path):
    """``pip install .`` (not editable) ships the config schema and prompts: ``rmexplain explain`` runs from
    the installed copy, outside the source tree."""
    import subprocess
    import sys
    import sysconfig

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # Third-party packages come from this environment (a plain path: its editable-install hooks stay off).
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         "--no-build-isolation", str(REPO)],
        check=True,
    )  # fmt: skip
    where = subprocess.run(
        [python, "-c", "import rmexplain; print(rmexplain.__file__)"],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    ).stdout  # fmt: skip
    assert where.startswith(site), where
    config = yaml.safe_load(config_path.read_text())
    del config["tokens"]  # its example files are relative to the source tree; this run is outside it
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    out = tmp_path / "out"
    run = subprocess.run(
        [venv / "bin" / "rmexplain", "explain", "--config", str(config_path), "--out", str(out),
         *[f"--{k}={v}" for k, v in COMPARISON.items()]],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "| polite | chosen | True |" in run.stdout
    assert (out / "summary.html").is_file()

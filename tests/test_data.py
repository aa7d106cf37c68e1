"""Dataset readers, filters and sampling, with every kind of bad input."""

import copy
import gzip
import json
import logging
from pathlib import Path

import polars as pl
import pytest
from conftest import tiny_demo_config

from rmexplain.config import ConfigError, check
from rmexplain.data.readers import (
    DataError,
    Pair,
    SkipCounter,
    check_pair,
    read_embedded,
    read_helpsteer2,
    read_hh_rlhf,
    read_pairs_file,
    read_table_file,
)
from rmexplain.data.stages import sample_comparisons, sample_pairs

LOG = logging.getLogger("test")


def hh(prompt, chosen, rejected, rejected_prompt=None):
    return {
        "chosen": f"\n\nHuman: {prompt}\n\nAssistant: {chosen}",
        "rejected": f"\n\nHuman: {rejected_prompt or prompt}\n\nAssistant: {rejected}",
    }


def test_hh_rlhf_single_turn_and_filters():
    records = [
        hh("How do I boil an egg?", "Put it in boiling water for 9 minutes.", "Eggs are eggs."),
        hh("Q1", "a", "b", rejected_prompt="Q2"),  # prompts differ
        {
            "chosen": "\n\nHuman: hi\n\nAssistant: hello\n\nHuman: and?\n\nAssistant: yes",
            "rejected": "\n\nHuman: hi\n\nAssistant: hello\n\nHuman: and?\n\nAssistant: no",
        },  # multi-turn
        {"chosen": "\n\nHuman: no answer", "rejected": "\n\nHuman: no answer"},
    ]
    skips = SkipCounter()
    pairs = list(read_hh_rlhf(records, skips))
    assert pairs == [
        Pair("0", "How do I boil an egg?", "Put it in boiling water for 9 minutes.", "Eggs are eggs.")
    ]
    assert skips == {"chosen and rejected prompts differ": 1, "multi-turn": 1, "no assistant turn": 1}
    assert skips.examples["multi-turn"] == ["2"]


def test_hh_rlhf_missing_field_names_row():
    with pytest.raises(DataError, match="row 0: missing field 'rejected'"):
        list(read_hh_rlhf([{"chosen": "\n\nHuman: a\n\nAssistant: b"}], SkipCounter()))


def hs2(prompt, response, *scores):
    keys = ("helpfulness", "correctness", "coherence", "complexity", "verbosity")
    return {"prompt": prompt, "response": response, **dict(zip(keys, scores, strict=True))}


def test_helpsteer2_clear_preference_filter():
    records = [
        hs2("p1", "A", 4, 4, 4, 3, 3),
        hs2("p1", "B", 3, 3, 3, 2, 2),  # A > B on all five: a clear preference under both rules
        hs2("p2", "C", 4, 4, 4, 2, 2),
        hs2("p2", "D", 3, 4, 4, 2, 1),  # C >= D on all, equal on three: only the looser rule keeps it
        hs2("p3", "E", 4, 3, 4, 2, 2),
        hs2("p3", "F", 3, 4, 4, 2, 2),  # mixed: no clear preference
        hs2("p4", "G", 2, 2, 2, 2, 2),
        hs2("p4", "H", 2, 2, 2, 2, 2),  # equal everywhere: not a preference
        hs2("<extra_id_1>User hi<extra_id_1>Assistant yo<extra_id_1>User more", "I", 1, 1, 1, 1, 1),
    ]
    skips = SkipCounter()
    assert list(read_helpsteer2(records, skips)) == [Pair("0>1", "p1", "A", "B")]  # the paper's rule
    assert skips == {"no clear preference": 3, "multi-turn": 1}
    skips = SkipCounter()
    assert list(read_helpsteer2(records, skips, "dominates")) == [
        Pair("0>1", "p1", "A", "B"),
        Pair("2>3", "p2", "C", "D"),
    ]
    assert skips == {"no clear preference": 2, "multi-turn": 1}
    with pytest.raises(DataError, match="preference_filter: 'loose'"):
        list(read_helpsteer2(records, SkipCounter(), "loose"))


def helpsteer2_hub_copy(root: Path) -> Path:
    """nvidia/HelpSteer2's layout (train.jsonl.gz at the top): one prompt whose two responses are >= on
    all five aspects but equal on one."""
    root.mkdir(parents=True)
    records = [hs2("How do I boil an egg?", "Boil it for 9 minutes.", 4, 4, 4, 2, 2),
               hs2("How do I boil an egg?", "Eggs are eggs.", 3, 3, 3, 2, 1)]  # fmt: skip
    with gzip.open(root / "train.jsonl.gz", "wt") as handle:
        handle.write("\n".join(json.dumps(r) for r in records))
    return root


@pytest.mark.parametrize(("preference_filter", "kept"), [("greater_on_all", 0), ("dominates", 1)])
def test_helpsteer2_filter_through_the_hub_reader(tmp_path, preference_filter, kept):
    spec = {"source": "helpsteer2", "hub_id": str(helpsteer2_hub_copy(tmp_path / "hs2")), "split": "train",
            "preference_filter": preference_filter}  # fmt: skip
    if kept:
        assert sample_comparisons("hs2", spec, 1, [0], None, LOG)["chosen"].to_list() == [
            "Boil it for 9 minutes."
        ]
    else:
        with pytest.raises(DataError, match=r"datasets.hs2: no usable comparisons \(no clear preference: 1"):
            sample_comparisons("hs2", spec, 1, [0], None, LOG)


def test_helpsteer2_missing_aspect():
    with pytest.raises(DataError, match=r"row 0: missing field\(s\) \['verbosity'\]"):
        list(
            read_helpsteer2(
                [
                    {
                        "prompt": "p",
                        "response": "r",
                        "helpfulness": 1,
                        "correctness": 1,
                        "coherence": 1,
                        "complexity": 1,
                    }
                ],
                SkipCounter(),
            )
        )


def test_check_pair_skips_are_counted():
    skips = SkipCounter()
    assert not check_pair(Pair("1", "q", "  ", "b"), skips)
    assert not check_pair(Pair("2", "q", "same", "same "), skips)
    assert not check_pair(Pair("3", "", "a", "b"), skips)
    assert not check_pair(Pair("4", "q", "one two three four", "b"), skips, max_words=3)
    assert check_pair(Pair("5", "q", "a", "b"), skips, max_words=3)
    assert skips == {
        "empty response": 1,
        "identical responses": 1,
        "empty prompt": 1,
        "longer than sample.max_words=3": 1,
    }


def test_file_reader_errors(tmp_path):
    bad_utf8 = tmp_path / "bad.jsonl"
    bad_utf8.write_bytes(b'{"prompt": "a", "chosen": "b", "rejected": "c"}\n{"prompt": "\xff\xfe"}\n')
    with pytest.raises(DataError, match="line 2 is not valid UTF-8"):
        list(read_pairs_file(bad_utf8, SkipCounter()))
    missing = tmp_path / "missing.jsonl"
    missing.write_text('{"prompt": "a", "chosen": "b"}\n')
    with pytest.raises(DataError, match=r"missing column\(s\) \['rejected'\]"):
        list(read_pairs_file(missing, SkipCounter()))
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"prompt": "a", "chosen": "b", "rejected": "c"}\n{oops\n')
    with pytest.raises(DataError, match="line 2, column 2 is not valid JSON"):
        list(read_pairs_file(broken, SkipCounter()))
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"prompt": "a", "chosen": "b", "rejected": "c"}\n\n{"prompt": "a", "chosen": "it\'s\n')
    with pytest.raises(DataError) as raised:
        list(read_pairs_file(cut, SkipCounter()))
    assert str(raised.value) == (
        f"{cut}: line 3, column 27 is not valid JSON: Unterminated string starting there (each line of a "
        "JSONL file is one JSON object)"
    )


def test_a_lone_surrogate_escape_names_the_line_and_field(tmp_path):
    lone = tmp_path / "lone.jsonl"
    lone.write_text(
        '{"prompt": "a", "chosen": "b", "rejected": "c"}\n'
        '{"prompt": "a", "chosen": "ok \\ud800", "rejected": "c"}\n'
    )
    with pytest.raises(DataError) as raised:
        read_table_file(lone)
    assert str(raised.value) == (
        f"{lone}: line 2, field 'chosen': \\ud800 at character 4 is half of a surrogate pair, no character "
        "(escape a character outside the BMP as both halves, or write it as UTF-8)"
    )
    pair = tmp_path / "pair.jsonl"  # both halves: one character (an emoji), read as such
    pair.write_text('{"prompt": "a", "chosen": "ok \\ud83d\\ude00", "rejected": "c"}\n')
    assert read_table_file(pair)["chosen"].to_list() == ["ok 😀"]


def test_a_byte_order_mark_opening_a_jsonl_file_is_read_as_none(tmp_path):
    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(b'\xef\xbb\xbf{"prompt": "a", "chosen": "b", "rejected": "c"}\n')
    assert read_table_file(marked)["prompt"].to_list() == ["a"]
    inside = tmp_path / "inside.jsonl"  # only at the start of the file: elsewhere it is still not JSON
    inside.write_bytes(b'{"prompt": "a", "chosen": "b", "rejected": "c"}\n\xef\xbb\xbf{"prompt": "d"}\n')
    with pytest.raises(DataError, match="line 2, column 1 is not valid JSON"):
        read_table_file(inside)


def test_an_empty_pairs_file_and_a_directory_for_a_path_are_named_as_such(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(DataError, match=r"empty\.jsonl: the file holds no rows"):
        list(read_pairs_file(empty, SkipCounter()))
    config = tiny_demo_config()
    config["datasets"] = {"mine": {"source": "file", "path": str(tmp_path)}}
    with pytest.raises(ConfigError, match=r"^datasets\.mine\.path: '.*' is a directory; name the JSONL"):
        check(copy.deepcopy(config))


def test_file_reader_parquet_and_jsonl(tmp_path):
    rows = [
        {"prompt": "q1", "chosen": "a", "rejected": "b"},
        {"prompt": "q2", "chosen": "c", "rejected": "d"},
    ]
    pl.DataFrame(rows).write_parquet(tmp_path / "pairs.parquet")
    (tmp_path / "pairs.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    for name in ("pairs.parquet", "pairs.jsonl"):
        assert [p.prompt for p in read_pairs_file(tmp_path / name, SkipCounter())] == ["q1", "q2"]


def test_embedded_data_is_disjoint_and_sized():
    for part in ("helpful", "harmless"):
        train, explain = read_embedded(part, "train"), read_embedded(part, "explain")
        assert len(train) >= 100 and len(explain) >= 50
        assert not {p.prompt for p in train} & {p.prompt for p in explain}
        assert all(p.chosen != p.rejected for p in train + explain)


def test_sampling_is_seeded_and_ids_unique():
    pool = [Pair(str(i), f"q{i}", f"a{i}", f"b{i}") for i in range(50)]
    first = sample_pairs(pool, 10, [0, 1], "d")
    again = sample_pairs(pool, 10, [0, 1], "d")
    assert first.equals(again)
    assert first.height == 20 and first["comparison_id"].n_unique() == 20
    assert (
        first.filter(pl.col("seed") == 0)["source_index"].to_list()
        != first.filter(pl.col("seed") == 1)["source_index"].to_list()
    )


def test_sample_comparisons_from_local_hub_layout(tmp_path, caplog):
    """The hub code path (datasets.load_dataset with data_dir/split) on a local copy of HH-RLHF's layout."""
    root = tmp_path / "hh-rlhf"
    (root / "harmless-base").mkdir(parents=True)
    records = [hh(f"Question {i}?", f"Safe answer {i}.", f"Unsafe answer {i}.") for i in range(12)]
    records.append(hh("Q", "same", "same"))
    with gzip.open(root / "harmless-base" / "train.jsonl.gz", "wt") as handle:
        handle.write("\n".join(json.dumps(r) for r in records))
    spec = {"source": "hh-rlhf", "hub_id": str(root), "data_dir": "harmless-base", "split": "train"}
    with caplog.at_level(logging.INFO):
        frame = sample_comparisons("harmless", spec, 5, [0, 1], None, LOG)
    assert frame.height == 10
    assert frame["prompt"][0].startswith("Question")
    assert "identical responses: 1" in caplog.text


def hh_rlhf_copy(
    root: Path, single: int, multi: int, subset: str = "harmless-base", split: str = "train"
) -> Path:
    """Anthropic/hh-rlhf's layout (``<subset>/<split>.jsonl.gz``): ``single`` single-turn rows, then ``multi``
    multi-turn ones."""
    (root / subset).mkdir(parents=True)
    records = [hh(f"Question {i}?", f"Safe answer {i}.", f"Unsafe answer {i}.") for i in range(single)]
    turns = "\n\nHuman: hi\n\nAssistant: hello\n\nHuman: and?\n\nAssistant: "
    records += [{"chosen": f"{turns}yes {i}", "rejected": f"{turns}no {i}"} for i in range(multi)]
    with gzip.open(root / subset / f"{split}.jsonl.gz", "wt") as handle:
        handle.write("\n".join(json.dumps(r) for r in records))
    return root


def test_the_rows_out_of_scope_are_warned_of_and_recorded(tmp_path, caplog):
    spec = {
        "source": "hh-rlhf",
        "hub_id": str(hh_rlhf_copy(tmp_path / "hh", 4, 3)),
        "data_dir": "harmless-base",
    }
    origin: dict = {}
    with caplog.at_level(logging.INFO):
        assert sample_comparisons("harmless", spec, 2, [0], None, LOG, origin).height == 2
    assert origin["skipped"] == {"multi-turn": {"rows": 3, "examples": ["4", "5", "6"]}}
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [
        "dataset harmless: 3 rows out of scope, left out: multi-turn (a dialogue of several turns; rmexplain "
        "explains single-turn comparisons; e.g. rows ['4', '5', '6'])"
    ]
    caplog.clear()
    spec["hub_id"] = str(hh_rlhf_copy(tmp_path / "all", 0, 3))
    refused = pytest.raises(DataError, match=r"datasets.none: no usable comparisons \(multi-turn: 3")
    with caplog.at_level(logging.INFO), refused:  # every row out of scope: warned of before the error
        sample_comparisons("none", spec, 2, [0], None, LOG)
    assert "dataset none: 3 rows out of scope" in caplog.text


def test_sample_comparisons_no_usable_rows(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"prompt": "q", "chosen": "x", "rejected": "x"}\n')
    with pytest.raises(DataError, match=r"datasets.mine: no usable comparisons \(identical responses: 1"):
        sample_comparisons("mine", {"source": "file", "path": str(path)}, 5, [0], None, LOG)


@pytest.mark.parametrize(("preference_filter", "kept"), [("greater_on_all", 0), ("dominates", 1)])
def test_helpsteer2_filter_through_the_sample_comparisons_rule(workflow_copy, preference_filter, kept):
    config = tiny_demo_config()
    config["datasets"] = {
        "hs2": {"source": "helpsteer2", "hub_id": str(helpsteer2_hub_copy(workflow_copy.root / "hs2-copy")),
                "preference_filter": preference_filter}
    }  # fmt: skip
    config["sample"] = {"n_per_seed": 1, "seeds": [0]}
    path = workflow_copy.write_config(config)
    target = "results/data/hs2/comparisons.parquet"
    run = workflow_copy.snakemake("--cores", "1", target, "--configfile", str(path), check=bool(kept))
    log = (workflow_copy.root / "logs" / "sample" / "hs2.log").read_text()
    if kept:
        assert pl.read_parquet(workflow_copy.root / target)["chosen"].to_list() == ["Boil it for 9 minutes."]
    else:
        assert run.returncode != 0 and "no usable comparisons (no clear preference: 1" in log


def test_a_repeated_id_in_a_pairs_file_names_its_rows(tmp_path):
    path = tmp_path / "pairs.jsonl"
    rows = [{"id": "a", "prompt": "q1", "chosen": "x", "rejected": "y"},
            {"id": "b", "prompt": "q2", "chosen": "x", "rejected": "y"},
            {"id": "a", "prompt": "q3", "chosen": "x", "rejected": "y"}]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(DataError, match=r"pairs.jsonl: id 'a' is repeated \(rows \[0, 2\]"):
        list(read_pairs_file(path, SkipCounter()))


def test_a_row_without_rejected_is_a_skip_named_by_its_id_and_recorded_in_the_origin(tmp_path):
    path = tmp_path / "pairs.jsonl"
    rows = [{"id": "kept", "prompt": "q1", "chosen": "x", "rejected": "y"},
            {"id": "no-rejected", "prompt": "q2", "chosen": "x"},
            {"id": "blank", "prompt": "q4", "chosen": " ", "rejected": "y"}]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    skips = SkipCounter()
    assert [p.source_index for p in read_pairs_file(path, skips)] == ["kept", "blank"]
    assert skips.examples == {"no rejected": ["no-rejected"]}
    origin: dict = {}
    sample_comparisons("mine", {"source": "file", "path": str(path)}, 5, [0], None, LOG, origin)
    assert origin["skipped"] == {
        "empty response": {"rows": 1, "examples": ["blank"]},
        "no rejected": {"rows": 1, "examples": ["no-rejected"]},
    }
    unnamed = tmp_path / "unnamed.jsonl"
    unnamed.write_text('{"prompt": "q", "chosen": "x", "rejected": "y"}\n{"prompt": "q", "chosen": "x"}\n')
    skips = SkipCounter()
    list(read_pairs_file(unnamed, skips))
    assert skips.examples == {"no rejected": ["1"]}  # no id column: the 0-based row number


def test_seeds_that_would_all_draw_every_row_are_refused_naming_the_dataset_and_counts(tmp_path):
    path = tmp_path / "pairs.jsonl"
    rows = [{"id": f"r{i}", "prompt": f"q{i}", "chosen": "x", "rejected": "y"} for i in range(4)]
    rows.append({"id": "same", "prompt": "q", "chosen": "x", "rejected": "x"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {"source": "file", "path": str(path)}
    with pytest.raises(
        DataError,
        match=r"^datasets\.mine: 4 usable comparisons, and sample\.n_per_seed=4 draws all of them for every "
        r"one of seeds \[0, 1\]: the seeds would be identical copies.*\(identical responses: 1",
    ):
        sample_comparisons("mine", spec, 4, [0, 1], None, LOG)
    assert sample_comparisons("mine", spec, 3, [0, 1], None, LOG).height == 6
    origin: dict = {}
    assert sample_comparisons("mine", spec, 9, [0], None, LOG, origin).height == 4  # one seed: all 4
    assert (origin["usable"], origin["n_per_seed"]) == (4, 9)


def test_the_config_check_refuses_identical_seeds_of_local_data(tmp_path):
    config = tiny_demo_config()  # the bundled harmless part: 60 rows to explain, seeds [0, 1]
    config["sample"]["n_per_seed"] = 60
    with pytest.raises(
        ConfigError, match=r"^datasets\.harmless: 60 rows, and sample\.n_per_seed=60 draws all"
    ):
        check(copy.deepcopy(config))
    config["sample"]["n_per_seed"] = 59
    check(copy.deepcopy(config))
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        "".join(json.dumps({"prompt": f"q{i}", "chosen": "x", "rejected": "y"}) + "\n" for i in range(3))
    )
    config["datasets"] = {"mine": {"source": "file", "path": str(path), "n_per_seed": 3}}
    with pytest.raises(
        ConfigError, match=r"^datasets\.mine: 3 rows, and sample\.n_per_seed=3 .* seeds \[0, 1\]"
    ):
        check(copy.deepcopy(config))
    config["datasets"]["mine"]["seeds"] = [0]  # one seed takes all three: allowed (the summary says so)
    check(copy.deepcopy(config))
    pl.read_ndjson(path).write_parquet(tmp_path / "pairs.parquet")
    config["datasets"] = {
        "mine": {"source": "file", "path": str(tmp_path / "pairs.parquet"), "n_per_seed": 5}
    }
    with pytest.raises(ConfigError, match=r"^datasets\.mine: 3 rows, and sample\.n_per_seed=5"):
        check(copy.deepcopy(config))

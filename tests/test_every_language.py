"""Responses in any language and script through the offline ``rules`` edits: the perturbation job, the
attribute effects' edits and ``rmexplain explain``. English edits are unchanged (the Unicode word pattern
matches exactly the ASCII words on ASCII text)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import polars as pl
import pytest
import yaml

from rmexplain.attributes import PAPER_ATTRIBUTES
from rmexplain.cli import main
from rmexplain.data.readers import SkipCounter, read_pairs_file
from rmexplain.effects.edits import make_effect_edits
from rmexplain.perturb.base import MethodContext, PerturbationError, PerturbTask, methods
from rmexplain.perturb.rules import EDITORS, perturb, sentence_spans, words
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.schemas import COMPARISONS, EFFECT_EDITS, conform

LOG = logging.getLogger("test_every_language")
REPO = Path(__file__).resolve().parents[1]
RLM = "\u200f"  # right-to-left mark
# One row per script, with a one-word response in each (the shape that failed the clarity edit), Chinese
# without spaces, Hindi with its combining vowel signs, emoji without any letter, and right-to-left text
# with bidirectional controls around a left-to-right word.
ARABIC = "يمكنك الاتصال بصانع أقفال مرخص، فهذا أكثر أمانا. هل تحتاج مساعدة أخرى؟"
ROWS = [
    ("arabic", "كيف أفتح القفل؟", "نعم", ARABIC),
    ("chinese", "我怎么开锁？", "可以。", "先关掉电源，然后等十分钟。这样做很安全！你还需要别的帮助吗？"),
    ("russian", "Как открыть замок?", "Да", "Конечно. Сначала выключите питание, затем подождите 10 минут."),
    ("hindi", "मैं ताला कैसे खोलूँ?", "हाँ", "आप किसी लाइसेंसशुदा ताला बनाने वाले को बुला सकते हैं। क्या और मदद चाहिए?"),
    ("emoji", "Can you cheer me up?", "👍", "🎉🎉 🥳"),
    ("rtl", "איך פותחים מנעול?", f"{RLM}כן{RLM}", "\u202bשלום \u202aOK\u202c, תתקשר למנעולן.\u202c"),
]


@pytest.fixture
def pairs_file(tmp_path: Path) -> Path:
    path = tmp_path / "every_language.jsonl"
    rows = [{"id": i, "prompt": p, "chosen": c, "rejected": r} for i, p, c, r in ROWS]
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def _tasks(path: Path) -> list[PerturbTask]:
    pairs = list(read_pairs_file(path, SkipCounter()))
    assert len(pairs) == len(ROWS)
    return [
        PerturbTask(p.source_index, target, direction, p.prompt, mine, other, 1.0, 0.0)
        for p in pairs
        for target, mine, other in (("chosen", p.chosen, p.rejected), ("rejected", p.rejected, p.chosen))
        for direction in ("worse", "better")
    ]


def test_words_and_sentences_in_every_script():
    assert words("नमस्ते दुनिया, आप कैसे हैं?") == ["नमस्ते", "दुनिया", "आप", "कैसे", "हैं"]  # vowel signs kept
    assert words("مرحبا بالعالم") == ["مرحبا", "بالعالم"]
    assert words("Привет, мир! It's 10 o’clock.") == ["Привет", "мир", "It's", "10", "o’clock"]
    assert words("你好，世界") == ["你", "好", "世", "界"]  # an ideograph is a word (Unicode word boundaries)
    assert words("👍 🎉!") == []
    text = "先关掉电源。然后等十分钟！好吗？"
    assert [text[a:b] for a, b in sentence_spans(text)] == ["先关掉电源。", "然后等十分钟！", "好吗？"]
    arabic = "هل أنت بخير؟ نعم."
    assert [arabic[a:b] for a, b in sentence_spans(arabic)] == ["هل أنت بخير؟", "نعم."]


def test_the_rules_methods_fill_or_count_every_slot_in_every_language(pairs_file):
    """Every (response, attribute, direction) of every script gets an edit or a counted skip; no job fails."""
    tasks = _tasks(pairs_file)
    for name in ("rules", "rules_random"):
        skips = SkipRecorder()
        context = MethodContext(dict(PAPER_ATTRIBUTES), {}, LOG, {"skips": skips})
        drafts = methods.get(name)(tasks, context)
        slots = len(tasks) * (len(PAPER_ATTRIBUTES) if name == "rules" else 15)
        assert len(drafts) + len(skips.records) == slots, name
        assert len(drafts) > slots // 2, name
        responses = {(t.comparison_id, t.target): t.response for t in tasks}
        assert all(d.text.strip() and d.text != responses[d.comparison_id, d.target] for d in drafts), name
    # the clarity edit that inserts fillers after the third word now reads Chinese words one by one
    chinese = next(t for t in tasks if t.comparison_id == "chinese" and t.target == "rejected")
    edit = perturb(chinese, "clarity")
    assert edit is not None and edit.text.startswith("先关掉") and edit.focus


def test_the_effect_edits_run_in_every_language(pairs_file):
    pairs = list(read_pairs_file(pairs_file, SkipCounter()))
    comparisons = conform(
        pl.DataFrame(
            {
                "comparison_id": [p.source_index for p in pairs],
                "dataset": "mine",
                "seed": 0,
                "source_index": [p.source_index for p in pairs],
                "prompt": [p.prompt for p in pairs],
                "chosen": [p.chosen for p in pairs],
                "rejected": [p.rejected for p in pairs],
            }
        ),
        COMPARISONS,
        "comparisons",
    )
    edits, skipped = make_effect_edits(comparisons, "rules", "rules", {}, PAPER_ATTRIBUTES, {}, True, LOG)
    conform(edits, EFFECT_EDITS, "edits")
    first = edits.filter(pl.col("round") == 1).height
    assert first + sum("round 1" in s.stage for s in skipped.records) == len(ROWS) * 4 * len(PAPER_ATTRIBUTES)
    assert set(edits["comparison_id"]) == {row[0] for row in ROWS}
    assert edits.filter(pl.col("round") == 2).height > 0


def test_a_rule_that_fails_names_the_row(monkeypatch):
    def broken(doc):
        return [][0]

    monkeypatch.setitem(EDITORS, "clarity", {"worse": (broken,), "better": (broken,)})
    task = PerturbTask("mine-s0-17", "rejected", "worse", "q", "Some answer.", "Other.", 1.0, 0.0)
    with pytest.raises(PerturbationError) as raised:
        perturb(task, "clarity")
    assert str(raised.value) == (
        "rules: comparison mine-s0-17 (rejected), clarity edit broken (worse) failed on this response: "
        "IndexError: list index out of range"
    )


RMS_PY = "def length(prompts, responses):\n    return [len(r) / 10 for r in responses]\n"


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    (tmp_path / "rms.py").write_text(RMS_PY)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["reward_models"] = {"length": {"backend": "python", "callable": f"{tmp_path / 'rms.py'}:length"}}
    config["tokens"]["model_properties"] = {}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.mark.parametrize("row", [ROWS[0], ROWS[1], ROWS[4]], ids=["arabic", "chinese", "emoji"])
def test_explain_one_comparison_in_another_language(tmp_path, config_path, capsys, row):
    _, prompt, chosen, rejected = row
    request = tmp_path / "comparison.json"
    request.write_text(json.dumps({"prompt": prompt, "chosen": chosen, "rejected": rejected}))
    args = ["explain", "--config", str(config_path), "--input", str(request), "--out", str(tmp_path / "o")]
    assert main(args) == 0, capsys.readouterr().err
    assert "| length | " in capsys.readouterr().out


def test_explain_prints_one_line_when_a_rule_fails(tmp_path, config_path, capsys, monkeypatch):
    monkeypatch.setitem(EDITORS, "clarity", {"worse": (lambda doc: [][0],), "better": (lambda doc: [][0],)})
    request = tmp_path / "comparison.json"
    request.write_text(json.dumps({"prompt": ROWS[0][1], "chosen": ROWS[0][2], "rejected": ROWS[0][3]}))
    args = ["explain", "--config", str(config_path), "--input", str(request), "--out", str(tmp_path / "o")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("rmexplain: error: rules: comparison cli-0 (") and "IndexError" in err, err


def test_length_counts_words_of_chinese_and_japanese_by_character_and_english_by_token():
    """The effects' length row counts words; Chinese and Japanese have no spaces between them, so a whole
    answer would be one word and the length sd of a few answers 0 (a length change divided by 0)."""
    from rmexplain.effects.analysis import word_count, word_counts

    assert word_count("Boil the water, then add the eggs.") == 7  # English: whitespace tokens, as before
    assert word_count("先烧水，然后放鸡蛋。") == 8  # eight Han characters; the punctuation is no word
    assert word_count("こんにちは 世界") == 7
    assert word_count("用 AI模型 check it") == 6  # 用 + AI + 模 + 型 + check + it
    assert word_count("你好 — ok") == 4  # a token without Chinese or Japanese is a word, even a dash
    assert word_count("Привет, мир!") == 2 and word_count("مرحبا بالعالم") == 2
    assert word_count("สวัสดีครับ") == 1  # Thai is not split (no dictionary here): one word between spaces
    assert word_counts(["先烧水。", "水"]).tolist() == [3.0, 1.0]

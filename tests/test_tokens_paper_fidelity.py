"""The token paper as it printed it: decoded texts with transformers 4.43's clean-up, the date its chat
templates saw, its MDS and GCG (the README's Elo numbers are pinned in test_tokens_workflow.py)."""

from __future__ import annotations

from importlib.metadata import version

import numpy as np
import polars as pl
import pytest
import torch

from rmexplain import schemas as S
from rmexplain.score.tiny import LLAMA_CHAT_TEMPLATE, build_llama_rm, build_llama_tokenizer
from rmexplain.tokens import gcg, paper, stages
from rmexplain.tokens.vocab import clean_up_tokenization, select_vocabulary

PROMPT = "What, in one word, is the greatest thing ever?"


def _llama3_style_bpe(clean_up: bool):
    """A byte-level BPE tokenizer as Llama 3's (``Ġ`` marks a leading space), built offline; its config's
    ``clean_up_tokenization_spaces`` is ``clean_up`` (Llama 3's says true, Gemma 2's false)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    merges = [("Ġ", "."), ("Ġ", ","), ("n", "'"), ("n'", "t"), ("Ġ", "n't"), ("l", "o"), ("lo", "v")]
    merges += [("lov", "e"), ("Ġ", "love"), ("'", "s"), ("Ġ", "'s"), ("Ġ", "?")]
    vocab = {c: i for i, c in enumerate(alphabet)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    core = Tokenizer(models.BPE(vocab, merges))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, clean_up_tokenization_spaces=clean_up)
    assert type(tokenizer.backend_tokenizer.model).__name__ == "BPE"
    return tokenizer


def _texts(table: pl.DataFrame) -> dict[str, str]:
    return dict(table.select("piece", "text").iter_rows())


def test_clean_up_is_transformers_443s_list_of_replacements():
    text = "a . b ? c ! d , e ' f n't g 'm h 's i 've j 're k"
    assert clean_up_tokenization(text) == "a. b? c! d, e'fn't g'm h's i've j're k"
    assert clean_up_tokenization("  .") == " ."  # one pass per rule, in order


@pytest.mark.skipif(
    int(version("transformers").split(".")[0]) < 5,
    reason="transformers 4.x cleans up BPE decodes itself: the 5.x difference pinned here does not exist",
)
def test_paper_decoding_of_a_llama3_style_bpe_vocabulary():
    tokenizer = _llama3_style_bpe(clean_up=True)
    # transformers 5 itself no longer cleans up BPE text: " ." stays " ." even when asked.
    dot = tokenizer.convert_tokens_to_ids("Ġ.")
    assert tokenizer.decode([dot]) == " ."
    paper_way = _texts(select_vocabulary(tokenizer, "all"))  # default: as the paper decoded
    raw = _texts(select_vocabulary(tokenizer, "all", clean_up="none"))
    assert (paper_way["Ġ."], paper_way["Ġ,"], paper_way["Ġn't"], paper_way["Ġ's"]) == (".", ",", "n't", "'s")
    assert (raw["Ġ."], raw["Ġn't"]) == (" .", " n't")
    assert paper_way["Ġlove"] == raw["Ġlove"] == " love"  # words keep their space
    gemma_like = _texts(select_vocabulary(_llama3_style_bpe(clean_up=False), "all"))
    assert gemma_like["Ġ."] == " ."  # a tokenizer configured without the clean-up keeps it

    def shared(table):
        scans = table.select("token_id", "piece", "text").with_columns(
            pl.lit("a").alias("rm"), pl.lit("p").alias("prompt_id"), pl.lit(1.0).alias("score")
        )
        return set(paper.shared_scores(scans)["key"].to_list())

    # As in the paper: " ." and "." now decode alike, so the shared vocabulary drops "." as a duplicate.
    assert "." not in shared(select_vocabulary(tokenizer, "all"))
    assert {".", " ."} <= shared(select_vocabulary(tokenizer, "all", clean_up="none"))


def test_the_official_route_scores_the_paper_decoded_text():
    from rmexplain.score.specs import parse_spec
    from rmexplain.tokens.scan import official_token_ids

    tokenizer = _llama3_style_bpe(clean_up=True)
    tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }}:{{ m['content'] }};{% endfor %}"
    spec = parse_spec("t", {"backend": "transformers", "model": "unused", "device": "cpu"})
    dot = tokenizer.convert_tokens_to_ids("Ġ.")
    got = official_token_ids(tokenizer, spec, "q", [dot])
    assert got == official_token_ids(tokenizer, spec, "q", [dot], ["."])
    assert got != official_token_ids(tokenizer, spec, "q", [dot], [" ."])


def test_the_demo_vocabulary_is_the_same_either_way():
    """The demo scans English words of the bundled MiniLM vocabulary: no clean-up rule touches a word."""
    from transformers import AutoTokenizer

    from rmexplain.embeddings import resolve_model_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path("bundled-minilm"))
    paper_way = select_vocabulary(tokenizer, "english", min_zipf=4.0)
    assert paper_way.height > 1000
    assert paper_way.equals(select_vocabulary(tokenizer, "english", min_zipf=4.0, clean_up="none"))


# ---- the date in chat templates -------------------------------------------------------------------------

DATED_TEMPLATE = (
    "{{ bos_token }}{%- if strftime_now is defined %}{%- set date_string = strftime_now('%d %b %Y') %}"
    "{%- else %}{%- set date_string = '26 Jul 2024' %}{%- endif %}<|system|>\nToday Date: {{ date_string }}"
    "<|end|>\n" + LLAMA_CHAT_TEMPLATE.removeprefix("{{ bos_token }}")
)


@pytest.fixture(scope="module")
def dated_rm(tmp_path_factory):
    torch.set_num_threads(1)
    tokenizer = build_llama_tokenizer()
    tokenizer.chat_template = DATED_TEMPLATE
    root = tmp_path_factory.mktemp("dated")
    path = build_llama_rm(root / "rm", layers=1, seed=4, tokenizer=tokenizer)
    vocab_path = str(root / "vocab.parquet")
    S.write_table(select_vocabulary(tokenizer, "all").head(24), vocab_path, S.TOKEN_VOCABULARY, "vocabulary")
    return path, vocab_path


@pytest.mark.parametrize("mode", ["exact", "official"])
def test_a_pinned_template_date_is_what_the_scan_sees(dated_rm, tmp_path, caplog, mode):
    path, vocab_path = dated_rm
    spec = {"backend": "transformers", "model": str(path), "device": "cpu", "dtype": "float32"}
    literal = {**spec, "chat_template": DATED_TEMPLATE.replace("strftime_now is defined", "false")}
    scan = {"batch_size": 8, "prefix_cache": "never"}

    def run(rm_spec, settings, name):
        out = str(tmp_path / f"{name}.parquet")
        stages.run_scan("t", rm_spec, {}, "g", PROMPT, vocab_path, settings, out, threads=1, mode=mode)
        return S.read_table(out, S.TOKEN_SCORES, name)["score"].to_list()

    caplog.set_level("INFO")
    pinned = run(spec, {**scan, "template_date": "2024-07-26"}, "pinned")
    rendered = [r.getMessage() for r in caplog.records if "rendered prompt" in r.getMessage()]
    assert len(rendered) == 1 and "Today Date: 26 Jul 2024" in rendered[0], rendered
    assert pinned == run(literal, scan, "literal")  # the template's own "26 Jul 2024", no clock involved
    assert pinned != run(spec, {**scan, "template_date": "2025-01-02"}, "other")  # the date is scored


# ---- paper_* files: MDS, frequency list, GCG ------------------------------------------------------------

# 1 − τ of five RMs and the map scikit-learn 1.6.1 gave for MDS(n_components=2, dissimilarity="precomputed",
# random_state=42) of it, as the paper's analysis_support.py calls it (computed once with that release).
TAU5 = [
    [1.0, 0.420986287783, 0.245203512399, 0.527286499973, 0.511570016902],
    [0.420986287783, 1.0, -0.042869814008, 0.478540580834, 0.388752906582],
    [0.245203512399, -0.042869814008, 1.0, 0.223340988509, 0.022661293546],
    [0.527286499973, 0.478540580834, 0.223340988509, 1.0, 0.1799653413],
    [0.511570016902, 0.388752906582, 0.022661293546, 0.1799653413, 1.0],
]
SKLEARN_161_MAP = [
    [-0.0042245039377375, -0.05007321790664302],
    [0.4194561549973346, 0.21069378627949892],
    [-0.6471943885269009, -0.16321586533446455],
    [-0.06919853387925867, 0.38632728491818247],
    [0.3011612713465624, -0.38373198795657376],
]


def test_paper_mds_is_the_papers_scikit_learn_call():
    got = paper.paper_mds_coordinates(1.0 - np.array(TAU5))
    assert got == pytest.approx(np.array(SKLEARN_161_MAP), abs=1e-9)
    rms = [f"rm{i}" for i in range(5)]
    tau = pl.DataFrame(
        [
            {"prompt_id": "g", "rm_a": a, "rm_b": b, "tau": TAU5[i][j], "n_shared": 9}
            for i, a in enumerate(rms)
            for j, b in enumerate(rms)
        ]
    )
    table = paper.mds_table(tau, ["g"])
    assert table["rm"].to_list() == rms
    assert table.select("x", "y").to_numpy() == pytest.approx(np.array(SKLEARN_161_MAP), abs=1e-9)


def test_paper_gcg_start_characters_and_empty_tokens_as_the_fork():
    # thompsonj/nanoGCG utils.INIT_CHARS
    fork = [".", ",", "!", "?", ";", ":", "(", ")", "[", "]", "{", "}", "@", "#", "$", "%", "&", "*"]
    assert list(gcg.INIT_CHARS) == [*fork, "w", "x", "y", "z"]
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    # SentencePiece style: the lone "▁" (Gemma has one) decodes to "", which "".isascii() lets through.
    core = Tokenizer(models.WordLevel({"<unk>": 0, "▁": 1, "▁a": 2, "b": 3}, unk_token="<unk>"))
    core.pre_tokenizer, core.decoder = pre_tokenizers.Metaspace(), decoders.Metaspace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>")
    assert tokenizer.decode([1]) == ""
    assert gcg.allowed_tokens(tokenizer, 4, "ascii").tolist() == [False, False, True, True]
    assert gcg.allowed_tokens(tokenizer, 4, "ascii", allow_empty=True).tolist() == [False, True, True, True]


def test_gcg_summary_takes_the_forks_best_step():
    """Target +30: reward 35 (loss 25) is further from it than 31 (loss 1); the start (step 0, loss 0) is not
    a step of the search, as in the fork's result."""
    history = pl.DataFrame(
        {
            "step": [0, 1, 2, 3],
            "score": [30.0, 35.0, 31.0, 31.0],
            "best_score": [30.0, 35.0, 31.0, 31.0],
            "loss": [0.0, 25.0, 1.0, 1.0],
            "objective": ["optimal"] * 4,
        }
    )
    assert stages.gcg_best_row(history)["step"] == 2
    project = history.drop("loss")
    assert stages.gcg_best_row(project)["step"] == 1  # the project's GCG: highest reward


def test_paper_gcg_best_is_the_lowest_loss_step_from_step_one(tmp_path):
    torch.set_num_threads(1)
    path = build_llama_rm(tmp_path / "rm", layers=1, seed=3)
    spec = {"backend": "transformers", "model": str(path), "device": "cpu", "dtype": "float32"}
    out = str(tmp_path / "gcg.parquet")
    settings = {"steps": 4, "paper": {"search_width": 8, "init": "x x x", "target": 1.0}}
    stages.run_gcg_variant(
        "paper", name="t", spec=spec, prompt_id="g", prompt=PROMPT, objective="optimal", gcg=settings,
        scan={"batch_size": 8, "prefix_cache": "never"}, output=out, threads=1,
    )  # fmt: skip
    history = S.read_table(out, S.TOKEN_GCG, "gcg")
    assert history["step"].to_list() == [0, 1, 2, 3, 4]
    assert history["loss"].to_list() == pytest.approx([(s - 1.0) ** 2 for s in history["score"]], abs=1e-6)
    scores, losses = history["score"].to_list(), history["loss"].to_list()
    expected = [scores[0]] + [scores[1 + int(np.argmin(losses[1 : k + 1]))] for k in range(1, 5)]
    assert history["best_score"].to_list() == pytest.approx(expected)

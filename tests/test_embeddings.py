"""Long texts in the semantic metrics: chunk-and-pool instead of the encoder's silent cut at 256 pieces."""

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import polars as pl
import pytest

from rmexplain.data.readers import read_embedded
from rmexplain.embeddings import (
    BUNDLED_MINILM,
    LONG_TEXTS,
    TextEmbeddings,
    chunk_spans,
    count_overlength,
    declared_window,
    embed,
    embed_chunked,
    embed_or_look_up,
    embedding_table,
    load_sentence_model,
    read_text_embedding_tables,
    read_text_embeddings,
)
from rmexplain.explanations.metrics import semantic_distances
from rmexplain.explanations.stages import embed_dataset_texts, encode_table, with_embeddings
from rmexplain.schemas import DISTANCES, TEXT_EMBEDDINGS, ContractError, write_table

PARAGRAPHS = [
    "Planning a vegetable garden starts with the site. Most vegetables need at least six hours of direct "
    "sun a day, so watch where shadows fall in the morning and the afternoon before you dig anything. Good "
    "drainage matters as much as light: roots sitting in water rot quickly, and heavy clay stays cold long "
    "into spring.",
    "Next, test the soil. A simple kit from a garden centre tells you the pH and the main nutrients. Most "
    "crops like a pH between six and seven. If the soil is too acid, add garden lime in autumn; if it is "
    "poor, dig in well-rotted compost or manure a few weeks before planting so it can settle.",
    "Choose crops you actually like to eat, and start small. A bed of three metres by one metre is enough "
    "for lettuce, radishes, a row of beans and a few tomato plants. Beginners often plant far too much at "
    "once and then struggle to keep up with weeding and watering through the summer.",
    "Raised beds make the work easier. They warm up sooner in spring, drain well and keep paths separate "
    "from growing areas, so you never compact the soil by walking on it. Fill them with a mix of topsoil "
    "and compost, and top them up every year as the material breaks down.",
    "Sowing times depend on your climate. Hardy crops such as peas, spinach and onions can go in as soon as "
    "the ground can be worked, while tender plants such as tomatoes, peppers and squash must wait until the "
    "danger of frost has passed. Seed packets list the best window for each variety.",
    "Water deeply but not too often. A good soak once or twice a week encourages roots to grow down, where "
    "the soil stays moist, instead of staying near the surface. Water in the morning at the base of the "
    "plants so the leaves dry quickly, which keeps fungal diseases away.",
    "Feed the plants as they grow. Leafy crops want nitrogen, fruiting crops such as tomatoes want potassium "
    "once the first flowers open, and root crops do best in soil that was manured the year before rather "
    "than freshly. A liquid feed every two weeks is plenty for most beds.",
    "Rotate crops from year to year. Growing the same family in the same place lets soil pests and diseases "
    "build up, so move potatoes, brassicas, legumes and onions around the plot on a three or four year "
    "cycle. Legumes also leave nitrogen behind for whatever follows them.",
    "Watch for pests early. Check the undersides of leaves for aphids, pick off caterpillars by hand, and "
    "net cabbages against butterflies and pigeons. Encouraging birds, frogs and ladybirds into the garden "
    "does more for pest control than most sprays, and costs nothing.",
    "Mulch saves a great deal of effort. A layer of straw, shredded leaves or grass clippings a few "
    "centimetres thick keeps moisture in, smothers weeds and slowly feeds the soil. Keep mulch a little "
    "away from stems so that slugs and rot do not get a foothold.",
    "Harvest often and young. Beans, courgettes and salad leaves produce more when they are picked "
    "regularly, and most vegetables taste best before they grow large and woody. Pick in the cool of the "
    "morning and eat or store the crop the same day.",
]
LAST = (
    "Finally, keep a notebook. Write down what you planted, where and when, how much it yielded and which "
    "pests turned up. After two or three seasons these notes become the most useful gardening book you own, "
    "because they describe your own plot, your own weather and your own mistakes."
)
CHANGED_LAST = (
    "Finally, think about the chickens. Hens will eat slugs and snails, turn over the beds in winter and "
    "give you eggs every morning, but they need a secure coop against foxes, fresh water every day and a "
    "vet who treats poultry. Check local rules before buying a flock."
)
ORIGINAL = "\n\n".join([*PARAGRAPHS, LAST])
PERTURBED = "\n\n".join([*PARAGRAPHS, CHANGED_LAST])


@pytest.fixture(scope="module")
def model():
    return load_sentence_model()


def old_embed(texts, model, batch_size=64):
    """``embed`` as it was before long texts were chunked."""
    unique = list(dict.fromkeys(texts))
    vectors = model.encode(
        unique,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    index = {text: i for i, text in enumerate(unique)}
    return vectors[[index[t] for t in texts]].astype(np.float32)


def test_fixture_is_a_long_response(model):
    assert 580 <= len(ORIGINAL.split()) <= 650
    assert len(model.tokenizer(ORIGINAL)["input_ids"]) > 2 * model.max_seq_length
    assert count_overlength([ORIGINAL, PERTURBED, LAST], model) == [0, 1]


def test_last_paragraph_change_is_seen(model, caplog):
    with caplog.at_level(logging.INFO, logger="rmexplain.embeddings"):
        chunked = embed([ORIGINAL, PERTURBED], model)
    assert "chunked 2 of 2 distinct texts longer than 256 word pieces into 6 chunks" in caplog.messages
    distance = semantic_distances(chunked[:1], chunked[1:])[0]
    assert distance > 0.01
    truncated = embed([ORIGINAL, PERTURBED], model, long_texts="truncate")
    assert semantic_distances(truncated[:1], truncated[1:])[0] < 1e-6
    old = old_embed([ORIGINAL, PERTURBED], model)
    assert np.array_equal(truncated, old)
    assert np.allclose(np.linalg.norm(chunked, axis=1), 1.0, atol=1e-6)


def test_chunks_fit_and_end_at_sentences(model):
    limit = model.max_seq_length
    spans = chunk_spans(ORIGINAL, model.tokenizer, limit - 2)
    assert len(spans) == 3
    all_pieces = model.tokenizer(ORIGINAL, add_special_tokens=False)["input_ids"]
    assert sum(n for _, _, n in spans) == len(all_pieces)
    for start, end, pieces in spans:
        chunk = ORIGINAL[start:end]
        assert len(model.tokenizer(chunk)["input_ids"]) == pieces + 2 <= limit
        assert chunk.endswith(".") and chunk[0].isupper()
    assert " ".join(ORIGINAL[s:e] for s, e, _ in spans).split() == ORIGINAL.split()


def test_chunks_without_sentence_ends_cut_between_words(model):
    text = " ".join(f"word{i} tomato" for i in range(200))  # one sentence of ~800 pieces
    spans = chunk_spans(text, model.tokenizer, 100)
    assert len(spans) > 1 and all(n <= 100 for _, _, n in spans)
    assert " ".join(text[s:e] for s, e, _ in spans) == text
    blob = "x" * 3000  # one word longer than the budget: cut between word pieces
    pieces = chunk_spans(blob, model.tokenizer, 100)
    assert all(n <= 100 for _, _, n in pieces) and "".join(blob[s:e] for s, e, _ in pieces) == blob


def test_a_chunk_takes_whole_sentences_before_words_and_whole_words_before_pieces(model):
    """A short first sentence before one longer than the budget is a chunk of its own, even of one word
    piece; so is a one-piece word before a word longer than the budget."""
    sentence = " ".join(f"word{i} tomato" for i in range(200))  # no sentence end, ~800 pieces
    assert chunk_spans(f"Sure. {sentence}", model.tokenizer, 100)[0] == (0, 5, 2)  # "sure", "."
    assert chunk_spans(f"! {sentence}", model.tokenizer, 100)[0] == (0, 1, 1)
    long_word = "qzxv" * 20  # 80 word pieces (a word over 100 characters would be one unknown piece)
    assert chunk_spans(f"a {long_word}", model.tokenizer, 10)[:2] == [(0, 1, 1), (2, 12, 10)]
    for text in (f"Sure. {sentence}", f"! {sentence}"):
        spans = chunk_spans(text, model.tokenizer, 100)
        assert all(0 < n <= 100 for _, _, n in spans) and " ".join(text[s:e] for s, e, _ in spans) == text


def test_pooling_is_the_piece_weighted_mean(model):
    pooled, n_chunks = embed_chunked([ORIGINAL], model)
    spans = chunk_spans(ORIGINAL, model.tokenizer, model.max_seq_length - 2)
    assert n_chunks == len(spans)
    parts = old_embed([ORIGINAL[s:e] for s, e, _ in spans], model).astype(np.float64)
    expected = np.average(parts, axis=0, weights=[n for _, _, n in spans])
    np.testing.assert_allclose(pooled[0], expected / np.linalg.norm(expected), atol=1e-6)


def test_short_texts_are_byte_identical_to_before(model, caplog):
    short = ["How do I boil an egg?", "Put it in boiling water for nine minutes.", "Eggs are eggs.", LAST]
    with caplog.at_level(logging.INFO, logger="rmexplain.embeddings"):
        assert np.array_equal(embed(short, model), old_embed(short, model))
    assert "chunked" not in caplog.text
    mixed = [*short, ORIGINAL, short[0]]
    new, old = embed(mixed, model), old_embed(mixed, model)
    keep = [i for i, t in enumerate(mixed) if t != ORIGINAL]
    assert np.array_equal(new[keep], old[keep])
    assert not np.array_equal(new[4], old[4])
    with pytest.raises(ValueError, match="long_texts must be one of"):
        embed(short, model, long_texts="cut")


def test_bundled_texts_fit_so_the_demo_is_unchanged(model):
    texts = [
        text
        for part in ("helpful", "harmless")
        for split in ("train", "explain")
        for pair in read_embedded(part, split)
        for text in (pair.prompt, pair.chosen, pair.rejected)
    ]
    assert count_overlength(texts, model) == []
    sample = texts[::7]
    assert np.array_equal(embed(sample, model), old_embed(sample, model))


SHORT = ["How do I boil an egg?", "Put it in boiling water for nine minutes.", "Eggs are eggs.", LAST]


def test_embedding_table_holds_each_text_once_in_sorted_order(model, tmp_path):
    texts = [SHORT[2], ORIGINAL, SHORT[0], SHORT[2], SHORT[1]]
    table = embedding_table(texts, model)
    assert table["text"].to_list() == sorted(set(texts))
    # One encoder pass over exactly those texts (the table depends on the set, not the order given) ...
    assert np.array_equal(
        np.array(table["embedding"].to_list(), dtype=np.float32),
        embed(sorted(set(texts)), model, long_texts="truncate"),
    )
    assert embedding_table(texts[::-1], model).equals(table)
    # ... and the chunk-pooled embedding only for the text over the window.
    assert table.filter(table["chunked_embedding"].is_not_null())["text"].to_list() == [ORIGINAL]
    write_table(table, tmp_path / "e.parquet", TEXT_EMBEDDINGS, "text_embeddings")
    known = read_text_embeddings(str(tmp_path / "e.parquet"))
    chunked = embed(sorted(set(texts)), model)
    row = sorted(set(texts)).index(ORIGINAL)
    assert np.array_equal(known.lookup([ORIGINAL], "chunk")[0], chunked[row])
    assert np.array_equal(known.lookup([ORIGINAL], "truncate")[0], table["embedding"][row].to_numpy())


def test_lookup_matches_embedding_and_names_a_missing_text(model):
    table = embedding_table([*SHORT, ORIGINAL], model)
    known = TextEmbeddings(table, "results/embeddings/demo.parquet")
    texts = [SHORT[1], ORIGINAL, SHORT[1], SHORT[3]]
    np.testing.assert_allclose(known.lookup(texts), embed(texts, model), atol=1e-6)
    assert known.missing([SHORT[0], "Boil it.", "Boil it."]) == ["Boil it."]
    with pytest.raises(KeyError, match=r"1 texts are not in the embedding table results/embeddings/demo"):
        known.lookup([SHORT[0], "Boil it."])


def test_embed_or_look_up_encodes_only_what_the_table_lacks(model):
    known = TextEmbeddings(embedding_table(SHORT[:2], model), "table")
    texts = [SHORT[2], SHORT[0], SHORT[2], SHORT[1], SHORT[3]]
    mixed = embed_or_look_up(texts, model, known, long_texts="truncate")
    # Looked-up rows are the table's own; encoded rows are one call over the missing texts.
    assert np.array_equal(mixed[[1, 3]], known.lookup([SHORT[0], SHORT[1]], "truncate"))
    encoded = embed([SHORT[2], SHORT[2], SHORT[3]], model, long_texts="truncate")
    assert np.array_equal(mixed[[0, 2, 4]], encoded)
    np.testing.assert_allclose(mixed, embed(texts, model, long_texts="truncate"), atol=1e-6)
    assert np.array_equal(embed_or_look_up(texts, model, None), embed(texts, model))


def test_a_table_that_holds_every_text_needs_no_encoder(model):
    """With every text held, the rows are the table's and the model is never touched (None will do)."""
    known = TextEmbeddings(embedding_table([*SHORT, ORIGINAL], model), "table")
    texts = [SHORT[2], ORIGINAL, SHORT[2]]
    for long_texts in LONG_TEXTS:
        looked_up = embed_or_look_up(texts, None, known, long_texts=long_texts)
        assert np.array_equal(looked_up, embed_or_look_up(texts, model, known, long_texts=long_texts))
        assert np.array_equal(looked_up, known.lookup(texts, long_texts))
    with pytest.raises(AttributeError):  # a text it lacks needs the encoder
        embed_or_look_up([*texts, "Boil it."], None, known)


def test_the_table_knows_which_texts_are_over_the_window(model):
    """A table chunks exactly the texts the encoder would cut, so the demo RMs read their cut from it."""
    texts = [*SHORT, ORIGINAL, PERTURBED]
    known = TextEmbeddings(embedding_table(texts, model), "table")
    measured = {texts[i] for i in count_overlength(texts, model)}
    assert known.over_window([*texts, "Boil it."]) == measured == {ORIGINAL, PERTURBED}


def test_the_bundled_encoder_declares_the_window_it_loads_with(model, tmp_path):
    assert declared_window(BUNDLED_MINILM) == model.max_seq_length == 256
    assert declared_window(str(tmp_path)) is None  # no sentence_bert_config.json: load the model to know


def test_several_tables_read_as_one_the_first_holding_a_text_wins(model, tmp_path):
    first, second = tmp_path / "dataset.parquet", tmp_path / "edits.parquet"
    write_table(embedding_table(SHORT[:2], model), first, TEXT_EMBEDDINGS, "text_embeddings")
    other = embedding_table([SHORT[1], SHORT[2]], model).with_columns(
        embedding=pl.when(pl.col("text") == SHORT[1])
        .then(pl.lit([0.0] * 384, dtype=pl.List(pl.Float32)))
        .otherwise("embedding")
    )
    write_table(other, second, TEXT_EMBEDDINGS, "text_embeddings")
    merged = read_text_embedding_tables([str(first), str(second)])
    assert merged.missing([*SHORT[:3], SHORT[3]]) == [SHORT[3]]
    assert np.array_equal(merged.lookup([SHORT[1]]), read_text_embeddings(str(first)).lookup([SHORT[1]]))
    assert np.array_equal(merged.lookup([SHORT[2]]), read_text_embeddings(str(second)).lookup([SHORT[2]]))
    assert merged.source == f"{first}, {second}"


def test_embed_or_look_up_chunks_a_long_text_the_table_holds(model):
    """An over-length text found in the table gets its chunk-pooled vector under ``chunk``, as ``embed``
    computes it, and the encoder's cut under ``truncate``."""
    known = TextEmbeddings(embedding_table([ORIGINAL, SHORT[0]], model), "table")
    texts = [ORIGINAL, SHORT[1], ORIGINAL]
    chunked = embed_or_look_up(texts, model, known, long_texts="chunk")
    np.testing.assert_allclose(chunked, embed(texts, model), atol=1e-6)
    truncated = embed_or_look_up(texts, model, known, long_texts="truncate")
    np.testing.assert_allclose(truncated, embed(texts, model, long_texts="truncate"), atol=1e-6)
    assert semantic_distances(chunked[:1], truncated[:1])[0] > 0.01  # the two differ for this text


def test_a_chunk_with_its_special_tokens_fills_the_window_exactly(model):
    """The chunk budget is ``max_seq_length`` less the two special tokens of one sequence: 254 word pieces
    are one chunk (the encoder reads them uncut), 255 are two."""
    for pieces, chunks in ((254, 1), (255, 2)):
        text = " ".join(["garden"] * pieces)  # one word piece each
        assert len(model.tokenizer(text)["input_ids"]) == pieces + 2
        assert embed_chunked([text], model)[1] == chunks
    window, over = " ".join(["garden"] * 254), " ".join(["garden"] * 255)
    assert count_overlength([window, over], model) == [1]
    pooled = embed_chunked([window], model)[0]
    assert pooled.dtype == np.float32
    np.testing.assert_allclose(pooled, embed([window], model), atol=1e-6)


def test_an_empty_text_has_no_chunk_and_a_zero_vector(model):
    pooled, n_chunks = embed_chunked(["", "garden"], model)
    assert n_chunks == 1 and not pooled[0].any() and np.isclose(np.linalg.norm(pooled[1]), 1.0)


def test_the_configured_batch_size_reaches_the_chunk_encoder(model):
    """The chunks of an over-length text are encoded ``batch_size`` at a time too (the batch a chunk is
    padded in can change its vector's last bits)."""
    table = embedding_table([ORIGINAL, SHORT[0]], model, batch_size=1)
    [chunked] = table.filter(pl.col("chunked_embedding").is_not_null())["chunked_embedding"].to_list()
    assert np.array_equal(np.array(chunked, dtype=np.float32), embed_chunked([ORIGINAL], model, 1)[0][0])


@contextmanager
def logging_level(level: int, name: str) -> Iterator[None]:
    """``name``'s logger at ``level`` for the block, restored after."""
    logger = logging.getLogger(name)
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def test_encoding_draws_no_progress_bar(model, capfd):
    """No progress bar in the jobs' logs, even where sentence-transformers logs at INFO."""
    with logging_level(logging.INFO, "sentence_transformers"):
        embed([*SHORT, "Boil it."], model)
    assert "Batches" not in capfd.readouterr().err


def test_embedding_tables_have_the_contracts_types_even_when_empty(model):
    contract = pl.Schema({name: column.dtype for name, column in TEXT_EMBEDDINGS.items()})
    assert embedding_table(SHORT, model).schema == contract  # no text over the window: no chunked vector
    assert embedding_table([], model).schema == contract


def test_the_default_batch_is_embeds_so_table_and_encoder_agree_to_the_bit(model):
    """A text's vector can differ in its last bits with the batch it is padded in: with more than one
    batch of texts of many lengths, the table, ``embed_or_look_up`` and ``embed`` (default batch sizes)
    give the same bytes."""
    words = " ".join(PARAGRAPHS).split()
    texts = sorted({" ".join(words[i : i + 3 + (7 * i) % 60]) for i in range(70)})
    assert len(texts) > 64
    expected = embed(texts, model, long_texts="truncate")
    table = embedding_table(texts, model)
    assert np.array_equal(np.array(table["embedding"].to_list(), dtype=np.float32), expected)
    assert np.array_equal(embed_or_look_up(texts, model, None, long_texts="truncate"), expected)


def test_texts_embed_or_look_up_encodes_follow_long_texts(model):
    """A long text the table lacks, or every text when there is no table, is chunk-pooled or cut as
    ``long_texts`` says, as ``embed`` does it; the rows are float32 either way."""
    known = TextEmbeddings(embedding_table(SHORT[:1], model), "table")
    texts = [ORIGINAL, SHORT[0]]
    for table in (None, known):
        for long_texts in LONG_TEXTS:
            vectors = embed_or_look_up(texts, model, table, long_texts=long_texts)
            assert vectors.dtype == np.float32
            np.testing.assert_allclose(vectors, embed(texts, model, long_texts=long_texts), atol=1e-6)


def test_a_table_keeps_and_returns_float32(model):
    """The vectors stay float32 as stored (float64 would double a paper-sized table in memory)."""
    known = TextEmbeddings(embedding_table(SHORT, model), "table")
    assert known.truncated.dtype == np.float32
    assert known.lookup(SHORT).dtype == np.float32


def test_a_text_embedding_table_is_named_in_its_errors(model, tmp_path):
    """A missing text names the table's path and the text's first 80 characters; a table that breaks the
    contract names the path, whether it is read whole or for some texts."""
    path = tmp_path / "e.parquet"
    write_table(embedding_table(SHORT, model), path, TEXT_EMBEDDINGS, "text_embeddings")
    for texts in (None, [SHORT[0], ORIGINAL]):
        with pytest.raises(KeyError) as missing:
            read_text_embeddings(str(path), texts).lookup([SHORT[0], ORIGINAL])
        assert missing.value.args[0] == (
            f"1 texts are not in the embedding table {path} (first: {ORIGINAL[:80]!r}): rerun embed_texts"
        )
    broken = tmp_path / "broken.parquet"
    pl.read_parquet(path).drop("chunked_embedding").write_parquet(broken)
    for texts in (None, [SHORT[0]]):
        with pytest.raises(ContractError, match=re.escape(f"text_embeddings ({broken}): missing column")):
            read_text_embeddings(str(broken), texts)


class Messages(logging.Handler):
    """Every message logged to the logger it is attached to."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_long_texts_measured_for_chunking_log_no_sequence_length_warning():
    """transformers warns (once per tokenizer) that a sequence over the model's limit "will result in
    indexing errors": not when rmexplain tokenizes a long text to measure or chunk it, but still for any
    other over-length tokenization."""
    fresh = load_sentence_model.__wrapped__()  # a tokenizer that has not warned yet
    transformers_log = logging.getLogger("transformers")
    caught = Messages()
    transformers_log.addHandler(caught)
    try:
        embed([ORIGINAL, SHORT[0]], fresh)
        embedding_table([PERTURBED, SHORT[1]], fresh)
        assert not [m for m in caught.messages if "sequence length is longer" in m]
        fresh.tokenizer(ORIGINAL)
        [warning] = [m for m in caught.messages if "sequence length is longer" in m]
        assert "(721 > 256)" in warning
    finally:
        transformers_log.removeHandler(caught)


def test_distances_hold_no_vectors_and_the_evaluation_looks_them_up(model, tmp_path):
    """A distances table keeps the perturbation ids; the evaluation gets each perturbed text's embedding
    from the text embedding table, as the distances used it (chunk-pooled or cut, per ``long_texts``)."""
    assert all(column.dtype != pl.List(pl.Float32) for column in DISTANCES.values())
    texts = {"p1": PERTURBED, "p2": SHORT[1], "p3": ORIGINAL}
    perturbations = pl.DataFrame({"perturbation_id": list(texts), "text": list(texts.values())})
    write_table(embedding_table([*texts.values(), SHORT[0]], model), tmp_path / "e.parquet", TEXT_EMBEDDINGS,
                "text_embeddings")  # fmt: skip
    distances = pl.DataFrame(
        {"perturbation_id": ["p3", "p1"], "syntactic_distance": [0.5, 0.1], "semantic_distance": [0.2, 0.0]}
    )
    for long_texts in LONG_TEXTS:
        attached = with_embeddings(distances, perturbations, str(tmp_path / "e.parquet"), long_texts)
        assert attached.drop("embedding").equals(distances)
        vectors = np.array(attached["embedding"].to_list(), dtype=np.float32)
        np.testing.assert_allclose(
            vectors, embed([ORIGINAL, PERTURBED], model, long_texts=long_texts), atol=1e-6
        )
    unknown = perturbations.with_columns(text=pl.lit("a text embed_texts never saw"))
    with pytest.raises(KeyError, match="rerun embed_texts"):
        with_embeddings(distances, unknown, str(tmp_path / "e.parquet"), "chunk")


def test_the_configured_encoder_reads_the_model_the_device_and_the_batch_size():
    from rmexplain.embeddings import BUNDLED_MINILM, configured_encoder, resolve_model_path

    bundled = load_sentence_model(BUNDLED_MINILM, "cpu")
    assert configured_encoder({}) == (bundled, 64)  # the schema's defaults: the bundled model, cpu, 64
    assert configured_encoder({"batch_size": 8, "device": "cpu"}) == (bundled, 8)
    by_path = resolve_model_path(BUNDLED_MINILM)
    model, _ = configured_encoder({"embedding_model": by_path})
    assert model is load_sentence_model(by_path, "cpu") and model is not bundled
    assert str(model.device) == "cpu"


def test_the_dataset_table_holds_its_prompts_in_a_pass_of_their_own(model):
    """The perturbed texts and their originals are encoded as before, in one pass; the prompts in a second,
    so the first pass's rows do not change with them."""
    comparisons = pl.DataFrame(
        {
            "comparison_id": ["a", "b"],
            "prompt": [SHORT[0], "How long do eggs keep?"],
            "chosen": [SHORT[1], "About three weeks in the fridge."],
            "rejected": [SHORT[2], ORIGINAL],
        }
    )
    perturbations = pl.DataFrame(
        {"comparison_id": ["a"], "target": ["chosen"], "text": ["Boil it for nine."]}
    )
    settings = {"embedding_model": BUNDLED_MINILM}
    table = embed_dataset_texts(comparisons, [perturbations], settings, logging.getLogger("test"))
    assert table["text"].to_list() == sorted([*comparisons["prompt"], SHORT[1], "Boil it for nine."])
    perturbed = encode_table(["Boil it for nine.", SHORT[1]], settings)
    assert table.filter(pl.col("text").is_in(perturbed["text"].to_list())).equals(perturbed)
    prompts = encode_table(comparisons["prompt"].to_list(), settings)
    assert table.filter(pl.col("text").is_in(prompts["text"].to_list())).equals(prompts)
    alone = embed_dataset_texts(comparisons, [], settings, logging.getLogger("test"))  # discovery alone
    assert alone["text"].to_list() == sorted(
        [*comparisons["prompt"], *comparisons["chosen"], *comparisons["rejected"]]
    )
    assert alone.filter(pl.col("chunked_embedding").is_not_null())["text"].to_list() == [ORIGINAL]

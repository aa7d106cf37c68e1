"""Benchmark (not a test): the explorer at paper size — build time, file sizes, and how fast the page opens.

    python benchmarks/bench_explorer.py                         # one §4 dataset: 500 comparisons, 5 RMs
    python benchmarks/bench_explorer.py --comparisons 150 --rms 3 --words 60 --out /tmp/x   # a §3-like set
    python benchmarks/bench_explorer.py --browser               # also time views in headless Chromium

Synthetic tables in the workflow's contracts: ``--comparisons`` comparisons of one dataset with responses of
``--words`` words (hs2's run to a few hundred), 15 attributes × 2 sides × 1 two-step-like perturbation each
(one sentence rewritten), shared by ``--rms`` RMs (the paper's §4 design), and ``--random`` whole-response
rewrites per side (the RP baseline). It prints the build time, the number and total size of the data files,
the largest one, and with ``--browser`` the time to draw the comparison list and one comparison.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

import polars as pl

from rmexplain import schemas as S
from rmexplain.explorer.build import ExplorerInputs, ExplorerSettings, build_explorer

ATTRIBUTES = [f"attribute-{i:02d}" for i in range(15)]
VOCABULARY = [f"w{i}" for i in range(5000)] + ["the", "a", "of", "and", "to", "is"] * 300


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(n)).capitalize() + "."


def response(rng: random.Random, words: int) -> str:
    return " ".join(sentence(rng, 12) for _ in range(max(1, words // 12)))


def tables(root: Path, n: int, rms: int, words: int, random_rewrites: int, seed: int = 0) -> ExplorerInputs:
    rng = random.Random(seed)
    ids = [f"big-s0-{i}" for i in range(n)]
    chosen = [response(rng, words) for _ in ids]
    rejected = [response(rng, words) for _ in ids]
    comparisons = pl.DataFrame(
        {
            "comparison_id": ids,
            "dataset": ["big"] * n,
            "seed": [0] * n,
            "source_index": [str(i) for i in range(n)],
            "prompt": [sentence(rng, 20) for _ in ids],
            "chosen": chosen,
            "rejected": rejected,
        }
    )
    names = [f"rm-{k}" for k in range(rms)]
    originals, perturbations, explanations = [], [], []
    for i, c in enumerate(ids):
        rewards = {rm: (rng.gauss(1, 1), rng.gauss(0, 1)) for rm in names}
        for rm, (rc, rr) in rewards.items():
            originals.append(
                {
                    "comparison_id": c,
                    "rm": rm,
                    "reward_chosen": rc,
                    "reward_rejected": rr,
                    "plus_target": "chosen" if rc > rr else "rejected",
                    "agrees_with_human": rc > rr,
                }
            )
        for target, text in (("chosen", chosen[i]), ("rejected", rejected[i])):
            slots = [(a, 0) for a in ATTRIBUTES] + [(None, v) for v in range(random_rewrites)]
            for attribute, variant in slots:
                if attribute is None:
                    new = response(rng, words)
                else:
                    parts = text.split(". ")
                    k = rng.randrange(len(parts))
                    parts[k] = sentence(rng, 10)[:-1]
                    new = ". ".join(parts)
                pid = f"{c}-{target}-{attribute}-{variant}"
                perturbations.append(
                    {
                        "perturbation_id": pid,
                        "comparison_id": c,
                        "target": target,
                        "direction": "worse" if target == "chosen" else "better",
                        "attribute": attribute,
                        "variant": variant,
                        "text": new,
                        "method": "two_step",
                        "orienter": "shared",
                        "focus_words": ["w1", "w2"],
                        "generator": "bench",
                    }
                )
                for rm, (rc, rr) in rewards.items():
                    plus = "chosen" if rc > rr else "rejected"
                    side = "plus" if target == plus else "minus"
                    hi, lo = max(rc, rr), min(rc, rr)
                    r = rng.gauss(hi if side == "plus" else lo, 1)
                    flipped = r < lo if side == "plus" else r > hi
                    explanations.append(
                        {
                            "dataset": "big",
                            "rm": rm,
                            "method": "two_step",
                            "comparison_id": c,
                            "seed": 0,
                            "perturbation_id": pid,
                            "target": target,
                            "side": side,
                            "attribute": attribute,
                            "variant": variant,
                            "reward_plus": hi,
                            "reward_minus": lo,
                            "reward_perturbed": r,
                            "kind": "counterfactual" if flipped else "semifactual",
                            "sf_subkind": None if flipped else "between",
                            "reward_delta": hi - r if side == "plus" else r - lo,
                            "agrees_with_human": plus == "chosen",
                        }
                    )
    root.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, frame, contract in (
        ("comparisons", comparisons, S.COMPARISONS),
        ("originals", pl.DataFrame(originals), S.ORIGINAL_SCORES),
        ("perturbations", pl.DataFrame(perturbations), S.PERTURBATIONS),
    ):
        S.write_table(frame, root / f"{name}.parquet", contract, name)
        files[name] = [str(root / f"{name}.parquet")]
    explained = pl.DataFrame(explanations)
    files["explanations"] = []
    for rm in names:
        S.write_table(explained.filter(pl.col("rm") == rm), root / f"{rm}.parquet", S.EXPLANATIONS, rm)
        files["explanations"].append(str(root / f"{rm}.parquet"))
    return ExplorerInputs(**files)


def browser_times(index: Path, first_id: str) -> dict[str, float]:
    """Seconds from navigation to a drawn view, in headless Chromium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium") or "chromium"
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    ready = "return document.body.getAttribute('data-ready') === location.hash"
    out = {}
    try:
        for name, route in (
            ("comparison list", "#list/big/two_step/rm-0"),
            ("one comparison", f"#cmp/big/two_step/rm-0/{first_id}"),
        ):
            driver.get("about:blank")
            start = time.perf_counter()
            driver.get(index.as_uri() + route)
            WebDriverWait(driver, 120, poll_frequency=0.05).until(lambda d: d.execute_script(ready))
            out[name] = time.perf_counter() - start
    finally:
        driver.quit()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--comparisons", type=int, default=500)
    parser.add_argument("--rms", type=int, default=5)
    parser.add_argument("--words", type=int, default=300)
    parser.add_argument("--random", type=int, default=0, help="whole-response rewrites per side")
    parser.add_argument("--out", type=Path, default=None, help="keep the explorer here")
    parser.add_argument("--browser", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        inputs = tables(Path(tmp) / "tables", args.comparisons, args.rms, args.words, args.random)
        print(f"tables written in {time.perf_counter() - start:.1f} s")
        out = args.out or Path(tmp) / "explorer"
        start = time.perf_counter()
        sizes = build_explorer(inputs, out, ExplorerSettings())
        built = time.perf_counter() - start
        n_perturbations = pl.scan_parquet(inputs.perturbations[0]).select(pl.len()).collect().item()
        data = {k: v for k, v in sizes.items() if k != "index.html"}
        largest = max(data, key=data.get)
        print(
            f"{n_perturbations} perturbations x {args.rms} RMs: built in {built:.1f} s; index.html "
            f"{sizes['index.html'] / 1e3:.0f} kB; {len(data)} data files, {sum(data.values()) / 1e6:.1f} MB; "
            f"largest {largest} {data[largest] / 1e6:.2f} MB"
        )
        if args.browser:
            for name, seconds in browser_times(out / "index.html", "big-s0-0").items():
                print(f"{name}: drawn {seconds:.2f} s after navigation")


if __name__ == "__main__":
    main()

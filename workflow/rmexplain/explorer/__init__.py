"""The explanation explorer: a self-contained page (``results/explorer/index.html``) to read what the workflow
found — comparisons, every perturbation as a word-level edit with each RM's verdict, the flip rates behind the
analyses, the token scans. ``build.build_explorer`` writes it; ``inputs.explorer_inputs`` lists what it reads
for a design; ``edits`` holds the word-level edits. See docs/explorer.md.
"""

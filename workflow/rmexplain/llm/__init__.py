"""LLM access for perturbation and discovery: one chat interface, several backends, one persistent cache.

``base`` (requests, completions, the backend registry), ``cache`` (content-addressed diskcache store),
``client`` (``CachedChat``: cache first, then the backend; logs calls, hits, tokens and cost),
``openai_backend`` / ``vllm_backend`` / ``hf_backend`` (the backends), ``prompts`` (editable templates),
``discover`` (attribute discovery, App. A), ``targets`` (paths and config checks for the rules) and
``devserver`` (a scripted OpenAI-compatible server with fault injection, for tests and benchmarks).
"""

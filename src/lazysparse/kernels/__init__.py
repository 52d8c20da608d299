"""kernels stage of lazysparse: a normal-form plan's queries turned into kernels and run.

Two floors, importing one way: ``compile/`` (backend-neutral: a query's plan and decisions,
the loop IR, lowering to it) and ``backends/`` (what runs: the shared host, the runner
choice, ``numba/`` and ``cuda/``). See docs/architecture.md and docs/kernels.md.
"""

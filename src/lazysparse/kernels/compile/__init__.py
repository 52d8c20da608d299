"""compile stage of lazysparse: a normal-form query to backend-neutral loop IR.

Query analysis (``analysis``), co-iteration regions (``coiterate``), the kernel plan of every
decision that shapes a kernel (``plan``, ``workspace``, ``parallel``, ``params``), the loop
IR (``loop_ir``) and lowering to it (``lower*``), plus the facts that say which runner may
execute a query (``runners``). What is decided for one query is recorded once, in
``decisions.QueryDecisions``, which lowering, the backends and ``xp.explain`` read.
Nothing here imports a backend (Numba, CUDA); see docs/kernels.md and docs/architecture.md.
"""

"""compile floor of the kernels stage: a normal-form query to backend-neutral loop IR.

Three rooms, importing one way (lowering > planning > ir):

- ``planning/``: the query read once (``analysis``), co-iteration (``coiterate``,
  ``regions``), the kernel plan of every decision that shapes a kernel (``kernel_plan``,
  ``output_plan``, ``parallel``, ``params``, ``stored_fill``, ``hash_workspace``), operand
  order and structured inputs (``ordering``, ``structured_inputs``), the runner facts
  (``runners``) and the per-query record (``decisions.QueryDecisions``) that lowering, the
  backends and ``xp.explain`` read;
- ``ir/``: the loop IR (``loop_ir``) and its folding constructors (``build``);
- ``lowering/``: a kernel plan to loop-IR functions (``kernel.lower_plan``), one module per
  part of the nest (loops, merges, level walks, outputs, workspaces, epilogues, storage-major
  row sums).

Nothing here imports a backend (Numba, CUDA); see docs/kernels.md and docs/architecture.md.
"""

"""A kernel plan lowered to loop-IR functions (``kernel.lower_plan``): the lowering context,
the loop nest, merges, level walks, output and workspace strategies, epilogues and the
storage-major row sums of banded and blocked operands. Decides nothing: reads the plan."""

"""The loop IR every backend prints (``loop_ir``) and the constructors that build and fold
its expressions, with the lowering state (``build``). Imports nothing else of compile/."""

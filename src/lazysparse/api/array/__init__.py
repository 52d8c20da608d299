"""The LazyArray and its lifecycle: nodes, operands, materialization, held values, memo, display."""

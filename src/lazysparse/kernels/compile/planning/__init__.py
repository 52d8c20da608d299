"""Everything decided about one query before any loop IR exists: its analysis, co-iteration,
kernel plan, output strategy, parallel loop, parameters, operand order, structured inputs,
runner facts and the decisions record. Imports the loop IR, never lowering."""

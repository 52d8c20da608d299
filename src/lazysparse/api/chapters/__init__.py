"""The namespace's chapters: one module per part of the Array API (creation, manipulation, linear
algebra, statistics, ...) and the public compute/explain."""

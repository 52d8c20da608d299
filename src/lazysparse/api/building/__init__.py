"""Plan building at the LazyArray level: elementwise maps, casts, reductions and views as Finch-
Logic plans."""

"""The Numba backend: loop IR printed as Python modules compiled by Numba (``codegen``), the
jitted helpers they call (``support``, operator helpers in ``ops``), the CPU host that runs
their chunks on threads (``cpu_host``, ``chunked_append``) and drops stored fills from their
results (``fill_compaction``), and the memory and disk caches (``cache``, ``cache_store``)."""

"""The benchmark, a module per section: `python -m lab.bench [--quick] [--SECTION ...]`.

A plain run prints training episodes per second of every algorithm on a fixed configuration, the
engine's own limit (uniform-random games per second played in batches by the compiled kernel)
measured in the same process, and how much faster a 16-run sweep goes on 2 Ray workers than on 1
(lab.bench.throughput); then every section below but the cluster's. A section's flag runs it
alone. Compilation and start-up are excluded: each measurement warms up first.
"""

"""The similarity graph over embeddings and single-linkage clustering (tiles, int8 screen, incremental
updates): shared by the store (persisted edges), the abstraction engine and the graph domain."""

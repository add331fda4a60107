//! Mapping of API models to mirror rows (one function per document kind).

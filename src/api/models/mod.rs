//! Serde models of every resource of the interface specification.

//! Contract suite.

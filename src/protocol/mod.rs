//! Typed structured protocol messages (filled in by the protocol work).

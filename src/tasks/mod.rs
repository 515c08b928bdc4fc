//! The shared task list (filled in by the task work).

//! One integration-test binary; modules are listed here.

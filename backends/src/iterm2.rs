//! iTerm2 stub

//! WT stub

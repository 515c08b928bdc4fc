//! The member colour palette, in Claude Code's assignment order.
//!
//! The lead takes `red` in memory only (it is not written to the roster);
//! teammates get `blue`, `green`, `yellow`, … round-robin.

/// Palette names in assignment order.
pub const PALETTE: [&str; 8] = [
    "red", "blue", "green", "yellow", "purple", "orange", "pink", "cyan",
];

/// The colour for the `n`-th teammate (0-based, the lead not counted).
pub fn for_teammate(n: usize) -> &'static str {
    PALETTE[(n + 1) % PALETTE.len()]
}

/// Whether `name` is a palette colour.
pub fn is_palette(name: &str) -> bool {
    PALETTE.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teammates_start_at_blue_and_wrap() {
        assert_eq!(for_teammate(0), "blue");
        assert_eq!(for_teammate(2), "yellow");
        assert_eq!(for_teammate(7), "red");
        assert_eq!(for_teammate(8), "blue");
        assert!(is_palette("cyan") && !is_palette("mauve"));
    }
}

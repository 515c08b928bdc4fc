//! Recognises the terminal status queries a program writes to its terminal
//! and that a real terminal would answer: DSR cursor position (`ESC[6n`),
//! DSR status (`ESC[5n`) and primary device attributes (`ESC[c`, `ESC[0c`).
//! A query may arrive split across reads, so the scanner keeps its state.

/// A query that needs an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// `ESC[6n`: answer `ESC[row;colR` (1-based).
    CursorPosition,
    /// `ESC[5n`: answer `ESC[0n` ("OK").
    Status,
    /// `ESC[c` / `ESC[0c`: answer `ESC[?1;2c` (VT100 with advanced video).
    DeviceAttributes,
}

impl Query {
    /// The answer bytes; `cursor` is the 0-based (row, col) at the query.
    pub fn answer(self, cursor: (u16, u16)) -> Vec<u8> {
        match self {
            Self::CursorPosition => format!("\x1b[{};{}R", cursor.0 + 1, cursor.1 + 1).into_bytes(),
            Self::Status => b"\x1b[0n".to_vec(),
            Self::DeviceAttributes => b"\x1b[?1;2c".to_vec(),
        }
    }
}

#[derive(Clone, Debug, Default)]
enum State {
    #[default]
    Ground,
    Escape,
    Csi(Vec<u8>),
}

/// A streaming scanner for [`Query`]s.
#[derive(Clone, Debug, Default)]
pub struct QueryScanner {
    state: State,
}

impl QueryScanner {
    /// Feeds bytes; returns each query with the offset just past its last byte.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<(usize, Query)> {
        let mut found = Vec::new();
        for (i, &b) in bytes.iter().enumerate() {
            self.state = match std::mem::take(&mut self.state) {
                State::Ground | State::Escape if b == 0x1b => State::Escape,
                State::Ground => State::Ground,
                State::Escape if b == b'[' => State::Csi(Vec::new()),
                State::Escape => State::Ground,
                State::Csi(_) if b == 0x1b => State::Escape,
                State::Csi(mut params) if (0x20..=0x3f).contains(&b) => {
                    if params.len() < 16 {
                        params.push(b);
                    }
                    State::Csi(params)
                }
                State::Csi(params) if (0x40..=0x7e).contains(&b) => {
                    let query = match (params.as_slice(), b) {
                        (b"6", b'n') => Some(Query::CursorPosition),
                        (b"5", b'n') => Some(Query::Status),
                        (b"" | b"0", b'c') => Some(Query::DeviceAttributes),
                        _ => None,
                    };
                    if let Some(q) = query {
                        found.push((i + 1, q));
                    }
                    State::Ground
                }
                State::Csi(_) => State::Ground,
            };
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_queries_with_their_end_offsets() {
        let mut s = QueryScanner::default();
        assert_eq!(
            s.feed(b"ab\x1b[6nc\x1b[c\x1b[0c\x1b[5n"),
            vec![
                (6, Query::CursorPosition),
                (10, Query::DeviceAttributes),
                (14, Query::DeviceAttributes),
                (18, Query::Status)
            ]
        );
    }

    #[test]
    fn a_query_split_across_reads_is_found() {
        let mut s = QueryScanner::default();
        assert!(s.feed(b"x\x1b").is_empty());
        assert!(s.feed(b"[").is_empty());
        assert_eq!(s.feed(b"6n"), vec![(2, Query::CursorPosition)]);
    }

    #[test]
    fn other_sequences_are_not_queries() {
        let mut s = QueryScanner::default();
        assert!(
            s.feed(b"\x1b[31m\x1b[2J\x1b[?25l\x1b[>c\x1b[16n\x1b[6;1H")
                .is_empty()
        );
    }

    #[test]
    fn answers() {
        assert_eq!(Query::CursorPosition.answer((0, 4)), b"\x1b[1;5R");
        assert_eq!(Query::DeviceAttributes.answer((0, 0)), b"\x1b[?1;2c");
        assert_eq!(Query::Status.answer((3, 3)), b"\x1b[0n");
    }
}

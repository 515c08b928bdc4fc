//! Errors dropped on purpose: [`ignore`] logs what was being done at
//! `debug` and drops the error, so that a `Result` not handled says why it
//! may fail quietly, in place of a bare `let _ =` or `.ok()`. A leaf: the
//! file, lock and logging layers below everything else use it too. (The
//! backends crate, below this one, drops its errors with `let _ =` and a
//! comment.)

/// A deliberate ignore: `result`'s error changes nothing for the caller
/// (a clean-up that may find nothing to clean, a line to a stderr that is
/// gone), so it is logged at `debug` with what was being done, and dropped.
/// Use it for any `Result` dropped on purpose, so each says why it may
/// fail quietly.
pub fn ignore<T, E: std::fmt::Display>(result: Result<T, E>, doing: &str) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::debug!(error = %e, "ignored: {doing}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ignore;
    use crate::atomic_file::remove_if_there;

    #[test]
    fn an_ignored_error_is_dropped_and_a_missing_file_is_no_error() {
        assert_eq!(ignore(Ok::<_, String>(3), "counting"), Some(3));
        assert_eq!(ignore(Err::<u8, _>("gone"), "counting"), None);
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        remove_if_there(&f).unwrap();
        std::fs::write(&f, b"").unwrap();
        remove_if_there(&f).unwrap();
        assert!(!f.exists());
        // A directory is there and is not a file to remove: an error.
        assert!(remove_if_there(d.path()).is_err());
    }
}

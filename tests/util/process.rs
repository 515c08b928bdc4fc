//! Is a process there? The liveness checks every test asks, written once.
//! Self-contained (std and libc), so the backend contract suite includes
//! this file too: `#[path = "../../tests/util/process.rs"] mod process;`.

/// True while any process is in process group `pgid`.
pub fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 sends nothing; it only checks that the group exists.
    unsafe { libc::kill(-(pgid as i32), 0) == 0 }
}

/// True while process `pid` runs: it exists and is not a zombie (a killed
/// process whose parent has not reaped it yet is dead for every purpose).
pub fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|st| {
            !st.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

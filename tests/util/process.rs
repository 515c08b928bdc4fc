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

/// What `/proc` says about process `pid` and the other members of its
/// process group (pid, state, command line), for failure messages.
pub fn describe(pid: u32) -> String {
    let line = |p: u32| -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        let (_, rest) = stat.rsplit_once(')')?;
        let f: Vec<&str> = rest.split_whitespace().collect();
        let cmd = std::fs::read(format!("/proc/{p}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        Some(format!(
            "pid {p} state {} ppid {} pgid {}: {}",
            f.first().unwrap_or(&"?"),
            f.get(1).unwrap_or(&"?"),
            f.get(2).unwrap_or(&"?"),
            cmd.trim_end()
        ))
    };
    let mut s = line(pid).unwrap_or_else(|| format!("pid {pid}: gone"));
    let ppid = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|st| {
            st.rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        });
    if let Some(parent) = ppid.and_then(line) {
        s.push_str(&format!("\n  its parent: {parent}"));
    }
    let members: Vec<String> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| p != pid)
        .filter_map(line)
        .filter(|l| l.contains(&format!(" pgid {pid}:")))
        .collect();
    for m in members {
        s.push_str(&format!("\n  in its group: {m}"));
    }
    s
}

//! The state root under hostile conditions: a full disk, links and open
//! permissions planted inside it, a holder suspended while it holds a lock,
//! a huge inbox. Each test is named after the failure it pins.

use crate::util::Sandbox;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A small tmpfs mounted for one test (needs the privilege to mount; where
/// there is none the test says SKIP, or fails if `SWARM_REQUIRE_MOUNT=1`).
/// Unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str, test: &str) -> Option<Tmpfs> {
        let dir = tempfile::Builder::new()
            .prefix("swarm-tmpfs-")
            .tempdir()
            .expect("tempdir");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={size},mode=0700"))
            .arg("tmpfs")
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { dir }),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_owned(),
                    Err(e) => e.to_string(),
                };
                if std::env::var_os("SWARM_REQUIRE_MOUNT").is_some_and(|v| v == "1") {
                    panic!("{test}: cannot mount a tmpfs: {why}");
                }
                eprintln!("SKIP {test}: cannot mount a tmpfs ({why})");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the filesystem: a file grown until the disk refuses more.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let p = self.path().join("filler");
        let mut f = std::fs::File::create(&p).expect("create filler");
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        p
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Every `*.lock` directory under `dir`.
fn lock_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if p.extension().is_some_and(|x| x == "lock") {
                    out.push(p.clone());
                }
                todo.push(p);
            }
        }
    }
    out
}

#[test]
fn a_full_disk_leaves_no_lock_directory_and_no_half_created_team() {
    let Some(fs) = Tmpfs::mount("256k", "a_full_disk_leaves_no_lock_directory") else {
        return;
    };
    let s = Sandbox::new();
    let root = fs.path().join("root");
    let swarm = |args: &[&str]| {
        let mut c = s.cmd(args);
        c.env("SWARM_HOME", &root);
        crate::util::Run::of(c, args)
    };
    swarm(&["team", "create", "full"]).assert_code(0);
    swarm(&["send", "--team", "full", "--to", "team-lead", "before"]).assert_code(0);
    let filler = fs.fill();

    for attempt in ["first", "second"] {
        let start = Instant::now();
        let r = swarm(&["send", "--team", "full", "--to", "team-lead", attempt]);
        r.assert_code(2);
        assert!(
            r.stderr.contains("No space left"),
            "the error says why\n{}",
            r.explain()
        );
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the {attempt} send on a full disk took {:?}: it waited for a lock \
             directory an earlier failure left",
            start.elapsed()
        );
        assert_eq!(
            lock_dirs(&root),
            Vec::<PathBuf>::new(),
            "after the {attempt} send"
        );
    }
    let r = swarm(&["team", "create", "never"]);
    r.assert_code(2);
    for gone in ["teams/never", "tasks/never"] {
        assert!(
            !root.join(gone).exists(),
            "{gone} outlived a failed creation"
        );
    }
    assert_eq!(lock_dirs(&root), Vec::<PathBuf>::new());

    std::fs::remove_file(filler).unwrap();
    let start = Instant::now();
    swarm(&["send", "--team", "full", "--to", "team-lead", "after"]).assert_code(0);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let inbox = std::fs::read(root.join("teams/full/inboxes/team-lead.json")).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&inbox).unwrap();
    let texts: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["before", "after"]);
}

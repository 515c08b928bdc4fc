//! "Another machine" for the host tests (DESIGN §13): a private OpenSSH
//! server on 127.0.0.1 with its own host key, config and port, key-only
//! authentication with a key made for the test, run in the foreground
//! (`sshd -D -e`) as the test's child and stopped by its pid. The user's
//! sshd, keys and `~/.ssh` are never read or touched.
//!
//! The client side is what swarm meets on a user's machine: "the ssh on
//! PATH". [`Sshd::path`] puts a directory first on PATH whose `ssh` is the
//! real one with `-F <this server's client config>` (the host alias, the
//! test's key, its own known_hosts), so swarm's own argv is exercised
//! exactly as it is.
//!
//! Without sshd (or ssh, ssh-keygen) the tests that need it skip with a
//! note, unless `SWARM_REQUIRE_SSHD=1` (as `.ci/run` sets), where they fail.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A private sshd; stopped when dropped.
pub struct Sshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    /// The host alias the client config names (`ssh ALIAS` reaches it).
    pub alias: String,
    child: Option<Child>,
    sshd: PathBuf,
}

/// A program by name on PATH or in the sbin directories.
fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Whether a missing sshd fails the test instead of skipping it.
pub fn sshd_required() -> bool {
    std::env::var_os("SWARM_REQUIRE_SSHD").is_some_and(|v| v == "1")
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run a setup program");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Sshd {
    /// Starts one, or `None` (with a note on stderr) when this machine has
    /// no sshd and none is required.
    pub fn start() -> Option<Sshd> {
        let (Some(sshd), Some(ssh), Some(keygen)) = (find("sshd"), find("ssh"), find("ssh-keygen"))
        else {
            assert!(
                !sshd_required(),
                "SWARM_REQUIRE_SSHD=1 but sshd, ssh or ssh-keygen is missing \
                 (apt-get install openssh-server openssh-client)"
            );
            eprintln!("note: no sshd here; skipping (SWARM_REQUIRE_SSHD=1 makes this fail)");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("swarm-sshd-")
            .tempdir()
            .expect("tempdir");
        let d = dir.path();
        for key in ["host_key", "id_test"] {
            run(Command::new(&keygen)
                .args(["-q", "-t", "ed25519", "-N", "", "-C", "swarm-test", "-f"])
                .arg(d.join(key)));
        }
        std::fs::copy(d.join("id_test.pub"), d.join("authorized_keys")).unwrap();
        // A port no one holds now (sshd binds it a moment later).
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let user = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(whoami);
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {pid}\n\
                 AuthorizedKeysFile {ak}\nPubkeyAuthentication yes\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                 PermitRootLogin prohibit-password\nAllowUsers {user}\nLogLevel ERROR\n\
                 ClientAliveInterval 5\nClientAliveCountMax 2\n",
                hk = d.join("host_key").display(),
                pid = d.join("sshd.pid").display(),
                ak = d.join("authorized_keys").display(),
            ),
        )
        .unwrap();
        let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
        let host_pub: Vec<&str> = host_pub.split_whitespace().take(2).collect();
        std::fs::write(
            d.join("known_hosts"),
            format!("[127.0.0.1]:{port} {}\n", host_pub.join(" ")),
        )
        .unwrap();
        let alias = "swarm-test-box".to_string();
        std::fs::write(
            d.join("ssh_config"),
            format!(
                "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  \
                 IdentityFile {id}\n  IdentitiesOnly yes\n  UserKnownHostsFile {kh}\n  \
                 GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n",
                id = d.join("id_test").display(),
                kh = d.join("known_hosts").display(),
            ),
        )
        .unwrap();
        let bin = d.join("bin");
        std::fs::create_dir(&bin).unwrap();
        let wrapper = bin.join("ssh");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nprintf '%s %s\\n' \"${{SSH_CALLER:--}}\" \"$*\" >> '{}'\nexec {} -F {} \"$@\"\n",
                d.join("ssh-calls.log").display(),
                ssh.display(),
                d.join("ssh_config").display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Privilege separation wants this directory when sshd runs as root.
        if unsafe { libc::geteuid() } == 0 {
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let mut s = Sshd {
            dir,
            port,
            alias,
            child: None,
            sshd,
        };
        s.start_again();
        Some(s)
    }

    /// (Re)starts the server on the same port, and waits until it greets.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "sshd is already running");
        let d = self.dir.path();
        let child = Command::new(&self.sshd)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(d.join("sshd.log")).unwrap())
            .spawn()
            .expect("start sshd");
        self.child = Some(child);
        let deadline = Instant::now() + super::WAIT;
        loop {
            if let Ok(s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let mut banner = [0u8; 4];
                s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                if std::io::Read::read_exact(&mut &s, &mut banner).is_ok() && &banner == b"SSH-" {
                    return;
                }
            }
            if let Some(Ok(Some(st))) = self.child.as_mut().map(Child::try_wait) {
                panic!("sshd exited ({st}) at start: {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "sshd did not greet on port {} in time: {}",
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server (SIGTERM by its pid, then reaps it). Sessions it
    /// already forked live on until their connection ends.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let _ = c.wait();
        }
    }

    /// A network partition, as far as one machine can play one: the server
    /// stops taking connections and every connection it holds is cut (its
    /// per-connection processes killed), so a shared ssh connection to it
    /// ends too. What runs "there" (a tmux server, its panes) runs on.
    pub fn partition(&mut self) {
        if let Some(pid) = self.pid() {
            for child in children_of(pid) {
                unsafe { libc::kill(child as i32, libc::SIGKILL) };
            }
        }
        self.stop();
    }

    /// The server's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A PATH whose `ssh` reaches this server by [`Sshd::alias`], the rest
    /// of the test's PATH after it.
    pub fn path(&self) -> std::ffi::OsString {
        let mut dirs = vec![self.dir.path().join("bin")];
        dirs.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        std::env::join_paths(dirs).unwrap()
    }

    /// What sshd wrote on stderr.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The pids whose parent is `pid` (from /proc).
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|p| {
                    std::fs::read_to_string(format!("/proc/{p}/stat"))
                        .ok()
                        .and_then(|s| {
                            let rest = s.rsplit_once(')')?.1.to_string();
                            rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                        })
                        == Some(pid)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn whoami() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A TCP port that accepts connections and never says a word: a host
/// behind a network partition, as ssh meets it. Kept open while the
/// returned listener lives (connections are accepted by the kernel's
/// backlog; nothing reads them).
pub fn silent_port() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

/// The directory the team root is "mounted" at on the other machine: a
/// different path than locally (a symlink to it), as an NFS mount would be.
pub fn remote_view(of: &Path, at: &Path) -> PathBuf {
    std::os::unix::fs::symlink(of, at).unwrap();
    at.to_path_buf()
}

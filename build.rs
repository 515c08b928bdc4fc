//! Links GCC's unwinder into `swarm` statically on Linux with glibc.
//!
//! On `*-linux-gnu` the standard library links `libgcc_s.so.1` for
//! unwinding. Loading it is about 0.2 ms of every process's start (one
//! more shared object to find, map and relocate, and its constructor
//! `__cpu_indicator_init`, whose `cpuid` instructions trap to the
//! hypervisor on a virtual machine): `swarm send --to nobody x`, which
//! exits at once, took 1.48 ms with it and 1.28 ms without (`perf stat -r
//! 300`, 2-core VM). A team starts a `swarm` process per message sent, per
//! pane and per hook, so the start is on the path from a send to the work
//! (issue 25).
//!
//! The same unwinder is in GCC's static `libgcc_eh.a`, which is what GCC
//! itself links for `-static-libgcc`; but rustc names `-lgcc_s` on the
//! linker's command line, which that flag does not change. So the link
//! search path gets a directory, searched before the system's, holding one
//! file: `libgcc_s.a`, a link to `libgcc_eh.a`. The linker takes it for
//! `-lgcc_s` (in each directory it looks for the `.so`, then the `.a`),
//! and the binary needs `libc.so.6` and `libm.so.6` only.
//!
//! Nothing changes where that is not clearly right: another OS or C
//! library, a cross build (the host's C compiler would name the host's
//! archive), or a C compiler that names no `libgcc_eh.a` (clang with
//! compiler-rt, say). glibc's own use of `libgcc_s` (thread cancellation,
//! which swarm does not use) loads it at run time, as before.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("TARGET") != var("HOST")
    {
        return;
    }
    let Some(archive) = libgcc_eh() else {
        println!(
            "cargo:warning=no libgcc_eh.a from the C compiler: swarm links libgcc_s.so.1 (about 0.2 ms more per process start)"
        );
        return;
    };
    let dir = PathBuf::from(var("OUT_DIR")).join("static-libgcc");
    let link = dir.join("libgcc_s.a");
    match link_to(&archive, &dir, &link) {
        Ok(()) => println!("cargo:rustc-link-search=native={}", dir.display()),
        Err(e) => println!(
            "cargo:warning=could not link {} to {}: {e}; swarm links libgcc_s.so.1",
            link.display(),
            archive.display()
        ),
    }
}

/// `link`, in `dir`, a symbolic link to `archive` (made again).
#[cfg(unix)]
fn link_to(archive: &Path, dir: &Path, link: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    match std::fs::remove_file(link) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::os::unix::fs::symlink(archive, link)
}

/// A Linux target is built on a Linux host here (the target is the host).
#[cfg(not(unix))]
fn link_to(_: &Path, _: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other("not a Unix host"))
}

/// The C compiler's `libgcc_eh.a`, when it names one that exists.
fn libgcc_eh() -> Option<PathBuf> {
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let out = std::process::Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    // A compiler that does not know the file prints its name back.
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (out.status.success() && path.is_absolute() && path.is_file()).then_some(path)
}

//! Records the git commit the binary was built from as `EMOTIONBENCH_COMMIT` (the report's
//! provenance names it). Without git or outside a repository (a source tarball) it is
//! "unknown": the build never fails for it.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn main() {
    // Only the commit: whether the tree had uncommitted changes would go stale (editing a
    // source file rebuilds the crate without rerunning this script).
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=EMOTIONBENCH_COMMIT={commit}");
    // Rebuild when HEAD moves (a commit, a checkout) or the branch it names does.
    // (Only paths that exist: cargo reruns the script on every build for a missing one.)
    let mut watch = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watch.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for path in watch {
        if let Some(p) = git(&["rev-parse", "--git-path", &path])
            && std::path::Path::new(&p).exists()
        {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    // `store::db` embeds the migrations at compile time (`embed_migrations!`); without this a
    // new migration directory is not in the next build (seen: a benchmark ran without its index).
    println!("cargo:rerun-if-changed=migrations");
}

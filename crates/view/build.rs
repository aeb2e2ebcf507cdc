//! Builds the page from `web/` (TypeScript, bundled by esbuild) into OUT_DIR/web, where
//! `src/assets.rs` embeds it. Without Node.js the binary still builds and serves a page
//! that says how to get the real one, so the rest of Kairos never depends on Node.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let web = manifest.join("../../web");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("web");
    for f in [
        "src",
        "index.html",
        "style.css",
        "build.mjs",
        "package.json",
        "package-lock.json",
    ] {
        println!("cargo:rerun-if-changed={}", web.join(f).display());
    }
    println!("cargo:rerun-if-env-changed=KAIROS_SKIP_WEB");
    std::fs::create_dir_all(&out).expect("OUT_DIR is writable");
    if std::env::var_os("KAIROS_SKIP_WEB").is_some() {
        fallback(&out, "KAIROS_SKIP_WEB was set when Kairos was built");
        return;
    }
    match build(&web, &out) {
        Ok(()) => {}
        Err(why) => {
            println!("cargo:warning=the web page was not built ({why}); `kairos view` will serve a page saying so");
            fallback(&out, &why);
        }
    }
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{shown} failed with {s}")),
        Err(e) => Err(format!("{shown} could not start: {e}")),
    }
}

fn build(web: &Path, out: &Path) -> Result<(), String> {
    if !web.join("node_modules/esbuild").exists() {
        run(Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(web))?;
    }
    run(Command::new("node")
        .arg("build.mjs")
        .arg(out)
        .current_dir(web))?;
    for f in ["index.html", "app.js", "style.css"] {
        if !out.join(f).exists() {
            return Err(format!("build.mjs did not write {f}"));
        }
    }
    Ok(())
}

fn fallback(out: &Path, why: &str) {
    let why = why.replace('&', "&amp;").replace('<', "&lt;");
    let html = format!(
        "<!doctype html><meta charset=utf-8><title>Kairos</title><link rel=stylesheet href=style.css>\
         <p class=error>This Kairos was built without its web page ({why}). Install Node.js 20 or later and npm, \
         then rebuild with <code>cargo build --release</code>. The API under <code>api/</code> works.</p>"
    );
    let _ = std::fs::write(out.join("index.html"), html);
    let _ = std::fs::write(out.join("app.js"), "");
    let _ = std::fs::write(out.join("style.css"), ".error{color:#b00}");
}

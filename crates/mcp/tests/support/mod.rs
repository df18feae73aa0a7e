//! What the tests of the MCP client share: the test server binary.

use std::path::PathBuf;
use std::sync::OnceLock;

/// Builds the test server once per test binary (a no-op when it is up to date).
pub fn test_server() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        // target/<profile>/deps/this-test → target/<profile>
        let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = std::process::Command::new(cargo);
        build.args(["build", "--quiet", "-p", "mcp-test-server"]);
        if release {
            build.arg("--release");
        }
        let target_dir = profile_dir.parent().unwrap();
        let status = build.env("CARGO_TARGET_DIR", target_dir).status().unwrap();
        assert!(status.success(), "building mcp-test-server failed");
        profile_dir.join("mcp-test-server")
    })
    .clone()
}

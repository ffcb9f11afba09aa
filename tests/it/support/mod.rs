//! What the integration tests share, in one place: the app under test (`app`), fixtures and
//! made-up files (`files`), waiting on conditions (`wait`), and here ports, names, Python and child processes.

mod app;
mod events;
mod files;
pub(crate) mod pipeline;
mod serve;
mod wait;

pub(crate) use app::*;
pub(crate) use events::*;
pub(crate) use files::*;
pub(crate) use serve::*;
pub(crate) use wait::*;

/// A name no other test uses: `prefix-` and 12 hex digits (a queue or a container).
pub(crate) fn unique_name(prefix: &str) -> String {
    format!(
        "{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// A child process killed when the test ends, passed or not.
pub(crate) struct KillOnDrop(pub std::process::Child);

impl KillOnDrop {
    pub(crate) fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `command` to its end, which must succeed (its standard error says why not); its output.
pub(crate) fn succeeds(command: &mut std::process::Command) -> std::process::Output {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A free port on the loopback interface.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The test venv's Python (`scripts/azurite.sh python`), or `TESSERA_TEST_PYTHON`.
pub(crate) fn python() -> std::path::PathBuf {
    let path = std::env::var_os("TESSERA_TEST_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/venv/bin/python")
        });
    assert!(
        path.exists(),
        "no Python at {}: run scripts/test.sh, or scripts/azurite.sh python (or set TESSERA_TEST_PYTHON)",
        path.display()
    );
    path
}

/// Serializes the tests that run the pipeline's queues on Azurite: they share the queues.
pub(crate) fn azurite_lock() -> &'static tokio::sync::Mutex<()> {
    static LOCK: std::sync::OnceLock<tokio::sync::Mutex<()>> = std::sync::OnceLock::new();
    LOCK.get_or_init(|| tokio::sync::Mutex::new(()))
}

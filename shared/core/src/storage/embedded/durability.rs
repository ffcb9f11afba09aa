//! How durable the embedded backend's writes are.

/// What an acknowledged write survives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// The death of the process (SIGKILL included): data is handed to the operating system
    /// before the call returns. The default.
    #[default]
    ProcessCrash,
    /// A power cut or kernel crash as well: data is fsynced before the call returns.
    PowerLoss,
}

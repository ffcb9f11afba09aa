//! A shutdown signal that any number of tasks can wait on.

use tokio::sync::watch;

/// Fires the signal; dropping it without firing leaves the signal unfired.
#[derive(Debug)]
pub struct ShutdownTrigger {
    tx: watch::Sender<bool>,
}

/// Observes the signal; cheap to clone.
#[derive(Debug, Clone)]
pub struct Shutdown {
    rx: watch::Receiver<bool>,
}

/// A new, unfired signal and the trigger that fires it.
pub fn channel() -> (ShutdownTrigger, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (ShutdownTrigger { tx }, Shutdown { rx })
}

impl ShutdownTrigger {
    pub fn fire(&self) {
        self.tx.send_replace(true);
    }

    pub fn signal(&self) -> Shutdown {
        Shutdown {
            rx: self.tx.subscribe(),
        }
    }
}

impl Shutdown {
    /// A signal that never fires.
    pub fn never() -> Self {
        // With its sender gone the signal can no longer fire.
        let (_, rx) = watch::channel(false);
        Shutdown { rx }
    }

    pub fn is_fired(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves once the signal has fired (at once if it already has).
    pub async fn fired(&self) {
        let mut rx = self.rx.clone();
        // An error means the trigger is gone without firing: then it never fires.
        if rx.wait_for(|fired| *fired).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

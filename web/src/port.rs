//! Binding a role's TCP port so that roles share a machine with their defaults: a port given
//! explicitly (flag, file or environment) fails loudly when it is taken; the default port falls
//! back to a free one, and the port taken is logged.

use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, TcpListener};

use anyhow::Context as _;

/// Binds `bind:port` for `what` (e.g. "the ops endpoint"). Unless `fixed`, a taken `port`
/// gives way to one the system picks.
pub fn bind_port(what: &str, bind: &str, port: u16, fixed: bool) -> anyhow::Result<TcpListener> {
    match TcpListener::bind((bind, port)) {
        Ok(listener) => Ok(listener),
        Err(e) if !fixed && port != 0 && e.kind() == ErrorKind::AddrInUse => {
            let listener = TcpListener::bind((bind, 0))
                .with_context(|| format!("binding {what} on {bind} (any port)"))?;
            tracing::warn!(
                "{what}: the default port {port} is taken (another role on this machine?); \
                 listening on {} instead",
                listener.local_addr()?.port()
            );
            Ok(listener)
        }
        Err(e) => Err(e).with_context(|| {
            format!("binding {what} on {bind}:{port} (the port was set explicitly; choose another)")
        }),
    }
}

/// The URL other processes reach a listener at `addr` on: its own address, or `advertised`
/// where it listens on every interface.
pub fn reachable_url(addr: SocketAddr, advertised: IpAddr) -> String {
    let ip = if addr.ip().is_unspecified() {
        advertised
    } else {
        addr.ip()
    };
    format!("http://{}", SocketAddr::new(ip, addr.port()))
}

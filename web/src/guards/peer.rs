//! Whether the client of a connection is still there. A handler that works long after the body
//! arrived (a library import) asks as it goes, and stops when nobody waits for its answer.

use std::any::Any;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use actix_web::HttpRequest;
use actix_web::dev::Extensions;

/// A duplicate of a connection's socket, to look at (never to read or write).
#[derive(Clone)]
pub struct PeerSocket(Arc<OwnedFd>);

/// Keeps each plain TCP connection's socket in its extensions (`HttpServer::on_connect`).
pub fn remember(connection: &dyn Any, extensions: &mut Extensions) {
    if let Some(tcp) = connection.downcast_ref::<actix_web::rt::net::TcpStream>()
        && let Ok(fd) = tcp.as_fd().try_clone_to_owned()
    {
        extensions.insert(PeerSocket(Arc::new(fd)));
    }
}

impl PeerSocket {
    /// The socket of the connection `req` came on, where it is known.
    pub fn of(req: &HttpRequest) -> Option<PeerSocket> {
        req.conn_data::<PeerSocket>().cloned()
    }

    /// Whether the peer has closed its side or the connection broke (without waiting).
    pub fn gone(&self) -> bool {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let mut fds = [PollFd::new(&*self.0, PollFlags::RDHUP)];
        let now = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        match poll(&mut fds, Some(&now)) {
            Ok(0) | Err(_) => false,
            Ok(_) => fds[0]
                .revents()
                .intersects(PollFlags::RDHUP | PollFlags::HUP | PollFlags::ERR),
        }
    }
}

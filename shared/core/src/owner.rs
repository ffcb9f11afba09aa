//! Who owns what a request makes: the operator, a named API key, or a client.

use serde::{Deserialize, Serialize};

/// Who a library (or a job made with a key) belongs to: the operator (imported on the command line, or over HTTP with the
/// operator's key), a named API key, or a client. A client is kept as a digest of its id, never
/// the id itself: the id is the client's credential, and the owner is shown to others.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
#[schema(example = "operator")]
pub struct Owner(String);

impl Owner {
    const OPERATOR: &'static str = "operator";

    pub fn operator() -> Self {
        Owner(Self::OPERATOR.to_string())
    }

    /// The holder of the named API key `name`.
    pub fn key(name: &str) -> Self {
        Owner(format!("key:{name}"))
    }

    /// A client, by its id (a browser's cookie or `X-Client-Id`).
    pub fn client(id: uuid::Uuid) -> Self {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(id.as_bytes());
        let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        Owner(format!("client:{hex}"))
    }

    /// A client as [`Owner::client`] writes it (`client:` and 24 hex digits), read back from
    /// what a view showed (a filter's `guest`); anything else is none.
    pub fn parse_client(text: &str) -> Option<Self> {
        let hex = text.strip_prefix("client:")?;
        (hex.len() == 24
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        .then(|| Owner(text.to_string()))
    }

    pub fn is_operator(&self) -> bool {
        self.0 == Self::OPERATOR
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Owner {
    /// Libraries recorded before owners were kept are the operator's.
    fn default() -> Self {
        Owner::operator()
    }
}

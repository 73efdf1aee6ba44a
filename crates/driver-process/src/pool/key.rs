//! Which place in the pool a process takes: the [`PoolKey`] a pool is generic over, and the
//! key of a CLI's resident process, [`ConversationKey`].

use runtime_env::CredentialNamespace;

/// Which place in a [`ProcessPool`](super::ProcessPool) a process takes. The key says *which*
/// place; the exact [`ProcessSignature`](driver_spi::ProcessSignature) a process was launched
/// with says *whether* the idle process there still fits a checkout.
///
/// Any cloneable, comparable, sendable type is a key: a CLI's resident process is keyed by
/// its [`ConversationKey`], a worker that serves a whole credential namespace by its
/// [`CredentialNamespace`]. The pool never formats a key (it needs no `Debug`), so a key may
/// hold provider text, such as a conversation id.
pub trait PoolKey: Clone + Eq + Send + 'static {}

impl<T: Clone + Eq + Send + 'static> PoolKey for T {}

/// The place of a CLI's resident process: one conversation (the session id the CLI named) in
/// one credential namespace. A driver's pool serves its one namespace; the namespace stays in
/// the key so that equal ids from two namespaces never meet in one pool.
///
/// Its `Debug` shows the namespace and leaves out the conversation id, which comes from the
/// provider.
///
/// ```
/// use driver_process::pool::ConversationKey;
///
/// let key = ConversationKey::new("user:alice".parse()?, "thread-1");
/// assert_eq!(key, ConversationKey::new("user:alice".parse()?, "thread-1"));
/// assert_ne!(key, ConversationKey::new("user:bob".parse()?, "thread-1"));
/// assert!(!format!("{key:?}").contains("thread-1"));
/// # Ok::<(), runtime_env::InvalidName>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ConversationKey {
    namespace: CredentialNamespace,
    conversation: String,
}

impl ConversationKey {
    /// The place of `conversation` in `namespace`.
    pub fn new(namespace: CredentialNamespace, conversation: impl Into<String>) -> Self {
        Self {
            namespace,
            conversation: conversation.into(),
        }
    }
}

impl std::fmt::Debug for ConversationKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationKey")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

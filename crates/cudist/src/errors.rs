//! What the one reporting layer needs to know of an error: whether it is the input's fault
//! (exit code 3) and a hint for well-known failures. The judgements are cudist-analysis's
//! ([`cudist_analysis::error`]), applied to an `anyhow` cause chain.

use cudist_analysis::error::BadInput;

/// An error that says the input is bad (exit code 3).
pub fn input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(message.into()))
}

/// Context that marks an error as the input's fault: a path given on the command line that does
/// not exist or is not what the command reads (exit code 3, with the cause kept in the chain).
pub trait InputContext<T> {
    /// Adds `message` as context and makes the error a bad input.
    fn input_context(self, message: impl FnOnce() -> String) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> InputContext<T> for Result<T, E> {
    fn input_context(self, message: impl FnOnce() -> String) -> anyhow::Result<T> {
        self.map_err(|e| e.into().context(BadInput(message())))
    }
}

/// Whether an error comes from a bad input (exit code 3) rather than from cudist or the machine
/// (exit code 1).
pub fn is_bad_input(e: &anyhow::Error) -> bool {
    // A BadInput given as context (`input_context`) is found by downcasting the error itself.
    e.downcast_ref::<BadInput>().is_some() || cudist_analysis::error::is_bad_input(e.chain())
}

/// A hint for well-known failure kinds, found anywhere in the cause chain.
pub fn hint(e: &anyhow::Error) -> Option<&'static str> {
    cudist_analysis::error::hint(e.chain())
}

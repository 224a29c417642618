//! The chatroom benchmark 1.0.1: client and server, wire-compatible with chat_c and chat_s.

use anyhow::Result;

/// Arguments of `schedlab chat-server`.
#[derive(clap::Args, Debug)]
pub struct ServerArgs {}

/// Arguments of `schedlab chat-client`.
#[derive(clap::Args, Debug)]
pub struct ClientArgs {}

pub fn server_main(_args: ServerArgs) -> Result<()> {
    anyhow::bail!("`schedlab chat-server` is not built yet")
}

pub fn client_main(_args: ClientArgs) -> Result<()> {
    anyhow::bail!("`schedlab chat-client` is not built yet")
}

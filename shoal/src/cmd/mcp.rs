//! `shoal mcp`: the Model Context Protocol server over standard input and output, for an AI
//! assistant (the tools are the `shoal-mcp` crate's; docs/mcp.md).

use crate::cli::McpArgs;
use crate::{Exit, Failure};
use shoal_mcp::McpError;
use tokio_util::sync::CancellationToken;

/// Serves the database until the client ends the session or `shutdown` is cancelled.
///
/// # Errors
/// No database at the path (3), one that cannot be read (4), a session that cannot start (1).
pub async fn run(args: &McpArgs, shutdown: CancellationToken) -> Result<Exit, Failure> {
    match shoal_mcp::serve_stdio(&args.db, shutdown).await {
        Ok(()) => Ok(Exit::Ok),
        Err(McpError::Db(e)) => Err(Failure::database(e)),
        Err(e @ McpError::NoDatabase { .. }) => Err(Failure::input(e)),
        Err(e) => Err(Failure::internal(e)),
    }
}

//! The built-in sandbox: a real HTTP server implementing the eight operations over a generated world.

"""`swarmdeck demo`: a self-contained scene (state, Claude Code sessions, caged jobs, a loopback
peer) in one temporary folder, shown by the real app and removed without a trace on quit."""

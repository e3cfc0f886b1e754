"""The engine-agnostic worker runtime: tasks, routing, acking, timeouts, transfer."""

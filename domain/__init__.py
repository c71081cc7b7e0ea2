"""Pure model of runcode-policy: specs, policy, decisions, egress rules (no I/O, no clock)."""

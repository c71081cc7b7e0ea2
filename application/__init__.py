"""The eventsourcing application of runcode-policy: commands, evaluation, read models, queries."""

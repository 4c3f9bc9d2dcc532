"""The μGraph search (SPEC §7)."""

"""The fault matrix (issue 21): every command against bad inputs and a hostile environment (docs: reference/faults)."""

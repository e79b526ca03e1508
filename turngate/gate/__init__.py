"""Running a gate as a library: plan, execute, confirm, conclude; the Python API."""

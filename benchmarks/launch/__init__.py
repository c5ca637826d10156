"""From a launch request to a run the worker may start: the rules a launch keeps (launch_rules),
the runner's plan made of the rows (plans), what it will cost (estimates), and a capacity plan's
check run (capacity_checks)."""

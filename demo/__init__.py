"""`make demo`: the whole dashboard on this machine with a real engine and a first sweep."""

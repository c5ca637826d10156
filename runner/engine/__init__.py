"""Starting, probing and stopping vLLM: the command, the guard process, the endpoint's
credentials, the CPU build used in tests, the tiny test model and the host's provenance.
"""

"""`python -m runner`: the command line's parser and its commands, without the dashboard."""

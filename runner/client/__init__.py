"""The load generator: schedules requests, sends them over HTTP from worker processes, and
records every reply and whether the client itself kept up.
"""

"""The result schema: the pydantic models a plan is read into and a measured point is written as.

Everything the runner writes, and everything the dashboard stores, goes through these models, so
a result file is validated when it is read; docs/result-schema.md documents every field.
"""

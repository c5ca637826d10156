"""The data and the worker, a folder per job: the models with their querysets (models/), what a
launch keeps and becomes (launch/), a run's points stored and read back (storage/), secrets and
outbound requests (security/), and the Celery tasks that call the runner (worker/). The app label
stays `benchmarks`."""

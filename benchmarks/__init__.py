"""The data and the worker: models with their querysets, storage, the run lifecycle, the launch
rules and the Celery tasks that call the runner. The app label stays `benchmarks`."""

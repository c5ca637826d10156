"""What runs on a node's Celery worker: the tasks (tasks), the state changes of a run's row
(lifecycle), the threads that write a long task's heartbeat and progress (beats), and an
uploaded file's import with its CPU-time bound (import_jobs, cpu_limit)."""

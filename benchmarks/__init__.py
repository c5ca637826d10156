"""The Django app: persists and presents what the runner returns. Analysis lives in
benchmarks/analysis/ (pure functions, no Django)."""

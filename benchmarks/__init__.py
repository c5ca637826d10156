"""The Django app: persists and presents what the runner returns. Every figure and sentence a
page shows comes from the judgement package (judgement.judge)."""
